#!/usr/bin/env python3
"""PyTorch reference timings, printed in the same JSON-lines format as `anygrad bench --json`.

What it measures (framework "pytorch"; each case: warm-up, then timed iterations for about
`--seconds`, every iteration ending in a device synchronize; median / min / max reported):

  matmul          square C = A @ B, float32 with TF32 OFF at --sizes (default 1024 2048 4096)
                  and float16 at --f16-sizes (default 4096); GFLOPS = 2 n^3 / median_s / 1e9.
  elementwise     `a * b + a` (as written, eager PyTorch) on --elements (default 64M) float32;
                  GB/s from the minimal traffic, 12 bytes/element. Also "copy": y.copy_(x),
                  8 bytes/element, and "elementwise-addcmul" (torch.addcmul, one fused kernel).
  overhead        1000 chained `x = x + 1.0` on a 256-element float32 tensor, host wall time
                  including the final synchronize; value = microseconds per op ("us/op").
  mlp             one epoch of the digits MLP 64-128-64-10 (ReLU), Adam lr 1e-3, batch 32,
                  CrossEntropyLoss, on the standardized 80% train split (1437 samples -> 45
                  steps, last partial batch kept) of crates/data/assets/digits.csv.gz, data
                  resident on the device, reshuffled each epoch with a device randperm;
                  value = median ms/epoch.
  resnet18        ResNet-18 inference (eval, torch.no_grad, 3x224x224) at --batches (default
                  16 32 64 128 256), images/s, plus peak_memory_bytes (CUDA only).
  resnet18-train  one SGD(momentum 0.9) step per iteration at --train-batch (default 64), images/s.
  attention       F.scaled_dot_product_attention forward + backward at --attention-shape, TFLOPS.
  minilm          all-MiniLM-L6-v2's BERT encoder (vocab 30522, hidden 384, 6 layers, 12 heads,
                  feed-forward 1536, erf GELU, LayerNorm eps 1e-12) with random weights, eval,
                  torch.no_grad, on --minilm-batch x --minilm-length (default 64 x 128) random
                  token ids with a full attention mask, then mean pooling and L2 normalization
                  (sentence-transformers); sequences/s, peak memory. The encoder is written here
                  in plain torch (Hugging Face's module layout, F.scaled_dot_product_attention,
                  an all-ones mask passed as no mask as transformers' sdpa path does);
                  --minilm-transformers uses transformers' BertModel instead when importable.
                  Record field "model" says which.
  minilm-train    one training step per iteration: encoder in train mode (dropout 0.1 on hidden
                  states and attention probabilities), mean pooling, Linear(384, 2) head,
                  cross-entropy, AdamW(lr 5e-5, weight decay 0.01, none on biases and norms);
                  size "BxT" without and "BxT-checkpoint" with torch.utils.checkpoint
                  (use_reentrant=False) around every encoder layer; sequences/s, peak memory.

MiniLM variants (dtype label): "float32" = TF32 off everywhere, always run; "float16-amp" =
torch.autocast float16 (+ GradScaler for training) with --amp or --all.

ResNet variants (dtype label): "float32-tf32" = PyTorch defaults (cudnn.allow_tf32=True,
matmul TF32 off) -- always run; "float32" = true f32, TF32 off everywhere (--true-f32);
"float16-amp" = torch.autocast float16 (+ GradScaler for training) (--amp). --all runs every
workload and every variant. On the CPU TF32 does not exist: the default variant is labelled
"float32" and --true-f32 is skipped. torchvision's resnet18 is used when importable, otherwise
an inline copy of its exact architecture.

Output: stdout, one JSON object per line. First {"bench":"environment",...} (torch / CUDA /
cuDNN versions, device, TF32 flags), then one line per case with
  bench, framework, device, dtype, size, median_ms, min_ms, max_ms, iterations, value, unit
(+ extra fields such as peak_memory_bytes). A failing case prints {"bench":..., "error":...}
and the run continues. Progress goes to stderr.

How to run (from the repo root; needs only torch, numpy optional):
    python3 bench/pytorch_reference.py --all --device cuda > bench/results/h200-pytorch.jsonl
    python3 bench/pytorch_reference.py matmul resnet18 --amp --true-f32 --device cuda
    # quick CPU smoke test:
    /tmp/torchenv/bin/python bench/pytorch_reference.py --all --device cpu --sizes 256 \
        --f16-sizes 128 --elements 1000000 --batches 2 --train-batch 2 --seconds 0.3
Then: python3 bench/compare.py anygrad.jsonl h200-pytorch.jsonl

Timing: by default host wall time (time.perf_counter) around each iteration including
torch.cuda.synchronize(), the same method as anygrad's `time_iterations`; `--timer event`
uses CUDA events instead (not for "overhead", which is host wall time by definition).
"""

import argparse
import gzip
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

# `--framework anygrad` runs this same script on anygrad's Python package, with nothing but
# these import lines changed: the package's promise to PyTorch users, and the figure that
# compares Python's cost with `anygrad bench` (Rust) and PyTorch on one machine.
FRAMEWORK = "anygrad" if "--framework=anygrad" in sys.argv or any(
    a == "--framework" and b == "anygrad" for a, b in zip(sys.argv, sys.argv[1:])) else "pytorch"
if FRAMEWORK == "anygrad":
    import anygrad as torch
    import anygrad.nn as nn
    import anygrad.vision as torchvision_substitute
else:
    import torch
    import torch.nn as nn
    import torch.utils.checkpoint
    torchvision_substitute = None
RECORD_FRAMEWORK = "anygrad-python" if FRAMEWORK == "anygrad" else "pytorch"

WORKLOADS = ["matmul", "elementwise", "overhead", "mlp", "resnet18", "resnet18-train",
             "attention", "minilm", "minilm-train"]
REPO_ROOT = Path(__file__).resolve().parent.parent
DIGITS_PATH = REPO_ROOT / "crates" / "data" / "assets" / "digits.csv.gz"


# --------------------------------------------------------------------------- helpers

def emit(record):
    print(json.dumps(record), flush=True)


def log(message):
    print(f"[pytorch_reference] {message}", file=sys.stderr, flush=True)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class Ctx:
    """Device, synchronize and timing settings shared by all workloads."""

    def __init__(self, args):
        self.args = args
        self.device = torch.device(args.device)
        self.cuda = self.device.type == "cuda"
        if self.cuda:
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            self.description = f"cuda:{index} ({torch.cuda.get_device_name(index)})"
        else:
            self.description = "cpu"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def measure(self, fn, timer=None, min_iters=None, warmup=None):
        """Warm up, then time single calls of fn (each followed by a synchronize) until
        --seconds have passed (at least min_iters, at most --max-iters). Returns seconds."""
        args = self.args
        timer = timer or args.timer
        min_iters = args.min_iters if min_iters is None else min_iters
        warmup = args.warmup if warmup is None else warmup
        for _ in range(warmup):
            fn()
        self.sync()
        use_events = timer == "event" and self.cuda
        times = []
        start = time.perf_counter()
        while len(times) < args.max_iters and (
                len(times) < min_iters or time.perf_counter() - start < args.seconds):
            if use_events:
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                fn()
                end.record()
                end.synchronize()
                times.append(begin.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                fn()
                self.sync()
                times.append(time.perf_counter() - t0)
        return times

    def record(self, bench, dtype, size, times, value_fn, unit, **extra):
        """value_fn maps the median time in seconds to the headline value."""
        median = statistics.median(times)
        rec = {"bench": bench, "framework": RECORD_FRAMEWORK, "device": self.description,
               "dtype": dtype, "size": str(size),
               "median_ms": median * 1e3, "min_ms": min(times) * 1e3, "max_ms": max(times) * 1e3,
               "iterations": len(times), "value": value_fn(median), "unit": unit}
        rec.update(extra)
        emit(rec)
        log(f"{bench} {dtype} {size}: {rec['value']:.4g} {unit} "
            f"(median {rec['median_ms']:.4g} ms, {len(times)} it)")
        return rec


def set_tf32(enabled_matmul, enabled_cudnn):
    torch.backends.cuda.matmul.allow_tf32 = enabled_matmul
    torch.backends.cudnn.allow_tf32 = enabled_cudnn


def tf32_state():
    state = {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
             "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
             "float32_matmul_precision": torch.get_float32_matmul_precision()}
    for key, obj in (("matmul_fp32_precision", torch.backends.cuda.matmul),
                     ("cudnn_fp32_precision", torch.backends.cudnn)):
        value = getattr(obj, "fp32_precision", None)
        if value is not None:
            state[key] = value
    return state


def error_record(ctx, bench, dtype, size, exc):
    emit({"bench": bench, "framework": RECORD_FRAMEWORK, "device": ctx.description, "dtype": dtype,
          "size": None if size is None else str(size), "error": f"{type(exc).__name__}: {exc}".strip()[:500]})
    log(f"{bench} {dtype} {size} FAILED: {exc}")
    if ctx.cuda:
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------- environment

def environment(ctx, torchvision_version):
    args = ctx.args
    rec = {"bench": "environment", "framework": RECORD_FRAMEWORK, "device": ctx.description,
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "torchvision": torchvision_version, "python": platform.python_version(),
           "cpu": cpu_model(), "cpu_count": os.cpu_count(),
           "torch_threads": torch.get_num_threads(),
           "cudnn_benchmark": torch.backends.cudnn.benchmark,
           "fp16_reduced_precision_reduction":
               torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
           "timer": args.timer, "seconds_per_case": args.seconds,
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    rec.update(tf32_state())
    if ctx.cuda:
        props = torch.cuda.get_device_properties(ctx.device)
        rec["device_name"] = props.name
        rec["device_memory_bytes"] = props.total_memory
        rec["compute_capability"] = f"{props.major}.{props.minor}"
        rec["sm_count"] = props.multi_processor_count
    else:
        rec["device_name"] = cpu_model()
    try:
        import numpy
        rec["numpy"] = numpy.__version__
    except ImportError:
        rec["numpy"] = None
    return rec


# --------------------------------------------------------------------------- matmul

def bench_matmul(ctx):
    args = ctx.args
    set_tf32(False, False)  # true f32 for matmul
    torch.manual_seed(0)
    cases = [(n, torch.float32, "float32") for n in args.sizes] + \
            [(n, torch.float16, "float16") for n in args.f16_sizes]
    for n, dtype, label in cases:
        try:
            a = torch.randn(n, n, dtype=dtype, device=ctx.device)
            b = torch.randn(n, n, dtype=dtype, device=ctx.device)
            out = torch.empty(n, n, dtype=dtype, device=ctx.device)
            times = ctx.measure(lambda: torch.matmul(a, b, out=out))
            ctx.record("matmul", label, n, times, lambda s: 2.0 * n ** 3 / s / 1e9, "GFLOPS",
                       tf32=False)
            del a, b, out
        except Exception as exc:  # noqa: BLE001 -- report and go on
            error_record(ctx, "matmul", label, n, exc)
    if args.numpy and not ctx.cuda:
        bench_matmul_numpy(ctx)


def bench_matmul_numpy(ctx):
    import numpy as np
    rng = np.random.default_rng(0)
    for n in ctx.args.sizes:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), dtype=np.float32)
        times = ctx.measure(lambda: np.matmul(a, b, out=out), timer="wall")
        rec_ = statistics.median(times)
        emit({"bench": "matmul", "framework": "numpy", "device": "cpu", "dtype": "float32",
              "size": str(n), "median_ms": rec_ * 1e3, "min_ms": min(times) * 1e3,
              "max_ms": max(times) * 1e3, "iterations": len(times),
              "value": 2.0 * n ** 3 / rec_ / 1e9, "unit": "GFLOPS"})


# --------------------------------------------------------------------------- elementwise

def bench_elementwise(ctx):
    n = ctx.args.elements
    try:
        a = torch.randn(n, dtype=torch.float32, device=ctx.device)
        b = torch.randn(n, dtype=torch.float32, device=ctx.device)
        times = ctx.measure(lambda: a * b + a)
        ctx.record("elementwise", "float32", n, times, lambda s: 12.0 * n / s / 1e9, "GB/s",
                   expr="a * b + a", bytes_per_element=12)
        out = torch.empty_like(a)
        times = ctx.measure(lambda: torch.addcmul(a, a, b, out=out))
        ctx.record("elementwise-addcmul", "float32", n, times, lambda s: 12.0 * n / s / 1e9,
                   "GB/s", expr="torch.addcmul(a, a, b, out=out)", bytes_per_element=12)
        del a, b, out
    except Exception as exc:  # noqa: BLE001
        error_record(ctx, "elementwise", "float32", n, exc)
    try:
        x = torch.randn(n, dtype=torch.float32, device=ctx.device)
        y = torch.empty_like(x)
        times = ctx.measure(lambda: y.copy_(x))
        ctx.record("copy", "float32", n, times, lambda s: 8.0 * n / s / 1e9, "GB/s",
                   bytes_per_element=8)
        del x, y
    except Exception as exc:  # noqa: BLE001
        error_record(ctx, "copy", "float32", n, exc)


# --------------------------------------------------------------------------- overhead

def bench_overhead(ctx):
    ops, length = ctx.args.overhead_ops, ctx.args.overhead_len
    x0 = torch.zeros(length, dtype=torch.float32, device=ctx.device)

    def chain():
        x = x0
        for _ in range(ops):
            x = x + 1.0
        return x

    try:
        times = ctx.measure(chain, timer="wall", warmup=max(ctx.args.warmup, 3))
        ctx.record("overhead", "float32", f"{ops}x{length}", times,
                   lambda s: s * 1e6 / ops, "us/op", ops=ops)
    except Exception as exc:  # noqa: BLE001
        error_record(ctx, "overhead", "float32", f"{ops}x{length}", exc)


# --------------------------------------------------------------------------- mlp

def load_digits(path):
    """Features [1797, 64] float32 and labels [1797] int64 from the gzip CSV, or None."""
    try:
        with gzip.open(path, "rt") as f:
            rows = [[int(v) for v in line.split(",")] for line in f if line.strip()]
    except OSError:
        return None
    data = torch.tensor(rows, dtype=torch.int64)
    return data[:, :64].to(torch.float32), data[:, 64]


def bench_mlp(ctx):
    args = ctx.args
    size = "digits-b32"
    batch = 32
    try:
        loaded = load_digits(args.digits)
        source = str(args.digits)
        if loaded is None:
            log(f"digits file {args.digits} not found: using random data of the same shape")
            g = torch.Generator().manual_seed(0)
            loaded = (torch.randint(0, 17, (1797, 64), generator=g).float(),
                      torch.randint(0, 10, (1797,), generator=g))
            source = "synthetic"
        features, labels = loaded
        n = features.shape[0]
        test_count = math.ceil(0.2 * n)  # scikit-learn's rule, as anygrad's split
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(42))
        train_idx = perm[test_count:]
        x = features[train_idx]
        y = labels[train_idx]
        mean = x.mean(0)
        std = x.std(0, unbiased=False)
        std[std == 0] = 1.0
        x = ((x - mean) / std).to(ctx.device)
        y = y.to(ctx.device)
        n_train = x.shape[0]

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                              nn.Linear(64, 10)).to(ctx.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        criterion = nn.CrossEntropyLoss()
        steps = math.ceil(n_train / batch)
        last_loss = []

        def epoch():
            order = torch.randperm(n_train, device=ctx.device)
            for i in range(0, n_train, batch):
                idx = order[i:i + batch]
                optimizer.zero_grad()
                loss = criterion(model(x[idx]), y[idx])
                loss.backward()
                optimizer.step()
            last_loss[:] = [loss]

        times = ctx.measure(epoch, warmup=max(args.warmup, 2))
        ctx.record("mlp", "float32", size, times, lambda s: s * 1e3, "ms/epoch",
                   steps_per_epoch=steps, train_samples=n_train, data=source,
                   final_loss=float(last_loss[0].item()))
    except Exception as exc:  # noqa: BLE001
        error_record(ctx, "mlp", "float32", size, exc)


# --------------------------------------------------------------------------- resnet18

def _conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision.models.resnet18(weights=None): same modules, names and initialization."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, 2)
        self.layer2 = self._make_layer(128, 2, stride=2)
        self.layer3 = self._make_layer(256, 2, stride=2)
        self.layer4 = self._make_layer(512, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def torchvision_module():
    """torchvision, or anygrad's `vision` package under --framework anygrad."""
    if torchvision_substitute is not None:
        return torchvision_substitute
    import torchvision
    return torchvision


def torchvision_version():
    try:
        return getattr(torchvision_module(), "__version__", torch.__version__)
    except Exception:  # noqa: BLE001 -- missing or broken (e.g. mismatched ops)
        return None


def make_resnet18(ctx):
    model = None
    if not ctx.args.inline_resnet and torchvision_version() is not None:
        try:
            model = torchvision_module().models.resnet18(weights=None)
            impl = "torchvision"
        except Exception:  # noqa: BLE001
            model = None
    if model is None:
        model = ResNet18()
        impl = "inline"
    if ctx.args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model.to(ctx.device), impl


def resnet_variants(ctx):
    """(dtype label, cudnn tf32, autocast) for the selected variants."""
    args = ctx.args
    # anygrad has no TF32: its f32 is always true f32 (the "float32" label).
    tf32 = ctx.cuda and FRAMEWORK == "pytorch"
    variants = [("float32-tf32" if tf32 else "float32", True, False)]
    if (args.true_f32 or args.all) and tf32:
        variants.append(("float32", False, False))
    if args.amp or args.all:
        variants.append(("float16-amp", True, True))
    return variants


def _autocast(ctx, enabled):
    return torch.autocast(device_type=ctx.device.type, dtype=torch.float16, enabled=enabled)


def _input(ctx, batch):
    x = torch.randn(batch, 3, 224, 224, device=ctx.device)
    if ctx.args.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def _reset_peak(ctx):
    if ctx.cuda:
        ctx.sync()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(ctx.device)


def _peak(ctx):
    return torch.cuda.max_memory_allocated(ctx.device) if ctx.cuda else None


def bench_resnet18(ctx):
    torch.manual_seed(0)
    model, impl = make_resnet18(ctx)
    model.eval()
    for label, cudnn_tf32, amp in resnet_variants(ctx):
        set_tf32(False, cudnn_tf32)
        for batch in ctx.args.batches:
            try:
                x = _input(ctx, batch)
                _reset_peak(ctx)

                def step():
                    with torch.no_grad(), _autocast(ctx, amp):
                        return model(x)

                times = ctx.measure(step)
                ctx.record("resnet18", label, batch, times, lambda s: batch / s, "images/s",
                           peak_memory_bytes=_peak(ctx), model=impl,
                           cudnn_allow_tf32=cudnn_tf32, channels_last=ctx.args.channels_last)
                del x
            except Exception as exc:  # noqa: BLE001
                error_record(ctx, "resnet18", label, batch, exc)
    del model
    set_tf32(False, True)


def bench_resnet18_train(ctx):
    batch = ctx.args.train_batch
    for label, cudnn_tf32, amp in resnet_variants(ctx):
        set_tf32(False, cudnn_tf32)
        try:
            torch.manual_seed(0)
            model, impl = make_resnet18(ctx)
            model.train()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            criterion = nn.CrossEntropyLoss()
            scaler = torch.amp.GradScaler(ctx.device.type, enabled=amp)
            x = _input(ctx, batch)
            y = torch.randint(0, 1000, (batch,), device=ctx.device)
            _reset_peak(ctx)

            def step():
                optimizer.zero_grad()
                with _autocast(ctx, amp):
                    loss = criterion(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()

            times = ctx.measure(step)
            ctx.record("resnet18-train", label, batch, times, lambda s: batch / s, "images/s",
                       peak_memory_bytes=_peak(ctx), model=impl, optimizer="SGD(momentum=0.9)",
                       cudnn_allow_tf32=cudnn_tf32, channels_last=ctx.args.channels_last)
            del model, optimizer, x, y
        except Exception as exc:  # noqa: BLE001
            error_record(ctx, "resnet18-train", label, batch, exc)
    set_tf32(False, True)


def bench_attention(ctx):
    """F.scaled_dot_product_attention forward + backward at --attention-shape B H T d, in
    --attention-dtype (PyTorch picks its backend: flash on recent GPUs for f16); the same
    workload and TFLOPS count as `anygrad bench attention`."""
    import torch.nn.functional as F
    batch, heads, length, head_dim = ctx.args.attention_shape
    dtype = {"f16": torch.float16, "f32": torch.float32}[ctx.args.attention_dtype]
    causal = ctx.args.causal
    shape = (batch, heads, length, head_dim)
    torch.manual_seed(0)
    q, k, v = (torch.randn(shape, device=ctx.device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    upstream = torch.randn(shape, device=ctx.device, dtype=dtype)

    def step():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.backward(upstream)
        q.grad = k.grad = v.grad = None

    _reset_peak(ctx)
    times = ctx.measure(step)
    flops = 3.5 * 4.0 * batch * heads * length * length * head_dim / (2.0 if causal else 1.0)
    size = f"B{batch}xH{heads}xT{length}xd{head_dim}" + ("-causal" if causal else "")
    ctx.record("attention", "float16" if dtype == torch.float16 else "float32", size, times,
               lambda t: flops / t / 1e12, "TFLOPS", peak_memory_bytes=_peak(ctx),
               note="forward + backward")


# --------------------------------------------------------------------------- minilm

MINILM_CONFIG = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
                 "num_attention_heads": 12, "intermediate_size": 1536,
                 "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
                 "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}


class MiniLMSelfAttention(nn.Module):
    """Hugging Face's BertAttention: query/key/value projections, SDPA with dropout on the
    attention probabilities in training, output projection, dropout, post-norm residual."""

    def __init__(self, c):
        super().__init__()
        hidden = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_dropout = c["attention_probs_dropout_prob"]
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, sdpa_mask):
        import torch.nn.functional as F
        batch, tokens, hidden = x.shape

        def split(y):
            return y.view(batch, tokens, self.heads, hidden // self.heads).transpose(1, 2)

        attended = F.scaled_dot_product_attention(
            split(self.query(x)), split(self.key(x)), split(self.value(x)), attn_mask=sdpa_mask,
            dropout_p=self.attention_dropout if self.training else 0.0)
        attended = attended.transpose(1, 2).reshape(batch, tokens, hidden)
        return self.norm(x + self.dropout(self.dense(attended)))


class MiniLMLayer(nn.Module):
    """One post-norm BERT layer: attention block, then GELU feed-forward block."""

    def __init__(self, c):
        super().__init__()
        hidden = c["hidden_size"]
        self.attention = MiniLMSelfAttention(c)
        self.intermediate = nn.Linear(hidden, c["intermediate_size"])
        self.output = nn.Linear(c["intermediate_size"], hidden)
        self.norm = nn.LayerNorm(hidden, eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])

    def forward(self, x, sdpa_mask):
        import torch.nn.functional as F
        h = self.attention(x, sdpa_mask)
        return self.norm(h + self.dropout(self.output(F.gelu(self.intermediate(h)))))


class MiniLMEncoder(nn.Module):
    """A BERT encoder (transformers' BertModel without the pooler), plain torch: word +
    position + token type embeddings, LayerNorm, dropout, post-norm layers; each layer
    wrapped in torch.utils.checkpoint when checkpointing is on (training only)."""

    def __init__(self, c):
        super().__init__()
        hidden = c["hidden_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], hidden)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], hidden)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], hidden)
        self.norm = nn.LayerNorm(hidden, eps=c["layer_norm_eps"])
        self.dropout = nn.Dropout(c["hidden_dropout_prob"])
        self.layers = nn.ModuleList(MiniLMLayer(c) for _ in range(c["num_hidden_layers"]))
        self.checkpointing = False
        self.full_mask = False  # set by minilm_inputs

    def set_checkpointing(self, enabled):
        self.checkpointing = enabled

    def forward(self, input_ids, token_type_ids, attention_mask):
        # An all-ones mask masks nothing: like transformers' sdpa path, pass no mask (so the
        # flash kernel may run); otherwise a boolean [B, 1, 1, T] mask (True = attend).
        sdpa_mask = None if self.full_mask else attention_mask.bool()[:, None, None, :]
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
             + self.position_embeddings(positions))
        x = self.dropout(self.norm(x))
        for layer in self.layers:
            if self.checkpointing and self.training and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(layer, x, sdpa_mask, use_reentrant=False)
            else:
                x = layer(x, sdpa_mask)
        return x


class TransformersMiniLM(nn.Module):
    """transformers' BertModel(BertConfig(all-MiniLM-L6-v2), add_pooling_layer=False) behind
    the interface of MiniLMEncoder."""

    def __init__(self, c):
        super().__init__()
        from transformers import BertConfig, BertModel
        self.bert = BertModel(BertConfig(hidden_act="gelu", **c), add_pooling_layer=False)

    def set_checkpointing(self, enabled):
        if enabled:
            self.bert.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        else:
            self.bert.gradient_checkpointing_disable()

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state


def make_minilm(ctx):
    """(encoder on the device, implementation name): the inline encoder, or transformers'
    BertModel with --minilm-transformers when it imports."""
    torch.manual_seed(0)
    if ctx.args.minilm_transformers:
        try:
            import transformers
            model = TransformersMiniLM(MINILM_CONFIG)
            return model.to(ctx.device), f"transformers {transformers.__version__} BertModel"
        except Exception as exc:  # noqa: BLE001 -- fall back to the inline encoder
            log(f"transformers unavailable ({exc}); using the inline BERT encoder")
    return MiniLMEncoder(MINILM_CONFIG).to(ctx.device), "inline BERT encoder"


def minilm_inputs(ctx, model):
    """Random ids, token types 0 and a full attention mask of --minilm-batch x --minilm-length."""
    batch, tokens = ctx.args.minilm_batch, ctx.args.minilm_length
    ids = torch.randint(0, MINILM_CONFIG["vocab_size"], (batch, tokens), device=ctx.device)
    types = torch.zeros_like(ids)
    mask = torch.ones_like(ids)
    model.full_mask = bool(mask.all())  # decided once, outside the timed steps
    return ids, types, mask


def mean_pool(hidden, mask):
    """sentence-transformers' mean pooling over the tokens whose mask is 1."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def minilm_variants(ctx):
    """(dtype label, autocast) for the selected variants; TF32 stays off for float32."""
    variants = [("float32", False)]
    if ctx.args.amp or ctx.args.all:
        variants.append(("float16-amp", True))
    return variants


def bench_minilm(ctx):
    import torch.nn.functional as F
    batch, tokens = ctx.args.minilm_batch, ctx.args.minilm_length
    size = f"B{batch}xT{tokens}"
    set_tf32(False, False)
    model, impl = make_minilm(ctx)
    model.eval()
    ids, types, mask = minilm_inputs(ctx, model)
    for label, amp in minilm_variants(ctx):
        try:
            _reset_peak(ctx)

            def step():
                with torch.no_grad(), _autocast(ctx, amp):
                    hidden = model(ids, types, mask)
                    return F.normalize(mean_pool(hidden, mask), p=2, dim=1)

            times = ctx.measure(step)
            ctx.record("minilm", label, size, times, lambda s: batch / s, "sequences/s",
                       peak_memory_bytes=_peak(ctx), model=impl,
                       tokens_per_s=batch * tokens / statistics.median(times),
                       note="embeddings: mean pooling + L2 normalization; random weights")
        except Exception as exc:  # noqa: BLE001
            error_record(ctx, "minilm", label, size, exc)
    del model
    set_tf32(False, True)


def bench_minilm_train(ctx):
    import torch.nn.functional as F
    batch, tokens = ctx.args.minilm_batch, ctx.args.minilm_length
    set_tf32(False, False)
    for label, amp in minilm_variants(ctx):
        plain_peak = None
        try:
            model, impl = make_minilm(ctx)
            model.train()
            head = nn.Linear(MINILM_CONFIG["hidden_size"], 2).to(ctx.device)
            named = list(model.named_parameters()) + [(f"head.{n}", p)
                                                      for n, p in head.named_parameters()]
            decay = [p for _, p in named if p.ndim >= 2]
            no_decay = [p for _, p in named if p.ndim < 2]  # biases and LayerNorm weights
            optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                           {"params": no_decay, "weight_decay": 0.0}], lr=5e-5)
            scaler = torch.amp.GradScaler(ctx.device.type, enabled=amp)
            ids, types, mask = minilm_inputs(ctx, model)
            labels = torch.randint(0, 2, (batch,), device=ctx.device)
        except Exception as exc:  # noqa: BLE001
            error_record(ctx, "minilm-train", label, f"B{batch}xT{tokens}", exc)
            continue
        for checkpointed in (False, True):
            size = f"B{batch}xT{tokens}" + ("-checkpoint" if checkpointed else "")
            try:
                model.set_checkpointing(checkpointed)
                _reset_peak(ctx)

                def step():
                    optimizer.zero_grad(set_to_none=True)
                    with _autocast(ctx, amp):
                        logits = head(mean_pool(model(ids, types, mask), mask))
                        loss = F.cross_entropy(logits, labels)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()

                times = ctx.measure(step)
                peak = _peak(ctx)
                note = ("encoder layers checkpointed (torch.utils.checkpoint)" if checkpointed
                        else "no checkpointing") + "; AdamW, 2-class head on mean pooling"
                if checkpointed and plain_peak and peak:
                    note += (f"; peak {peak / 1048576:.0f} MiB vs {plain_peak / 1048576:.0f} MiB"
                             " without checkpointing")
                if not checkpointed:
                    plain_peak = peak
                ctx.record("minilm-train", label, size, times, lambda s: batch / s,
                           "sequences/s", peak_memory_bytes=peak, model=impl, note=note,
                           tokens_per_s=batch * tokens / statistics.median(times))
            except Exception as exc:  # noqa: BLE001
                error_record(ctx, "minilm-train", label, size, exc)
        del model, head, optimizer
    set_tf32(False, True)


BENCHES = {"matmul": bench_matmul, "elementwise": bench_elementwise,
           "overhead": bench_overhead, "mlp": bench_mlp, "resnet18": bench_resnet18,
           "resnet18-train": bench_resnet18_train, "attention": bench_attention,
           "minilm": bench_minilm, "minilm-train": bench_minilm_train}


# --------------------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(
        description="PyTorch reference timings in anygrad's bench JSON format.",
        epilog="Workloads: " + ", ".join(WORKLOADS))
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help="workloads to run (default: matmul)")
    parser.add_argument("--workload", action="append", default=[], metavar="W[,W...]",
                        help="workload(s) to run; repeatable, comma-separated allowed")
    parser.add_argument("--all", action="store_true",
                        help="every workload and every ResNet variant (--true-f32 --amp)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cpu, cuda or cuda:N (default: cuda when available)")
    parser.add_argument("--framework", choices=["pytorch", "anygrad"], default="pytorch",
                        help="anygrad: the same script on anygrad's Python package")
    parser.add_argument("--seconds", type=float, default=2.0, help="timed seconds per case")
    parser.add_argument("--warmup", type=int, default=5, help="untimed iterations per case")
    parser.add_argument("--min-iters", type=int, default=5)
    parser.add_argument("--max-iters", type=int, default=100000)
    parser.add_argument("--timer", choices=["wall", "event"], default="wall",
                        help="wall: perf_counter + synchronize (like anygrad); event: CUDA events")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096],
                        help="matmul float32 sizes")
    parser.add_argument("--f16-sizes", type=int, nargs="*", default=[4096],
                        help="matmul float16 sizes (none: skip)")
    parser.add_argument("--numpy", action="store_true", help="also NumPy matmul (CPU only)")
    parser.add_argument("--elements", type=int, default=64 * 1024 * 1024,
                        help="elementwise/copy length")
    parser.add_argument("--overhead-ops", type=int, default=1000)
    parser.add_argument("--overhead-len", type=int, default=256)
    parser.add_argument("--digits", type=Path, default=DIGITS_PATH, help="digits.csv.gz path")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 32, 64, 128, 256],
                        help="resnet18 inference batch sizes")
    parser.add_argument("--train-batch", type=int, default=64)
    parser.add_argument("--true-f32", action="store_true",
                        help="also run ResNet with TF32 off (dtype float32)")
    parser.add_argument("--amp", action="store_true",
                        help="also run ResNet and MiniLM under autocast float16 (float16-amp)")
    parser.add_argument("--channels-last", action="store_true",
                        help="ResNet in channels_last memory format (off by default)")
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="torch.backends.cudnn.benchmark = True (default False)")
    parser.add_argument("--inline-resnet", action="store_true",
                        help="use the inline ResNet-18 even if torchvision is importable")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--attention-shape", type=int, nargs=4, default=[8, 12, 512, 64],
                        metavar=("B", "H", "T", "D"), help="attention batch, heads, length, d")
    parser.add_argument("--attention-dtype", choices=["f16", "f32"], default="f16")
    parser.add_argument("--causal", action="store_true", help="causal attention")
    parser.add_argument("--minilm-batch", type=int, default=64,
                        help="minilm / minilm-train sequences per batch")
    parser.add_argument("--minilm-length", type=int, default=128,
                        help="minilm / minilm-train tokens per sequence")
    parser.add_argument("--minilm-transformers", action="store_true",
                        help="minilm: transformers' BertModel instead of the inline encoder")
    args = parser.parse_args()

    selected = list(args.workloads)
    for item in args.workload:
        selected += [w for w in item.split(",") if w]
    if args.all:
        selected = list(WORKLOADS)
    if not selected:
        selected = ["matmul"]
    unknown = [w for w in selected if w not in BENCHES]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; choose from {WORKLOADS}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    set_tf32(False, True)  # PyTorch's defaults; each workload sets what it needs
    ctx = Ctx(args)
    emit(environment(ctx, torchvision_version()))
    for name in dict.fromkeys(selected):  # keep order, drop duplicates
        log(f"--- {name}")
        try:
            BENCHES[name](ctx)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            error_record(ctx, name, None, None, exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
