"""A small 3-D U-Net-style segmenter, as in medical-imaging scripts: Conv3d + BatchNorm3d +
ReLU blocks, MaxPool3d down, ConvTranspose3d up, a skip connection by torch.cat, an
AvgPool3d-smoothed auxiliary input, BCEWithLogitsLoss plus a soft Dice loss, SGD with
momentum under CyclicLR (stepped per batch), then Adam under a ChainedScheduler of ConstantLR
and ExponentialLR; evaluated by Dice on new volumes. Data: 16^3 noisy volumes holding a ball
whose voxels are the target."""
import os

import anygrad as torch                    # was: import torch
import anygrad.nn as nn                    # was: import torch.nn as nn
import anygrad.nn.functional as F          # was: import torch.nn.functional as F
from anygrad.optim.lr_scheduler import CyclicLR, ChainedScheduler, ConstantLR, ExponentialLR
from anygrad.utils.data import DataLoader, TensorDataset

device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
torch.manual_seed(3)


def make_volumes(count, size=16):
    grid = torch.arange(size).float()
    z, y, x = torch.meshgrid(grid, grid, grid, indexing="ij")
    centres = torch.rand(count, 3) * (size - 8) + 4
    radii = torch.rand(count) * 2 + 2.5
    distance = ((z[None] - centres[:, 0, None, None, None]) ** 2
                + (y[None] - centres[:, 1, None, None, None]) ** 2
                + (x[None] - centres[:, 2, None, None, None]) ** 2).sqrt()
    masks = (distance < radii[:, None, None, None]).float()
    volumes = masks * 1.0 + 0.6 * torch.randn(count, size, size, size)
    return volumes.unsqueeze(1), masks.unsqueeze(1)


def block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm3d(out_channels),
        nn.ReLU(inplace=True),
    )


class UNet3d(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.smooth = nn.AvgPool3d(kernel_size=3, stride=1, padding=1)
        self.enc1 = block(2, channels)
        self.pool = nn.MaxPool3d(2)
        self.enc2 = block(channels, channels * 2)
        self.up = nn.ConvTranspose3d(channels * 2, channels, kernel_size=2, stride=2)
        self.dec1 = block(channels * 2, channels)
        self.head = nn.Conv3d(channels, 1, kernel_size=1)

    def forward(self, x):
        x = torch.cat([x, self.smooth(x)], dim=1)
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        d1 = self.dec1(torch.cat([self.up(e2), e1], dim=1))
        return self.head(d1)


def dice_loss(logits, target, eps=1.0):
    probs = torch.sigmoid(logits)
    dims = (1, 2, 3, 4)
    intersection = (probs * target).sum(dims)
    union = probs.sum(dims) + target.sum(dims)
    return 1 - ((2 * intersection + eps) / (union + eps)).mean()


def dice_score(logits, target):
    pred = (logits > 0).float()
    return (2 * (pred * target).sum() / (pred.sum() + target.sum()).clamp(min=1)).item()


train_x, train_y = make_volumes(48)
test_x, test_y = make_volumes(16)
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=8, shuffle=True)

model = UNet3d().to(device)
bce = nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scheduler = CyclicLR(optimizer, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="triangular2")
lrs = []
for epoch in range(4):
    model.train()
    for volume, mask in loader:
        volume, mask = volume.to(device), mask.to(device)
        optimizer.zero_grad()
        logits = model(volume)
        loss = bce(logits, mask) + dice_loss(logits, mask)
        loss.backward()
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    print(f"epoch {epoch}: loss {loss.item():.4f} lr {lrs[-1]:.4f}")

optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = ChainedScheduler([ConstantLR(optimizer, factor=0.5, total_iters=2), ExponentialLR(optimizer, gamma=0.9)])
for epoch in range(3):
    model.train()
    for volume, mask in loader:
        volume, mask = volume.to(device), mask.to(device)
        optimizer.zero_grad()
        logits = model(volume)
        loss = bce(logits, mask) + dice_loss(logits, mask)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(f"fine-tune epoch {epoch}: loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.5f}")

model.eval()
with torch.no_grad():
    score = dice_score(model(test_x.to(device)), test_y.to(device))
print(f"test Dice {score:.3f}")
assert max(lrs) <= 0.1 + 1e-9 and min(lrs) >= 0.01 - 1e-9
assert score > 0.8, score
