"""A 1-D CNN for time-series classification, as in ECG/sensor scripts: Conv1d + BatchNorm1d +
ReLU + MaxPool1d blocks, a global AdaptiveMaxPool1d with return_indices (to report where each
channel fired), Dropout, class-weighted CrossEntropyLoss on imbalanced classes, a
WeightedRandomSampler, AdamW under OneCycleLR stepped per batch, gradient accumulation over two
batches, mixed precision with autocast and GradScaler when on a GPU, early stopping on the
validation loss with a deep-copied best state dict, and a confusion matrix built with bincount."""
import copy
import os

import numpy as np
import anygrad as torch                               # was: import torch
import anygrad.nn as nn                               # was: import torch.nn as nn
import anygrad.nn.functional as F                     # was: import torch.nn.functional as F
from anygrad.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
use_amp = device.type == "cuda"
torch.manual_seed(0)
np.random.seed(0)

NUM_CLASSES, LENGTH = 3, 128


def make_signals(count):
    # class 0: noise; class 1: a sine burst; class 2: a spike train; imbalanced 6:3:1
    labels = np.random.choice(NUM_CLASSES, size=count, p=[0.6, 0.3, 0.1])
    t = np.arange(LENGTH)
    signals = np.random.randn(count, 2, LENGTH).astype(np.float32) * 0.5
    for i, label in enumerate(labels):
        start = np.random.randint(0, LENGTH - 32)
        if label == 1:
            signals[i, 0, start:start + 32] += 2 * np.sin(t[:32] * 0.8)
        elif label == 2:
            signals[i, 1, start:start + 32:8] += 4.0
    return torch.from_numpy(signals), torch.from_numpy(labels).long()


class SignalNet(nn.Module):
    def __init__(self, in_channels=2, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(in_channels, 16, kernel_size=7, padding=3),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(16, 32, kernel_size=5, padding=2),
            nn.BatchNorm1d(32),
            nn.ReLU(),
            nn.MaxPool1d(2),
        )
        self.pool = nn.AdaptiveMaxPool1d(1, return_indices=True)
        self.classifier = nn.Sequential(nn.Dropout(0.3), nn.Linear(32, num_classes))

    def forward(self, x):
        features = self.features(x)
        pooled, where = self.pool(features)
        self.last_positions = where.squeeze(-1)
        return self.classifier(pooled.squeeze(-1))


train_x, train_y = make_signals(600)
val_x, val_y = make_signals(200)
class_counts = torch.bincount(train_y, minlength=NUM_CLASSES).float()
class_weights = class_counts.sum() / (NUM_CLASSES * class_counts)
sample_weights = class_weights[train_y]
sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights), replacement=True)
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=32, sampler=sampler, drop_last=True)
val_loader = DataLoader(TensorDataset(val_x, val_y), batch_size=100)

model = SignalNet().to(device)
criterion = nn.CrossEntropyLoss(weight=class_weights.to(device), label_smoothing=0.05)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
epochs, accumulation = 8, 2
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, epochs=epochs, steps_per_epoch=len(train_loader) // accumulation)
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)

best_loss, best_state, patience, bad_epochs = float("inf"), None, 3, 0
for epoch in range(epochs):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    for step, (x, y) in enumerate(train_loader):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device_type=device.type, enabled=use_amp):
            loss = criterion(model(x), y) / accumulation
        scaler.scale(loss).backward()
        if (step + 1) % accumulation == 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()

    model.eval()
    val_loss, confusion = 0.0, torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long)
    with torch.no_grad():
        for x, y in val_loader:
            logits = model(x.to(device))
            val_loss += F.cross_entropy(logits, y.to(device), reduction="sum").item()
            pred = logits.argmax(dim=1).cpu()
            confusion += torch.bincount(y * NUM_CLASSES + pred, minlength=NUM_CLASSES ** 2).view(NUM_CLASSES, NUM_CLASSES)
    val_loss /= len(val_loader.dataset)
    recall = confusion.diag().float() / confusion.sum(1).clamp(min=1).float()
    print(f"epoch {epoch + 1}: val loss {val_loss:.4f}, per-class recall {[round(r, 3) for r in recall.tolist()]}, lr {scheduler.get_last_lr()[0]:.5f}")
    if val_loss < best_loss - 1e-4:
        best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
    else:
        bad_epochs += 1
        if bad_epochs >= patience:
            print("early stopping")
            break

model.load_state_dict(best_state)
model.eval()
with torch.no_grad():
    logits = model(val_x.to(device))
    accuracy = (logits.argmax(1).cpu() == val_y).float().mean().item()
    positions = model.last_positions
print(f"best val loss {best_loss:.4f}, accuracy {accuracy:.3f}")
print("confusion matrix:\n", confusion.numpy())
assert positions.shape == (200, 32) and positions.dtype == torch.int64
assert 0 <= positions.min().item() and positions.max().item() < LENGTH // 4
assert accuracy > 0.9, accuracy
