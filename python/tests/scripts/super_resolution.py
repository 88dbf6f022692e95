"""PyTorch's super_resolution example (ESPCN: convolutions then PixelShuffle, orthogonal init
with calculate_gain('relu'), Adam, MSE, PSNR = 10 log10(1 / mse)) on synthetic smooth images
downscaled by average pooling."""
from __future__ import print_function
import argparse
import os
from math import log10

import anygrad as torch                    # was: import torch
import anygrad.nn as nn                    # was: import torch.nn as nn
import anygrad.nn.init as init             # was: import torch.nn.init as init
import anygrad.nn.functional as F
import anygrad.optim as optim              # was: import torch.optim as optim
from anygrad.utils.data import DataLoader, Dataset


class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 32, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(32, 32, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(32, 16, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(16, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


class SmoothImages(Dataset):
    """Sums of a few random sinusoids, as [1, 32, 32] targets and their 3x downscaled inputs."""

    def __init__(self, count, upscale_factor, seed):
        g = torch.Generator().manual_seed(seed)
        size = 11 * upscale_factor
        ys = torch.linspace(0, 1, size).view(1, -1, 1)
        xs = torch.linspace(0, 1, size).view(1, 1, -1)
        freq = torch.rand(count, 3, 2, generator=g) * 6
        phase = torch.rand(count, 3, generator=g) * 6.28
        waves = torch.sin(freq[:, :, 0, None, None] * ys * 3.14 + freq[:, :, 1, None, None] * xs * 3.14 + phase[:, :, None, None])
        self.targets = (waves.mean(1, keepdim=True) * 0.5 + 0.5).clamp(0, 1)
        self.inputs = F.avg_pool2d(self.targets, upscale_factor)

    def __len__(self):
        return self.targets.shape[0]

    def __getitem__(self, index):
        return self.inputs[index], self.targets[index]


parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
parser.add_argument('--upscale_factor', type=int, default=3)
parser.add_argument('--batchSize', type=int, default=16)
parser.add_argument('--testBatchSize', type=int, default=32)
parser.add_argument('--nEpochs', type=int, default=12)
parser.add_argument('--lr', type=float, default=0.003)
parser.add_argument('--seed', type=int, default=123)
opt = parser.parse_args()
print(opt)

torch.manual_seed(opt.seed)
device = torch.device(os.environ.get("DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))

print('===> Loading datasets')
training_data_loader = DataLoader(dataset=SmoothImages(256, opt.upscale_factor, 1), num_workers=2, batch_size=opt.batchSize, shuffle=True)
testing_data_loader = DataLoader(dataset=SmoothImages(64, opt.upscale_factor, 2), num_workers=2, batch_size=opt.testBatchSize, shuffle=False)

print('===> Building model')
model = Net(upscale_factor=opt.upscale_factor).to(device)
criterion = nn.MSELoss()

optimizer = optim.Adam(model.parameters(), lr=opt.lr)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)

            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
    return avg_psnr / len(testing_data_loader)


def checkpoint(epoch):
    model_out_path = "model_epoch_{}.pth".format(epoch)
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))


for epoch in range(1, opt.nEpochs + 1):
    train(epoch)
    psnr = test()
    checkpoint(epoch)

# Nearest-neighbour upscaling of the inputs, for comparison.
dataset = testing_data_loader.dataset
nearest = F.interpolate(dataset.inputs, scale_factor=opt.upscale_factor, mode='nearest')
baseline = 10 * log10(1 / F.mse_loss(nearest, dataset.targets).item())
print(f"nearest-neighbour PSNR {baseline:.2f} dB, model {psnr:.2f} dB")
assert psnr > baseline + 1.0, (psnr, baseline)
