#!/usr/bin/env python3
"""PyTorch DistributedDataParallel (NCCL) reference for `anygrad bench resnet18-train --devices`.

ResNet-18 training (SGD momentum 0.9, CrossEntropyLoss, random 3x224x224 images) at
--batch images PER GPU, on 1 GPU and on every visible GPU (one process per GPU, NCCL), in the
variants of pytorch_reference.py: "float32" (TF32 off everywhere), "float32-tf32" (PyTorch's
defaults: cuDNN TF32 on) and "float16-amp" (autocast + GradScaler).

Prints one JSON line per (variant, GPU count) in the same format as pytorch_reference.py:
  {"bench": "resnet18-train-ddp", "framework": "pytorch", "dtype": ..., "size": "64x2",
   "gpus": 2, "value": images/s (all GPUs together), "unit": "images/s",
   "scaling": images/s over the 1-GPU run of the same variant, "median_ms": ...}

How to run (needs torch and CUDA; torchvision optional, the architecture is the same):
    python3 bench/pytorch_ddp.py --batch 64 --seconds 3
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def make_resnet18():
    try:
        import torchvision

        return torchvision.models.resnet18(num_classes=1000)
    except ImportError:
        from pytorch_reference import ResNet18  # the inline copy of the same architecture

        return ResNet18(1000)


def set_variant(variant):
    tf32 = variant == "float32-tf32"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = tf32


def worker(rank, world, args, variant, results):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(rank)
    if world > 1:
        dist.init_process_group("nccl", rank=rank, world_size=world)
    set_variant(variant)
    device = torch.device("cuda", rank)
    torch.manual_seed(0)
    model = make_resnet18().to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    amp = variant == "float16-amp"
    scaler = torch.amp.GradScaler("cuda", enabled=amp)
    images = torch.randn(args.batch, 3, 224, 224, device=device)
    labels = torch.randint(0, 1000, (args.batch,), device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize(device)
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < args.seconds:
        if world > 1:
            dist.barrier()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    if rank == 0:
        results.put(times)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def run(world, args, variant):
    context = mp.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=worker, args=(rank, world, args, variant, results))
                 for rank in range(world)]
    for process in processes:
        process.start()
    times = results.get()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"rank exited with {process.exitcode}")
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="images per GPU")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--port", type=int, default=29512)
    parser.add_argument("--variants", nargs="+",
                        default=["float32", "float32-tf32", "float16-amp"])
    args = parser.parse_args()
    gpus = torch.cuda.device_count()
    counts = sorted({1, gpus})
    for variant in args.variants:
        single = None
        for world in counts:
            try:
                times = run(world, args, variant)
            except Exception as error:  # report and go on, like pytorch_reference.py
                print(json.dumps({"bench": "resnet18-train-ddp", "dtype": variant,
                                  "gpus": world, "error": str(error)}), flush=True)
                continue
            median = statistics.median(times)
            rate = args.batch * world / median
            single = rate if world == 1 else single
            print(json.dumps({
                "bench": "resnet18-train-ddp", "framework": "pytorch",
                "device": torch.cuda.get_device_name(0), "dtype": variant,
                "size": f"{args.batch}x{world}", "gpus": world,
                "median_ms": median * 1e3, "iterations": len(times),
                "value": rate, "unit": "images/s",
                "scaling": rate / single if single else None,
            }), flush=True)


if __name__ == "__main__":
    main()
