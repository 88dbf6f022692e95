"""The quickstart-style training loop around a custom data pipeline: Dataset subclasses (one
reading samples from .npy files on disk with a transform, one wrapping another with an index
list), DataLoader with num_workers=2, a custom collate_fn producing a dict batch, random_split,
device selection with torch.cuda.is_available(), nn.Sequential with nn.Flatten, a checkpoint dict
with model and optimizer state saved with torch.save and resumed with torch.load into fresh
objects, model.eval() + torch.no_grad() evaluation, accuracy as (pred.argmax(1) == y).sum().item()
and the quickstart's f-string progress lines."""
import os
import tempfile

import numpy as np
import anygrad as torch                                          # was: import torch
from anygrad import nn                                           # was: from torch import nn
from anygrad.utils.data import Dataset, DataLoader, random_split  # was: from torch.utils.data import ...

device = (
    "cuda"
    if torch.cuda.is_available()
    else "mps"
    if torch.backends.mps.is_available()
    else "cpu"
)
device = os.environ.get("DEVICE", device)
print(f"Using {device} device")


class NpyFolder(Dataset):
    """One .npy file per sample (an 8x8 image) and a labels.csv, as a custom image dataset."""

    def __init__(self, root, transform=None, target_transform=None):
        self.root = root
        with open(os.path.join(root, "labels.csv")) as f:
            self.img_labels = [line.strip().split(",") for line in f if line.strip()]
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.img_labels)

    def __getitem__(self, idx):
        name, label = self.img_labels[idx]
        image = np.load(os.path.join(self.root, name))
        label = int(label)
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


def to_tensor(image):
    return torch.from_numpy(image).float().unsqueeze(0) / 255.0


def write_dataset(root, count, rng):
    os.makedirs(root, exist_ok=True)
    prototypes = np.random.RandomState(7).randint(0, 256, size=(4, 8, 8))
    lines = []
    for i in range(count):
        label = rng.randint(4)
        image = np.clip(prototypes[label] + rng.normal(0, 60, size=(8, 8)), 0, 255).astype(np.uint8)
        np.save(os.path.join(root, f"{i:04d}.npy"), image)
        lines.append(f"{i:04d}.npy,{label}")
    with open(os.path.join(root, "labels.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def collate(batch):
    images = torch.stack([image for image, _ in batch])
    labels = torch.tensor([label for _, label in batch])
    return {"image": images, "label": labels, "size": len(batch)}


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(8 * 8, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 4),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    for batch, sample in enumerate(dataloader):
        X, y = sample["image"].to(device), sample["label"].to(device)

        # Compute prediction error
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 4 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for sample in dataloader:
            X, y = sample["image"].to(device), sample["label"].to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return correct


if __name__ == "__main__":
    torch.manual_seed(0)
    root = tempfile.mkdtemp()
    write_dataset(root, 600, np.random.RandomState(0))
    full = NpyFolder(root, transform=to_tensor)
    training_data, test_data = random_split(full, [480, 120], generator=torch.Generator().manual_seed(42))

    train_dataloader = DataLoader(training_data, batch_size=32, shuffle=True, num_workers=2, collate_fn=collate)
    test_dataloader = DataLoader(test_data, batch_size=64, num_workers=2, collate_fn=collate)

    for sample in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {sample['image'].shape}")
        print(f"Shape of y: {sample['label'].shape} {sample['label'].dtype}")
        break

    model = NeuralNetwork().to(device)
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1, momentum=0.9)

    epochs = 3
    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer)
        test(test_dataloader, model, loss_fn)

    # Checkpoint, then resume into fresh objects.
    PATH = os.path.join(root, "checkpoint.pt")
    torch.save({
        'epoch': epochs,
        'model_state_dict': model.state_dict(),
        'optimizer_state_dict': optimizer.state_dict(),
        'loss': 0.0,
    }, PATH)

    model = NeuralNetwork().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-1, momentum=0.9)
    checkpoint = torch.load(PATH, weights_only=True)
    model.load_state_dict(checkpoint['model_state_dict'])
    optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
    epoch = checkpoint['epoch']
    for t in range(epoch, epoch + 2):
        print(f"Epoch {t+1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer)
        accuracy = test(test_dataloader, model, loss_fn)
    print("Done!")

    classes = ["zero", "one", "two", "three"]
    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    assert accuracy > 0.9, accuracy
