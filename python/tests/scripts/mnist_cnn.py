"""PyTorch's classic MNIST CNN (two convolutions, dropout, Adadelta + StepLR, log_softmax +
nll_loss) on synthetic 28x28 digits: each class is a bright bar at its own place, plus noise."""
import argparse
import os

import anygrad as torch                      # was: import torch
import anygrad.nn as nn                      # was: import torch.nn as nn
import anygrad.nn.functional as F            # was: import torch.nn.functional as F
import anygrad.optim as optim                # was: import torch.optim as optim
from anygrad.optim.lr_scheduler import StepLR
from anygrad.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
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
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return correct / len(test_loader.dataset)


def synthetic_digits(count, generator):
    labels = torch.randint(0, 10, (count,), generator=generator)
    images = torch.rand(count, 1, 28, 28, generator=generator) * 0.3
    for i, label in enumerate(labels.tolist()):
        row = 2 + 2 * label
        images[i, 0, row:row + 3, 4:24] += 0.7
    images = (images - 0.1307) / 0.3081
    return images, labels


def main():
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--test-batch-size', type=int, default=200)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--lr', type=float, default=1.0)
    parser.add_argument('--gamma', type=float, default=0.7)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--log-interval', type=int, default=4)
    parser.add_argument('--train-size', type=int, default=512)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))

    generator = torch.Generator().manual_seed(0)
    train_x, train_y = synthetic_digits(args.train_size, generator)
    test_x, test_y = synthetic_digits(200, generator)
    train_kwargs = {'batch_size': args.batch_size, 'shuffle': True}
    test_kwargs = {'batch_size': args.test_batch_size}
    if device.type == 'cuda':
        train_kwargs.update({'num_workers': 1, 'pin_memory': True})
    train_loader = DataLoader(TensorDataset(train_x, train_y), **train_kwargs)
    test_loader = DataLoader(TensorDataset(test_x, test_y), **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        accuracy = test(model, device, test_loader)
        scheduler.step()

    torch.save(model.state_dict(), "mnist_cnn.pt")
    assert accuracy > 0.9, accuracy
    print(f"lr now {scheduler.get_last_lr()[0]:.3f}")


if __name__ == '__main__':
    main()
