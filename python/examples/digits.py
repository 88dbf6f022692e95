"""The classic digits MLP (64 → 128 → 64 → 10, ReLU, Adam, cross entropy, 15 epochs over the
8×8 digits, 80/20 split, standardized features), written as a PyTorch script with its imports
changed to anygrad; the same work as the Rust example ``examples/digits.rs``.

    python python/examples/digits.py [--epochs 15] [--device cpu]
"""

import argparse
import time

import numpy as np

import anygrad as torch
import anygrad.nn as nn
import anygrad.optim as optim
from anygrad.utils.data import DataLoader, TensorDataset
from anygrad.vision.datasets import load_digits


class MLP(nn.Module):
    """64 → 128 → 64 → 10 with ReLU."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        """Class scores."""
        return self.layers(x)


def main(argv=None):
    """Train and evaluate; returns the final test accuracy in percent."""
    parser = argparse.ArgumentParser(description="anygrad digits MLP")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--device", default=None, help="cpu, gpu, cuda:0, ... (default: cuda when available)")
    args = parser.parse_args(argv)

    device = torch.device(args.device if args.device else ("cuda" if torch.cuda.is_available() else "cpu"))
    print(f"device: {device}", flush=True)
    torch.manual_seed(0)

    X, y = load_digits(return_X_y=True)
    order = np.random.RandomState(42).permutation(len(X))
    split = int(len(X) * 0.8)
    train_idx, test_idx = order[:split], order[split:]
    mean, std = X[train_idx].mean(0), X[train_idx].std(0) + 1e-8
    X = (X - mean) / std
    X_train = torch.tensor(X[train_idx], dtype=torch.float32, device=device)
    y_train = torch.tensor(y[train_idx], device=device)
    X_test = torch.tensor(X[test_idx], dtype=torch.float32, device=device)
    y_test = torch.tensor(y[test_idx], device=device)
    train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=256)

    model = MLP().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        model.train()
        total, batches = 0.0, 0
        for inputs, labels in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        seconds = time.perf_counter() - start
        model.eval()
        correct = 0
        with torch.no_grad():
            for inputs, labels in test_loader:
                correct += (model(inputs).argmax(1) == labels).sum().item()
        accuracy = 100.0 * correct / len(test_idx)
        print(f"epoch {epoch:2d}: loss {total / batches:.4f}, test accuracy {accuracy:.2f}% ({seconds * 1000:.0f} ms)", flush=True)
    return accuracy


if __name__ == "__main__":
    main()
