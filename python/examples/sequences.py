"""Sequence models as a PyTorch user writes them, with only the imports changed: an ``nn.LSTM``
that predicts the next value of noisy sine waves, and an ``nn.TransformerEncoder`` that tells
whether a sequence of numbers is sorted, each trained with Adam under ``OneCycleLR``.

    python python/examples/sequences.py [--steps 200] [--device cpu]
"""

import argparse
import math
import time

import anygrad as torch
import anygrad.nn as nn
import anygrad.optim as optim


class NextValue(nn.Module):
    """An LSTM over the sequence, a linear read-out of each step's hidden state."""

    def __init__(self, hidden=32):
        super().__init__()
        self.lstm = nn.LSTM(1, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)


class SortedOrNot(nn.Module):
    """Values embedded with their positions, two encoder layers, mean-pooled, two classes."""

    def __init__(self, length, width=32):
        super().__init__()
        self.embed = nn.Linear(1, width)
        self.position = nn.Parameter(torch.randn(1, length, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.classify = nn.Linear(width, 2)

    def forward(self, x):
        h = self.encoder(self.embed(x) + self.position)
        return self.classify(h.mean(1))


def sine_batch(batch, length, device):
    """Sine waves of random phase and frequency with noise; targets are the next values."""
    phase = torch.rand(batch, 1) * 2 * math.pi
    frequency = 0.1 + torch.rand(batch, 1) * 0.2
    t = torch.arange(length + 1).float().unsqueeze(0)
    wave = (phase + frequency * t).sin() + 0.05 * torch.randn(batch, length + 1)
    wave = wave.unsqueeze(-1).to(device)
    return wave[:, :-1], wave[:, 1:]


def sorted_batch(batch, length, device):
    """Half the sequences sorted ascending, half shuffled; label 1 for sorted."""
    values = torch.rand(batch, length)
    labels = (torch.rand(batch) < 0.5).long()
    ordered, _ = values.sort(dim=1)
    values = torch.where(labels.bool().unsqueeze(1), ordered, values)
    return values.unsqueeze(-1).to(device), labels.to(device)


def train(model, make_batch, loss_of, steps, lr, device, name):
    optimizer = optim.Adam(model.parameters(), lr=lr)
    schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    first = last = None
    start = time.time()
    for step in range(steps):
        inputs, targets = make_batch(device)
        loss = loss_of(model(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step == 0:
            first = loss.item()
    last = loss.item()
    print(f"{name}: loss {first:.4f} -> {last:.4f} in {steps} steps ({time.time() - start:.1f} s)")
    return first, last


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    device = torch.device(args.device)
    print(f"device: {device}")
    lstm = NextValue().to(device)
    lstm_losses = train(lstm, lambda d: sine_batch(32, 40, d), nn.functional.mse_loss, args.steps, 0.01, device, "LSTM next value")
    transformer = SortedOrNot(12).to(device)
    transformer_losses = train(transformer, lambda d: sorted_batch(64, 12, d), nn.functional.cross_entropy, args.steps, 0.003, device, "Transformer sorted-or-not")
    with torch.no_grad():
        inputs, labels = sorted_batch(512, 12, device)
        accuracy = (transformer(inputs).argmax(1) == labels).float().mean().item()
    print(f"Transformer sorted-or-not: accuracy {accuracy:.3f} on 512 new sequences")
    return lstm_losses, transformer_losses, accuracy


if __name__ == "__main__":
    main()
