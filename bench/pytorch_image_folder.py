#!/usr/bin/env python3
"""The PyTorch side of `anygrad train --dataset folder --model resnet18`: the same folder, the
same split fractions, the same transforms (Resize, CenterCrop, RandomCrop with 1/8 padding,
ColorJitter(0.2, 0.2, 0.2), ToTensor, Normalize(0.5, 0.25)), torchvision's ResNet-18 (3
channels, `num_classes` from the folder), Adam 1e-3, a DataLoader with `num_workers`.

Prints one JSON line per measurement: the loader alone (one epoch of decoding, augmenting and
collating, moved to the device) and each training epoch (images/s and test accuracy).

    python3 bench/pytorch_image_folder.py DIR --workers 8 --batch 128 --epochs 3 --device cuda
"""
import argparse
import json
import time

import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset, random_split


class WithTransform(torch.utils.data.Dataset):
    def __init__(self, subset, transform):
        self.subset, self.transform = subset, transform

    def __len__(self):
        return len(self.subset)

    def __getitem__(self, i):
        image, label = self.subset[i]
        return self.transform(image), label


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--side", type=int, default=32)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(42)
    folder = torchvision.datasets.ImageFolder(args.dir)
    train_part, test_part = random_split(folder, [0.8, 0.2], generator=torch.Generator().manual_seed(42))
    side = args.side
    square = [T.Resize(side), T.CenterCrop(side)]
    tail = [T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)]
    augment = T.Compose(square + [T.RandomCrop(side, padding=(side + 7) // 8), T.ColorJitter(0.2, 0.2, 0.2)] + tail)
    plain = T.Compose(square + tail)
    train = DataLoader(WithTransform(train_part, augment), batch_size=args.batch, shuffle=True,
                       num_workers=args.workers, persistent_workers=args.workers > 0, pin_memory=True)
    test = DataLoader(WithTransform(test_part, plain), batch_size=256, num_workers=args.workers)

    start, images = time.perf_counter(), 0
    for x, y in train:
        x = x.to(device, non_blocking=True)
        images += y.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({"what": "pytorch loader alone", "images": images, "seconds": seconds,
                      "images_per_s": images / seconds, "workers": args.workers}), flush=True)

    model = torchvision.models.resnet18(num_classes=len(folder.classes)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        start, images = time.perf_counter(), 0
        for x, y in train:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            images += y.shape[0]
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        model.eval()
        correct = seen = 0
        with torch.no_grad():
            for x, y in test:
                predicted = model(x.to(device)).argmax(1).cpu()
                correct += (predicted == y).sum().item()
                seen += y.shape[0]
        print(json.dumps({"what": "pytorch train epoch", "epoch": epoch + 1, "images_per_s": images / seconds,
                          "seconds": seconds, "test_accuracy": correct / seen}), flush=True)


if __name__ == "__main__":
    main()
