#!/usr/bin/env python3
"""PyTorch's own kernel times for ResNet-18 at batch 64 under f16 autocast (inference and one
SGD training step with GradScaler), from torch.profiler: which cuDNN/cuBLAS kernels run and how
long each takes on the device. It is the reference `anygrad profile resnet18 --amp` and
`anygrad profile resnet18-train --amp` are read against (docs/PERFORMANCE.md).

    python3 bench/pytorch_kernel_profile.py [--batch 64] [--steps 5] [--rows 40]
"""
import argparse

import torch
import torch.nn as nn


def resnet18():
    try:
        import torchvision
        return torchvision.models.resnet18(weights=None)
    except Exception:  # noqa: BLE001
        import importlib.util
        import os
        path = os.path.join(os.path.dirname(__file__), "pytorch_reference.py")
        spec = importlib.util.spec_from_file_location("reference", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.ResNet18()


def table(prof, title, steps, rows):
    print(f"== {title}: CUDA kernels, time per step (of {steps} steps)")
    events = [e for e in prof.key_averages() if e.device_time_total > 0 and e.device_type ==
              torch.autograd.DeviceType.CUDA]
    events.sort(key=lambda e: e.device_time_total, reverse=True)
    total = sum(e.device_time_total for e in events)
    print(f"total kernel time per step: {total / steps:.1f} us")
    for e in events[:rows]:
        print(f"{e.device_time_total / steps:9.1f} us {e.count / steps:5.1f}x  {e.key[:110]}")
    print()


def profiled(step, title, args):
    """Warm `step` up, then print the kernel table of `args.steps` profiled calls."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    table(prof, title, args.steps, args.rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rows", type=int, default=40)
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    model = resnet18().to(device)
    x = torch.randn(args.batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (args.batch,), device=device)

    model.eval()

    def infer():
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
            return model(x)

    profiled(infer, "ResNet-18 inference, autocast f16", args)

    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda")

    def train():
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    profiled(train, "ResNet-18 training step, autocast f16 + GradScaler + SGD", args)


if __name__ == "__main__":
    main()
