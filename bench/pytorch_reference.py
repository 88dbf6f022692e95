#!/usr/bin/env python3
"""Reference timings from PyTorch (and NumPy) for comparison with `anygrad bench`.

What it measures: for each workload, the median wall time of one call over many timed
iterations after a warm-up, and the throughput derived from it. Today's workload:

  matmul  square f32 C = A @ B at N = 256, 512, 1024, 2048 (FLOPs = 2 N^3), median GFLOPS.

Later workloads (elementwise, reductions, conv2d, training steps) are added as more
`bench_*` functions, selected with `--bench`, so the same JSON lines can be put side by side
with anygrad's.

Output: one JSON object per line on stdout, first an "env" line (versions, thread counts,
CPU), then one line per (workload, size):
  {"bench":"matmul","framework":"pytorch","device":"cpu","dtype":"f32","size":N,
   "gflops":...,"median_ms":...,"iterations":...,"threads":...}

How to run (outside the repo's Rust build; needs torch and/or numpy):
    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch numpy
    /tmp/torchenv/bin/python bench/pytorch_reference.py --device cpu
    /tmp/torchenv/bin/python bench/pytorch_reference.py --numpy             # NumPy only
    /tmp/torchenv/bin/python bench/pytorch_reference.py --device cuda --sizes 1024 4096
    ... > bench/results/<machine>-pytorch.jsonl

Timing method: CPU times use time.perf_counter around each call; on CUDA each iteration is
bracketed by torch.cuda.synchronize() (so the time includes the kernel, not just the
launch). The iteration count adapts to the size so that each size takes ~`--seconds`.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def emit(record):
    print(json.dumps(record), flush=True)


def time_calls(fn, sync, warmup, seconds, min_iters, max_iters):
    """Run fn `warmup` times, then time single calls until `seconds` or max_iters pass."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    start = time.perf_counter()
    while len(times) < max_iters and (len(times) < min_iters or
                                       time.perf_counter() - start < seconds):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return times


# --------------------------------------------------------------------------- pytorch

def bench_matmul_torch(args):
    import torch

    device = torch.device(args.device)
    if device.type == "cuda":
        sync = torch.cuda.synchronize
    else:
        sync = lambda: None
    torch.manual_seed(0)
    for n in args.sizes:
        a = torch.randn(n, n, dtype=torch.float32, device=device)
        b = torch.randn(n, n, dtype=torch.float32, device=device)
        out = torch.empty(n, n, dtype=torch.float32, device=device)
        times = time_calls(lambda: torch.matmul(a, b, out=out), sync, args.warmup,
                           args.seconds, args.min_iters, args.max_iters)
        median = statistics.median(times)
        emit({"bench": "matmul", "framework": "pytorch", "device": args.device,
              "dtype": "f32", "size": n, "gflops": round(2.0 * n ** 3 / median / 1e9, 2),
              "median_ms": round(median * 1e3, 4), "min_ms": round(min(times) * 1e3, 4),
              "iterations": len(times), "threads": torch.get_num_threads()})


# --------------------------------------------------------------------------- numpy

def bench_matmul_numpy(args):
    import numpy as np

    rng = np.random.default_rng(0)
    for n in args.sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), dtype=np.float32)
        times = time_calls(lambda: np.matmul(a, b, out=out), lambda: None, args.warmup,
                           args.seconds, args.min_iters, args.max_iters)
        median = statistics.median(times)
        emit({"bench": "matmul", "framework": "numpy", "device": "cpu", "dtype": "f32",
              "size": n, "gflops": round(2.0 * n ** 3 / median / 1e9, 2),
              "median_ms": round(median * 1e3, 4), "min_ms": round(min(times) * 1e3, 4),
              "iterations": len(times)})


def environment(args):
    record = {"bench": "env", "python": platform.python_version(), "machine": platform.machine(),
              "cpu": cpu_model(), "cpu_count": os.cpu_count(),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if not args.numpy_only:
        import torch
        record["torch"] = torch.__version__
        record["torch_threads"] = torch.get_num_threads()
        record["torch_interop_threads"] = torch.get_num_interop_threads()
        if args.device == "cuda" and torch.cuda.is_available():
            record["cuda_device"] = torch.cuda.get_device_name(0)
            record["cuda"] = torch.version.cuda
    if args.numpy or args.numpy_only:
        import numpy as np
        record["numpy"] = np.__version__
        try:
            config = np.show_config(mode="dicts")
            blas = config.get("Build Dependencies", {}).get("blas", {})
            record["numpy_blas"] = f"{blas.get('name')} {blas.get('version')}"
        except Exception:  # older NumPy: no dict mode
            pass
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="matmul", choices=["matmul"],
                        help="workload to run")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--numpy", action="store_true", help="also run the NumPy version")
    parser.add_argument("--numpy-only", action="store_true", help="run only NumPy")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="target timed seconds per size")
    parser.add_argument("--min-iters", type=int, default=5)
    parser.add_argument("--max-iters", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: PyTorch's choice)")
    args = parser.parse_args()

    if args.threads is not None and not args.numpy_only:
        import torch
        torch.set_num_threads(args.threads)
    emit(environment(args))
    if args.bench == "matmul":
        if not args.numpy_only:
            bench_matmul_torch(args)
        if args.numpy or args.numpy_only:
            bench_matmul_numpy(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
