#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad-core's tensor ops.

What: writes `crates/core/tests/golden/core_ops.json`, a list of small test cases that
`crates/core/tests/golden_ops.rs` replays on every anygrad device (CPU, GPU). Each case holds
the op name (an anygrad `Tensor` method name), its parameters, the input tensors, the
expected output, a fixed "upstream" tensor w, and the gradient of `(output * w).sum()` with
respect to every float input (`null` for integer/bool inputs and for ops without gradients).

How to run (Python is needed only to regenerate; `cargo test` reads the committed JSON):

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch numpy      # CPU wheel is enough
    /tmp/torchenv/bin/python scripts/golden/generate_core_ops.py

Precision: inputs and upstream tensors are drawn in float32 (so they are exactly
representable in f32), then every output and gradient is computed by PyTorch in **float64**
and rounded to float32 when stored. The stored values are therefore the exact answer to f32
precision; anygrad computing in f32 should match within rtol 1e-4 / atol 1e-5.

Determinism: all inputs come from `torch.Generator().manual_seed(...)` seeded per case by its
index, and are stored in the JSON, so the Rust side needs no RNG parity with PyTorch.

JSON format (one object per case):
    {"name": str, "op": str, "params": {...},
     "inputs":   [{"shape": [...], "dtype": "float32"|"int32"|"bool", "data": [flat, row-major]}],
     "output":   {"shape", "dtype", "data"},
     "upstream": {"shape", "data"} or null   (null when the output is not float),
     "grads":    [{"shape", "data"} or null, one per input]}
  * bool data is stored as 0/1 numbers; int32 data as integers; float data as JSON numbers
    (shortest repr that round-trips the f32 value).
  * Integer outputs (argmax/argmin) are int32; PyTorch's int64 is converted.
  * Param conventions: `dims` is a list of (possibly negative) dims; `dim` a single dim;
    conv2d/pool params are [height, width] pairs; `dtype` in one_hot is the output dtype.

Inputs avoid non-differentiable points (no ties in max/min/argmax/maximum/minimum/max_pool,
no zeros for abs/relu, no values at clamp bounds), so PyTorch's subgradient choices never
matter.
"""

import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_PATH = os.path.join(REPO, "crates", "core", "tests", "golden", "core_ops.json")

F64 = torch.float64


# --------------------------------------------------------------------------- helpers

def f32_repr(value):
    """Shortest decimal string that round-trips this value as an f32 (keeps the file small)."""
    value = float(value)
    target = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(6, 10):
        text = "%.*g" % (digits, target)
        if struct.unpack("f", struct.pack("f", float(text)))[0] == target:
            return float(text)
    return target


def encode(t, dtype_name=None):
    """Tensor -> {"shape", "dtype", "data"} with f32 rounding for float data."""
    t = t.detach()
    if dtype_name is None:
        if t.dtype == torch.bool:
            dtype_name = "bool"
        elif t.is_floating_point():
            dtype_name = "float32"
        else:
            dtype_name = "int32"
    flat = t.reshape(-1).tolist()
    if dtype_name == "float32":
        data = [f32_repr(v) for v in flat]
    elif dtype_name == "bool":
        data = [1 if v else 0 for v in flat]
    else:
        data = [int(v) for v in flat]
    return {"shape": list(t.shape), "dtype": dtype_name, "data": data}


class Gen:
    """Per-case deterministic generator; all float draws are rounded to f32 first."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, *shape, scale=1.0):
        return (torch.randn(tuple(shape), generator=self.g, dtype=torch.float32) * scale).to(F64)

    def uniform(self, low, high, *shape):
        u = torch.rand(tuple(shape), generator=self.g, dtype=torch.float32)
        return (u * (high - low) + low).to(torch.float32).to(F64)

    def away_from_zero(self, *shape, margin=0.05):
        """randn with |x| >= margin (abs/relu/sign are smooth there)."""
        x = self.randn(*shape)
        return torch.where(x.abs() < margin, torch.sign(x + 1e-30) * margin + x, x).float().to(F64)

    def ints(self, low, high, *shape):
        return torch.randint(low, high, shape, generator=self.g, dtype=torch.int64)

    def distinct(self, *shape):
        """Floats that are pairwise far apart (no ties for max/min/argmax/pooling)."""
        n = 1
        for s in shape:
            n *= s
        perm = torch.randperm(n, generator=self.g).to(F64)
        noise = torch.rand(n, generator=self.g, dtype=F64) * 0.3
        return ((perm + noise) * (4.0 / n) - 2.0).float().to(F64).reshape(shape)


CASES = []


def case(name, op, params, inputs, fn, grad_inputs=None):
    """Record one case.

    inputs: list of float64 (float data), int64 (int32 data) or bool tensors.
    fn: callable(*inputs) -> output tensor (computed in float64 for float inputs).
    grad_inputs: indices of the inputs that get gradients (default: every float input).
    """
    seed = 1000 + len(CASES)
    leaves = []
    for t in inputs:
        if t.is_floating_point():
            leaves.append(t.detach().clone().requires_grad_(True))
        else:
            leaves.append(t.detach().clone())
    out = fn(*leaves)
    entry = {
        "name": name,
        "op": op,
        "params": params,
        "inputs": [encode(t) for t in inputs],
        "output": encode(out),
        "upstream": None,
        "grads": [None] * len(inputs),
    }
    if grad_inputs is None:
        grad_inputs = [i for i, t in enumerate(inputs) if t.is_floating_point()]
    if out.is_floating_point() and out.requires_grad:
        upstream = Gen(seed + 500000).randn(*out.shape)
        entry["upstream"] = {k: v for k, v in encode(upstream).items() if k != "dtype"}
        (out * upstream).sum().backward()
        for i in grad_inputs:
            grad = leaves[i].grad
            if grad is None:
                grad = torch.zeros_like(leaves[i])
            entry["grads"][i] = {k: v for k, v in encode(grad).items() if k != "dtype"}
    CASES.append(entry)


def gen():
    """A fresh generator seeded by the index of the next case."""
    return Gen(1000 + len(CASES))


# --------------------------------------------------------------------------- unary

def unary_cases():
    unary = {
        "neg": (lambda g, s: g.randn(*s), torch.neg),
        "abs": (lambda g, s: g.away_from_zero(*s), torch.abs),
        "exp": (lambda g, s: g.randn(*s), torch.exp),
        "log": (lambda g, s: g.uniform(0.1, 3.0, *s), torch.log),
        "sqrt": (lambda g, s: g.uniform(0.1, 3.0, *s), torch.sqrt),
        "rsqrt": (lambda g, s: g.uniform(0.2, 3.0, *s), torch.rsqrt),
        "sin": (lambda g, s: g.randn(*s, scale=2.0), torch.sin),
        "cos": (lambda g, s: g.randn(*s, scale=2.0), torch.cos),
        "tanh": (lambda g, s: g.randn(*s, scale=2.0), torch.tanh),
        "sigmoid": (lambda g, s: g.randn(*s, scale=3.0), torch.sigmoid),
        "relu": (lambda g, s: g.away_from_zero(*s), torch.relu),
        "gelu": (lambda g, s: g.randn(*s, scale=2.0), lambda x: F.gelu(x, approximate="none")),
        "silu": (lambda g, s: g.randn(*s, scale=2.0), F.silu),
    }
    for name, (make, fn) in unary.items():
        for shape in ([2, 3], [3, 4, 5]):
            g = gen()
            case(f"{name}_{'x'.join(map(str, shape))}", name, {}, [make(g, shape)], fn)
    # Large-magnitude inputs for the overflow-guarded functions.
    g = gen()
    big = torch.tensor([-60.0, -20.0, -5.0, 0.5, 5.0, 20.0, 60.0], dtype=F64)
    case("tanh_large", "tanh", {}, [big], torch.tanh)
    case("sigmoid_large", "sigmoid", {}, [big], torch.sigmoid)
    case("silu_large", "silu", {}, [big], F.silu)
    case("gelu_large", "gelu", {}, [big], lambda x: F.gelu(x, approximate="none"))

    for exponent in (2.0, 3.0, 0.5, -1.5):
        g = gen()
        x = g.uniform(0.2, 2.5, 3, 4)  # positive base: fractional/negative exponents are real
        case(f"pow_scalar_{exponent}", "pow_scalar", {"exponent": exponent}, [x],
             lambda x, e=exponent: torch.pow(x, e))
    g = gen()
    x = g.randn(3, 4)
    case("pow_scalar_2_negative_base", "pow_scalar", {"exponent": 2.0}, [x], lambda x: x ** 2)

    for lo, hi in ((-0.5, 0.5), (0.0, 1.0)):
        g = gen()
        x = g.randn(3, 4, 5)
        # Move values off the bounds so the gradient (1 inside, 0 outside) is well defined.
        for bound in (lo, hi):
            x = torch.where((x - bound).abs() < 1e-3, x + 0.01, x).float().to(F64)
        case(f"clamp_{lo}_{hi}", "clamp", {"min": lo, "max": hi}, [x],
             lambda x, lo=lo, hi=hi: torch.clamp(x, lo, hi))


# --------------------------------------------------------------------------- binary

def binary_cases():
    shapes = [
        ("same_2x3", [2, 3], [2, 3]),
        ("bcast_3x1_4", [3, 1], [4]),
        ("bcast_2x3x4_3x1", [2, 3, 4], [3, 1]),
        ("bcast_scalar_rhs", [3, 4], [1]),
    ]
    ops = {
        "add": torch.add,
        "sub": torch.sub,
        "mul": torch.mul,
        "div": torch.div,
        "maximum": torch.maximum,
        "minimum": torch.minimum,
        "pow": torch.pow,
    }
    for op, fn in ops.items():
        for label, sa, sb in shapes:
            g = gen()
            if op == "pow":
                a = g.uniform(0.3, 2.5, *sa)
                b = g.uniform(-2.0, 2.0, *sb)
            elif op == "div":
                a = g.randn(*sa)
                b = g.uniform(0.5, 2.0, *sb) * torch.where(g.randn(*sb) < 0, -1.0, 1.0).to(F64)
            elif op in ("maximum", "minimum"):
                # Distinct values across both operands: no ties, so the gradient is unique.
                both = g.distinct(int(torch.tensor(sa).prod()) + int(torch.tensor(sb).prod()))
                n = int(torch.tensor(sa).prod())
                a = both[:n].reshape(sa)
                b = both[n:].reshape(sb)
            else:
                a = g.randn(*sa)
                b = g.randn(*sb)
            case(f"{op}_{label}", op, {}, [a, b], fn)

    # Comparisons (Bool output, no gradient). Integer-valued floats so ties occur.
    for op, fn in (("eq", torch.eq), ("lt", torch.lt), ("ge", torch.ge)):
        for label, sa, sb in shapes[:3]:
            g = gen()
            a = g.ints(-2, 3, *sa).to(F64)
            b = g.ints(-2, 3, *sb).to(F64)
            case(f"{op}_{label}", op, {}, [a, b], fn)
        g = gen()
        a = g.ints(-2, 3, 3, 4)
        b = g.ints(-2, 3, 3, 4)
        case(f"{op}_int32", op, {}, [a, b], fn)

    # where_(cond, on_true, on_false) with broadcasting.
    g = gen()
    cond = g.randn(3, 4) > 0
    case("where_same_3x4", "where_", {}, [cond, g.randn(3, 4), g.randn(3, 4)],
         lambda c, a, b: torch.where(c, a, b))
    g = gen()
    cond = g.randn(3, 1) > 0
    case("where_bcast", "where_", {}, [cond, g.randn(1, 4), g.randn(3, 4)],
         lambda c, a, b: torch.where(c, a, b))


# --------------------------------------------------------------------------- reductions

def reduction_cases():
    dim_sets = [[0], [1], [-1], [0, 2], [0, 1, 2]]
    for op in ("sum", "mean", "max", "min"):
        for dims in dim_sets:
            for keepdim in (False, True):
                g = gen()
                x = g.distinct(2, 3, 4) if op in ("max", "min") else g.randn(2, 3, 4)
                if op == "sum":
                    fn = lambda x, d=dims, k=keepdim: torch.sum(x, dim=d, keepdim=k)
                elif op == "mean":
                    fn = lambda x, d=dims, k=keepdim: torch.mean(x, dim=d, keepdim=k)
                elif op == "max":
                    fn = lambda x, d=dims, k=keepdim: torch.amax(x, dim=d, keepdim=k)
                else:
                    fn = lambda x, d=dims, k=keepdim: torch.amin(x, dim=d, keepdim=k)
                dims_label = "_".join(str(d) for d in dims).replace("-", "m")
                case(f"{op}_dims{dims_label}_keep{int(keepdim)}", op,
                     {"dims": dims, "keepdim": keepdim}, [x], fn)
    for op, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                g = gen()
                x = g.distinct(2, 3, 4)
                case(f"{op}_dim{dim}_keep{int(keepdim)}".replace("-", "m"), op,
                     {"dim": dim, "keepdim": keepdim}, [x],
                     lambda x, d=dim, k=keepdim, f=fn: f(x, dim=d, keepdim=k).to(torch.int32))
    for dims in ([0], [-1], [0, 2]):
        for keepdim in (False, True):
            for unbiased in (True, False):
                g = gen()
                x = g.randn(2, 3, 4)
                dims_label = "_".join(str(d) for d in dims).replace("-", "m")
                case(f"var_dims{dims_label}_keep{int(keepdim)}_unbiased{int(unbiased)}", "var",
                     {"dims": dims, "keepdim": keepdim, "unbiased": unbiased}, [x],
                     lambda x, d=dims, k=keepdim, u=unbiased:
                         torch.var(x, dim=d, keepdim=k, correction=1 if u else 0))
    # Whole-tensor reductions.
    g = gen()
    x = g.randn(3, 4)
    case("sum_all_3x4", "sum_all", {}, [x], torch.sum)
    case("mean_all_3x4", "mean_all", {}, [x], torch.mean)
    g = gen()
    x = g.distinct(3, 4)
    case("max_all_3x4", "max_all", {}, [x], torch.amax)
    case("min_all_3x4", "min_all", {}, [x], torch.amin)


# --------------------------------------------------------------------------- linalg

def matmul_cases():
    for label, sa, sb in (
        ("2d", [3, 4], [4, 5]),
        ("batched", [2, 3, 4], [2, 4, 5]),
        ("bcast_batch", [2, 1, 3, 4], [3, 4, 2]),
        ("bcast_rhs_2d", [4, 3, 4], [4, 5]),
        ("bcast_lhs_2d", [3, 4], [2, 4, 5]),
        ("odd_17x9x13", [17, 9], [9, 13]),
    ):
        g = gen()
        case(f"matmul_{label}", "matmul", {}, [g.randn(*sa), g.randn(*sb)], torch.matmul)


# --------------------------------------------------------------------------- indexing

def indexing_cases():
    g = gen()
    x = g.randn(5, 3)
    idx = torch.tensor([0, 2, 2, 4], dtype=torch.int64)
    case("index_select_dim0_repeat", "index_select", {"dim": 0}, [x, idx],
         lambda x, i: torch.index_select(x, 0, i))
    g = gen()
    x = g.randn(2, 5, 3)
    idx = torch.tensor([4, 1, 1], dtype=torch.int64)
    case("index_select_dim1", "index_select", {"dim": 1}, [x, idx],
         lambda x, i: torch.index_select(x, 1, i))
    g = gen()
    x = g.randn(3, 4)
    idx = torch.tensor([3, 0], dtype=torch.int64)
    case("index_select_dim_m1", "index_select", {"dim": -1}, [x, idx],
         lambda x, i: torch.index_select(x, -1, i))

    g = gen()
    x = g.randn(3, 4)
    idx = g.ints(0, 4, 3, 2)
    case("gather_dim1", "gather", {"dim": 1}, [x, idx], lambda x, i: torch.gather(x, 1, i))
    g = gen()
    x = g.randn(3, 4)
    idx = g.ints(0, 3, 5, 4)
    case("gather_dim0_repeat", "gather", {"dim": 0}, [x, idx],
         lambda x, i: torch.gather(x, 0, i))
    g = gen()
    x = g.randn(2, 3, 4)
    idx = g.ints(0, 4, 2, 3, 2)
    case("gather_3d_dim_m1", "gather", {"dim": -1}, [x, idx],
         lambda x, i: torch.gather(x, -1, i))

    g = gen()
    x = g.randn(3, 5)
    idx = torch.tensor([[0, 0], [4, 1], [2, 2]], dtype=torch.int64)
    src = g.randn(3, 2)
    case("scatter_add_dim1_dup", "scatter_add", {"dim": 1}, [x, idx, src],
         lambda x, i, s: torch.scatter_add(x, 1, i, s))
    g = gen()
    x = g.randn(4, 3)
    idx = torch.tensor([[0, 1, 3], [0, 1, 3], [2, 0, 0]], dtype=torch.int64)
    src = g.randn(3, 3)
    case("scatter_add_dim0_dup", "scatter_add", {"dim": 0}, [x, idx, src],
         lambda x, i, s: torch.scatter_add(x, 0, i, s))

    idx = torch.tensor([0, 3, 1, 1, 2], dtype=torch.int64)
    case("one_hot_5_c4", "one_hot", {"num_classes": 4, "dtype": "float32"}, [idx],
         lambda i: F.one_hot(i, 4).to(torch.float32))
    idx = torch.tensor([[0, 2], [1, 0]], dtype=torch.int64)
    case("one_hot_2x2_c3", "one_hot", {"num_classes": 3, "dtype": "float32"}, [idx],
         lambda i: F.one_hot(i, 3).to(torch.float32))


# --------------------------------------------------------------------------- composites

def composite_cases():
    for op, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        for dim in (-1, 0, 1):
            g = gen()
            x = g.randn(2, 3, 4, scale=2.0)
            case(f"{op}_dim{dim}".replace("-", "m"), op, {"dim": dim}, [x],
                 lambda x, d=dim, f=fn: f(x, d))
        g = gen()
        x = g.randn(2, 6) * 30.0  # large logits: the max-subtraction must be there
        case(f"{op}_large_logits", op, {"dim": -1}, [x.float().to(F64)],
             lambda x, f=fn: f(x, -1))
    for dims, keepdim in (([-1], False), ([-1], True), ([0, 2], True), ([1], False)):
        g = gen()
        x = g.randn(2, 3, 4, scale=2.0)
        dims_label = "_".join(str(d) for d in dims).replace("-", "m")
        case(f"logsumexp_dims{dims_label}_keep{int(keepdim)}", "logsumexp",
             {"dims": dims, "keepdim": keepdim}, [x],
             lambda x, d=dims, k=keepdim: torch.logsumexp(x, dim=d, keepdim=k))

    # Cross-entropy building block: log_softmax(x, 1).gather(1, target[:, None]).
    g = gen()
    logits = g.randn(4, 5, scale=2.0)
    target = torch.tensor([[1], [4], [0], [1]], dtype=torch.int64)
    case("log_softmax_gather_4x5", "log_softmax_gather", {"dim": 1}, [logits, target],
         lambda x, t: torch.gather(torch.log_softmax(x, 1), 1, t))


def conv_pool_cases():
    conv = [
        # name, x shape, w shape, bias, stride, padding, dilation, groups
        ("basic_bias", [2, 3, 7, 7], [4, 3, 3, 3], True, [1, 1], [0, 0], [1, 1], 1),
        ("stride2_pad1", [2, 3, 7, 7], [4, 3, 3, 3], False, [2, 2], [1, 1], [1, 1], 1),
        ("dilation2_pad2_bias", [1, 3, 7, 7], [2, 3, 3, 3], True, [1, 1], [2, 2], [2, 2], 1),
        ("depthwise_g3_bias", [2, 3, 5, 5], [6, 1, 3, 3], True, [1, 1], [1, 1], [1, 1], 3),
        ("rect_kernel_stride21_pad01", [1, 3, 6, 7], [4, 3, 2, 3], True, [2, 1], [0, 1], [1, 1], 1),
        ("groups2_stride2", [2, 4, 5, 5], [6, 2, 3, 3], False, [2, 2], [1, 1], [1, 1], 2),
        ("1x1", [2, 3, 4, 4], [4, 3, 1, 1], True, [1, 1], [0, 0], [1, 1], 1),
        ("all_mixed", [1, 4, 7, 6], [4, 2, 3, 2], True, [2, 3], [1, 2], [2, 1], 2),
    ]
    for name, xs, ws, has_bias, stride, padding, dilation, groups in conv:
        g = gen()
        x = g.randn(*xs)
        w = g.randn(*ws, scale=0.5)
        inputs = [x, w]
        if has_bias:
            inputs.append(g.randn(ws[0]))
        params = {"stride": stride, "padding": padding, "dilation": dilation,
                  "groups": groups}
        case(f"conv2d_{name}", "conv2d", params, inputs,
             lambda x, w, b=None, s=stride, p=padding, d=dilation, gr=groups:
                 F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=gr))

    pools = [
        ("k2_s2", [2, 2, 7, 7], [2, 2], [2, 2], [0, 0]),
        ("k3_s2_p1", [1, 3, 7, 7], [3, 3], [2, 2], [1, 1]),
        ("k3_s1_p1", [1, 2, 5, 5], [3, 3], [1, 1], [1, 1]),
        ("k2x3_s1x2_p1x1", [1, 2, 6, 7], [2, 3], [1, 2], [1, 1]),
    ]
    for name, xs, kernel, stride, padding in pools:
        g = gen()
        x = g.distinct(*xs)
        params = {"kernel": kernel, "stride": stride, "padding": padding}
        case(f"max_pool2d_{name}", "max_pool2d", params, [x],
             lambda x, k=kernel, s=stride, p=padding: F.max_pool2d(x, k, s, p))
        case(f"avg_pool2d_{name}", "avg_pool2d", params, [x],
             lambda x, k=kernel, s=stride, p=padding:
                 F.avg_pool2d(x, k, s, p, count_include_pad=True))


def main():
    torch.set_default_dtype(torch.float32)
    unary_cases()
    binary_cases()
    reduction_cases()
    matmul_cases()
    indexing_cases()
    composite_cases()
    conv_pool_cases()
    names = [c["name"] for c in CASES]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        sys.exit(f"duplicate case names: {sorted(duplicates)}")
    os.makedirs(os.path.dirname(OUT_PATH), exist_ok=True)
    document = {
        "generator": "scripts/golden/generate_core_ops.py",
        "torch_version": torch.__version__,
        "precision": "inputs f32; outputs and grads computed in float64, stored rounded to f32",
        "cases": CASES,
    }
    with open(OUT_PATH, "w") as f:
        # One case per line: small diffs when a case changes.
        f.write("{\n")
        for key in ("generator", "torch_version", "precision"):
            f.write(f"  {json.dumps(key)}: {json.dumps(document[key])},\n")
        f.write('  "cases": [\n')
        for i, c in enumerate(CASES):
            sep = "," if i + 1 < len(CASES) else ""
            f.write("    " + json.dumps(c, separators=(",", ":")) + sep + "\n")
        f.write("  ]\n}\n")
    size = os.path.getsize(OUT_PATH)
    print(f"wrote {len(CASES)} cases, {size} bytes -> {OUT_PATH}")


if __name__ == "__main__":
    main()
