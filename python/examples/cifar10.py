"""CIFAR-10 with the small CNN of PyTorch's tutorial "Training a classifier" (two
convolutions with max pooling, three linear layers, SGD with momentum, cross-entropy), with
only the imports changed to anygrad: it shows a batch with ``make_grid``, trains, saves and
reloads the state dict, and reports the accuracy overall and per class.

    python python/examples/cifar10.py --data ./data            # root/cifar-10-batches-py/
    python python/examples/cifar10.py --data ./data --epochs 2 --device cpu

The data folder is torchvision's: ``root/cifar-10-batches-py/`` with the extracted Python
batches (``data_batch_1`` … ``data_batch_5``, ``test_batch``, ``batches.meta``); anygrad
downloads nothing. ``--limit-train N`` / ``--limit-test N`` use the first N images.
"""

import argparse
import os
import tempfile
import time

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
import anygrad.optim as optim
import anygrad.vision as torchvision
import anygrad.vision.transforms as transforms
from anygrad.utils.data import DataLoader, Subset

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class Net(nn.Module):
    """The tutorial's CNN for 3×32×32 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def evaluate(net, loader, device):
    """Accuracy overall (percent) and per class (correct, total)."""
    correct_pred = {name: 0 for name in CLASSES}
    total_pred = {name: 0 for name in CLASSES}
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            _, predictions = torch.max(net(images), 1)
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[CLASSES[label]] += 1
                total_pred[CLASSES[label]] += 1
    total = sum(total_pred.values())
    return 100.0 * sum(correct_pred.values()) / max(total, 1), correct_pred, total_pred


def main(argv=None):
    parser = argparse.ArgumentParser(description="CIFAR-10 classifier (PyTorch's tutorial) on anygrad")
    parser.add_argument("--data", default="./data", help="root holding cifar-10-batches-py/")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.001)
    parser.add_argument("--limit-train", type=int, default=None)
    parser.add_argument("--limit-test", type=int, default=None)
    parser.add_argument("--log-interval", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    print(f"device: {device}")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    trainset = torchvision.datasets.CIFAR10(root=args.data, train=True, download=True, transform=transform)
    testset = torchvision.datasets.CIFAR10(root=args.data, train=False, download=True, transform=transform)
    if args.limit_train:
        trainset = Subset(trainset, range(min(args.limit_train, len(trainset))))
    if args.limit_test:
        testset = Subset(testset, range(min(args.limit_test, len(testset))))
    trainloader = DataLoader(trainset, batch_size=args.batch_size, shuffle=True, num_workers=2)
    testloader = DataLoader(testset, batch_size=args.batch_size, shuffle=False, num_workers=2)

    images, labels = next(iter(trainloader))
    grid = torchvision.utils.make_grid(images / 2 + 0.5)
    print(f"first batch: {' '.join(f'{CLASSES[labels[j]]:5s}' for j in range(len(labels)))} "
          f"(grid {tuple(grid.shape)})")

    net = Net().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        started, running_loss = time.time(), 0.0
        for i, (inputs, labels) in enumerate(trainloader, 0):
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if i % args.log_interval == args.log_interval - 1:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / args.log_interval:.3f}")
                running_loss = 0.0
        print(f"epoch {epoch + 1}: {time.time() - started:.1f} s")

    path = os.path.join(tempfile.mkdtemp(), "cifar_net.pth")
    torch.save(net.state_dict(), path)
    reloaded = Net()
    reloaded.load_state_dict(torch.load(path, weights_only=True))
    reloaded.to(device)
    accuracy, correct_pred, total_pred = evaluate(reloaded, testloader, device)
    print(f"Accuracy of the network on the {sum(total_pred.values())} test images: {accuracy:.1f} %")
    for name, correct in correct_pred.items():
        if total_pred[name]:
            print(f"Accuracy for class: {name:5s} is {100.0 * correct / total_pred[name]:.1f} %")
    return accuracy


if __name__ == "__main__":
    main()
