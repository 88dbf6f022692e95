"""A siamese network with contrastive loss (Hadsell et al.): one CNN embeds both images of a
pair, F.pairwise_distance compares them, and pairs of the same class are pulled together;
evaluated by thresholding the distance. Synthetic 'digits': a class-specific stroke pattern
with random shifts and noise."""
import os
import random

import anygrad as torch                    # was: import torch
import anygrad.nn as nn                    # was: import torch.nn as nn
import anygrad.nn.functional as F          # was: import torch.nn.functional as F
from anygrad.utils.data import Dataset, DataLoader   # was: from torch.utils.data import ...
from anygrad.optim.lr_scheduler import StepLR

device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
torch.manual_seed(0)
random.seed(0)

CLASSES = 5
templates = (torch.rand(CLASSES, 1, 20, 20) > 0.7).float()


def render(label):
    dy, dx = random.randint(-2, 2), random.randint(-2, 2)
    image = torch.zeros(1, 24, 24)
    image[:, 2 + dy:22 + dy, 2 + dx:22 + dx] = templates[label]
    return image + 0.2 * torch.randn(1, 24, 24)


class SiameseDataset(Dataset):
    def __init__(self, size, seed):
        rng = random.Random(seed)
        self.pairs = []
        for _ in range(size):
            a = rng.randrange(CLASSES)
            same = rng.random() < 0.5
            b = a if same else (a + rng.randrange(1, CLASSES)) % CLASSES
            self.pairs.append((a, b))

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        a, b = self.pairs[idx]
        # label 0: same class, 1: different (the convention of the contrastive loss below)
        return render(a), render(b), torch.tensor([int(a != b)], dtype=torch.float32)


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.cnn1 = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=5, stride=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, stride=2),
            nn.Conv2d(16, 32, kernel_size=3, stride=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2, stride=2),
        )
        self.fc1 = nn.Sequential(
            nn.Linear(32 * 4 * 4, 128),
            nn.ReLU(inplace=True),
            nn.Linear(128, 16),
        )

    def forward_once(self, x):
        output = self.cnn1(x)
        output = output.view(output.size()[0], -1)
        output = self.fc1(output)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        return output1, output2


class ContrastiveLoss(torch.nn.Module):
    def __init__(self, margin=2.0):
        super(ContrastiveLoss, self).__init__()
        self.margin = margin

    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean((1 - label) * torch.pow(euclidean_distance, 2) +
                                      (label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2))
        return loss_contrastive


train_loader = DataLoader(SiameseDataset(768, 1), shuffle=True, batch_size=64)
test_loader = DataLoader(SiameseDataset(256, 2), shuffle=False, batch_size=128)

net = SiameseNetwork().to(device)
criterion = ContrastiveLoss()
optimizer = torch.optim.Adam(net.parameters(), lr=0.0005)
scheduler = StepLR(optimizer, step_size=2, gamma=0.5)

counter, loss_history = [], []
iteration_number = 0
for epoch in range(4):
    net.train()
    for i, (img0, img1, label) in enumerate(train_loader, 0):
        img0, img1, label = img0.to(device), img1.to(device), label.to(device)
        optimizer.zero_grad()
        output1, output2 = net(img0, img1)
        loss_contrastive = criterion(output1, output2, label)
        loss_contrastive.backward()
        optimizer.step()
        if i % 5 == 0:
            iteration_number += 5
            counter.append(iteration_number)
            loss_history.append(loss_contrastive.item())
    scheduler.step()
    print(f"Epoch number {epoch}\n Current loss {loss_contrastive.item():.4f}")

net.eval()
correct = total = 0
with torch.no_grad():
    for img0, img1, label in test_loader:
        output1, output2 = net(img0.to(device), img1.to(device))
        distance = F.pairwise_distance(output1, output2)
        predicted = (distance > 1.0).float()
        correct += (predicted == label.to(device).squeeze(1)).sum().item()
        total += label.size(0)
accuracy = correct / total
print(f"Pair accuracy: {100 * accuracy:.1f}% ({correct}/{total})")
assert accuracy > 0.9, accuracy
