#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad's bfloat16 dtype.

What: writes `crates/core/tests/golden/bf16_ops.json`, in the format of
`generate_core_ops.py` (whose `f32_repr` it imports): casts of float32 values at and around
bfloat16 rounding ties to `torch.bfloat16`, and a few ops on bfloat16 tensors as PyTorch's CPU
computes them (matmul, add, mul, div, exp, tanh, sum over a dim, softmax), each output a
bfloat16 tensor. `crates/core/tests/golden_bf16.rs` replays the file on every device.

How to run (Python is needed only to regenerate; `cargo test` reads the committed JSON):

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch numpy      # CPU wheel is enough
    /tmp/torchenv/bin/python scripts/golden/generate_bf16.py

Data: float32 inputs are stored as the shortest decimal that round-trips the f32 value;
bfloat16 inputs and outputs as their exact values (every bfloat16 value is a float32 value).
JSON has no NaN or infinity: those casts are checked by `crates/core/tests/bf16.rs` against
PyTorch's known bits instead.

JSON format (one object per case):
    {"name": str, "op": str, "params": {...},
     "inputs":   [{"shape": [...], "dtype": "float32"|"bfloat16", "data": [flat, row-major]}],
     "output":   {"shape", "dtype": "bfloat16", "data"},
     "upstream": null, "grads": [null, ...]}
Ops: `to_bfloat16` (a float32 input cast), `matmul`, `add`, `mul`, `div`, `exp`, `tanh`,
`sum` (params `dims`, `keepdim`), `softmax` (param `dim`).
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate_core_ops import REPO, f32_repr  # noqa: E402

OUT_PATH = os.path.join(REPO, "crates", "core", "tests", "golden", "bf16_ops.json")
BF16 = torch.bfloat16
CASES = []


def encode(t):
    """A float32 or bfloat16 tensor -> {"shape", "dtype", "data"} (bfloat16 values exactly)."""
    t = t.detach()
    name = "bfloat16" if t.dtype == BF16 else "float32"
    flat = t.float().reshape(-1).tolist()
    data = [float(v) if name == "bfloat16" else f32_repr(v) for v in flat]
    return {"shape": list(t.shape), "dtype": name, "data": data}


def case(name, op, params, inputs, fn):
    output = fn(*inputs)
    assert output.dtype == BF16, f"{name}: output is {output.dtype}"
    CASES.append({
        "name": name,
        "op": op,
        "params": params,
        "inputs": [encode(t) for t in inputs],
        "output": encode(output),
        "upstream": None,
        "grads": [None] * len(inputs),
    })


def bf16_randn(g, *shape, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float32) * scale).to(BF16)


def main():
    tie = 2.0 ** -8
    values = [1.0 + tie, 1.0 + 3 * tie, 1.0 + tie + 2.0 ** -20, -(1.0 + tie), -(1.0 + 3 * tie),
              0.1, -2.5, 3.0e38, 1.0e-40, 65504.0, 2.0 ** -133, 0.0, -0.0]
    g = torch.Generator().manual_seed(7)
    values += torch.randn(19, generator=g, dtype=torch.float32).mul(100.0).tolist()
    x = torch.tensor(values, dtype=torch.float32)
    case("cast_ties_and_random", "to_bfloat16", {}, [x], lambda x: x.to(BF16))

    g = torch.Generator().manual_seed(8)
    a, b = bf16_randn(g, 5, 19), bf16_randn(g, 19, 3)
    case("matmul_5x19x3", "matmul", {}, [a, b], torch.matmul)
    a, b = bf16_randn(g, 2, 4, 33), bf16_randn(g, 2, 33, 6)
    case("matmul_batched_2x4x33x6", "matmul", {}, [a, b], torch.matmul)

    g = torch.Generator().manual_seed(9)
    p, q = bf16_randn(g, 37, scale=3.0), bf16_randn(g, 37, scale=2.0)
    positive = (torch.rand(37, generator=g, dtype=torch.float32) * 3.0 + 0.5).to(BF16)
    case("add", "add", {}, [p, q], torch.add)
    case("mul", "mul", {}, [p, q], torch.mul)
    case("div", "div", {}, [p, positive], torch.div)
    case("exp", "exp", {}, [p], torch.exp)
    case("tanh", "tanh", {}, [p], torch.tanh)

    g = torch.Generator().manual_seed(10)
    r = bf16_randn(g, 4, 29, scale=4.0)
    case("sum_dim1", "sum", {"dims": [1], "keepdim": False}, [r], lambda r: r.sum(dim=1))
    case("softmax_last", "softmax", {"dim": -1}, [r], lambda r: torch.softmax(r, dim=-1))

    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    document = {
        "generator": "scripts/golden/generate_bf16.py",
        "torch_version": torch.__version__,
        "precision": "bfloat16 as PyTorch's CPU computes it; float32 inputs for the casts",
        "cases": CASES,
    }
    with open(OUT_PATH, "w") as f:
        f.write("{\n")
        for key in ("generator", "torch_version", "precision"):
            f.write(f"  {json.dumps(key)}: {json.dumps(document[key])},\n")
        f.write('  "cases": [\n')
        for i, c in enumerate(CASES):
            sep = "," if i + 1 < len(CASES) else ""
            f.write("    " + json.dumps(c, separators=(",", ":"), allow_nan=False) + sep + "\n")
        f.write("  ]\n}\n")
    print(f"wrote {len(CASES)} cases, {os.path.getsize(OUT_PATH)} bytes -> {OUT_PATH}")


if __name__ == "__main__":
    main()
