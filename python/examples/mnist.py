"""MNIST with a small CNN, written as PyTorch's classic example (``pytorch/examples``
``mnist/main.py``: two convolutions, dropout, Adadelta, StepLR, ``log_softmax`` +
``nll_loss``), with only the imports changed to anygrad.

    python python/examples/mnist.py                      # MNIST from ../shared/data/mnist
    python python/examples/mnist.py --data /path/to/mnist --epochs 2 --device cpu

The data folder holds the four IDX files (plain or gzipped), either directly or in
torchvision's layout (``root/MNIST/raw/``). ``--limit-train N`` / ``--limit-test N`` run on the
first N images (the quick check the tests use).
"""

import argparse
import os
import time

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
import anygrad.optim as optim
from anygrad.optim.lr_scheduler import StepLR
from anygrad.utils.data import DataLoader, Subset
from anygrad.vision import datasets, transforms

REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Net(nn.Module):
    """The classic MNIST CNN."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        """Log-probabilities of the ten digits."""
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    """One epoch of training."""
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(
                "Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                    epoch, batch_idx * len(data), len(train_loader.dataset),
                    100.0 * batch_idx / len(train_loader), loss.item(),
                ),
                flush=True,
            )


def test(model, device, test_loader):
    """Average loss and accuracy on the test set; returns the accuracy in percent."""
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    accuracy = 100.0 * correct / len(test_loader.dataset)
    print(
        "\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.2f}%)\n".format(
            test_loss, correct, len(test_loader.dataset), accuracy
        ),
        flush=True,
    )
    return accuracy


def main(argv=None):
    """Parse the options, train and test."""
    parser = argparse.ArgumentParser(description="anygrad MNIST example")
    parser.add_argument("--data", default=os.path.join(REPOSITORY, "..", "shared", "data", "mnist"), help="folder with the MNIST IDX files")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--device", default=None, help="cpu, gpu, cuda:0, ... (default: cuda when available)")
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=100)
    parser.add_argument("--limit-train", type=int, default=None, help="train on the first N images")
    parser.add_argument("--limit-test", type=int, default=None, help="test on the first N images")
    args = parser.parse_args(argv)

    use_cuda = not args.no_cuda and torch.cuda.is_available()
    torch.manual_seed(args.seed)
    device = torch.device(args.device if args.device else ("cuda" if use_cuda else "cpu"))
    name = torch.cuda.get_device_name(device.index or 0) if device.type != "cpu" else "CPU"
    print(f"device: {device} ({name})", flush=True)

    train_kwargs = {"batch_size": args.batch_size, "shuffle": True}
    test_kwargs = {"batch_size": args.test_batch_size}
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    dataset1 = datasets.MNIST(args.data, train=True, download=True, transform=transform)
    dataset2 = datasets.MNIST(args.data, train=False, transform=transform)
    if args.limit_train:
        dataset1 = Subset(dataset1, range(min(args.limit_train, len(dataset1))))
    if args.limit_test:
        dataset2 = Subset(dataset2, range(min(args.limit_test, len(dataset2))))
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        train(args, model, device, train_loader, optimizer, epoch)
        seconds = time.perf_counter() - start
        accuracy = test(model, device, test_loader)
        print(f"epoch {epoch}: {seconds:.1f} s of training, test accuracy {accuracy:.2f}%", flush=True)
        scheduler.step()
    return accuracy


if __name__ == "__main__":
    main()
