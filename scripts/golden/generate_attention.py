#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad's scaled_dot_product_attention.

What: writes `crates/core/tests/golden/attention.json`: cases of
`torch.nn.functional.scaled_dot_product_attention` (PyTorch's math backend, float64 maths,
values stored rounded to f32) with no mask, causal (L == S and L != S), a Bool padding mask,
an additive float mask, a custom scale, unbatched 3-dim inputs and a fully masked row. Each
case stores the inputs, the output, a fixed upstream tensor `w` and the gradients of
`(out * w).sum()` with respect to query, key and value. The Rust test
`crates/core/tests/attention.rs` replays them on every device.

How to run: with a Python that has torch, `python scripts/golden/generate_attention.py`.
"""

import json
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_PATH = os.path.join(REPO, "crates", "core", "tests", "golden", "attention.json")


def record(t):
    dtype = "bool" if t.dtype == torch.bool else "float32"
    data = t.flatten().tolist()
    if dtype == "float32":
        # JSON has no infinity: -inf (masked-out scores) is written as null.
        data = [None if x == float("-inf") else float(torch.tensor(x, dtype=torch.float32))
                for x in data]
    return {"shape": list(t.shape), "dtype": dtype, "data": data}


def case(name, gen, q_shape, k_shape, v_shape, mask=None, is_causal=False, scale=None):
    q = torch.randn(*q_shape, generator=gen, dtype=torch.float64)
    k = torch.randn(*k_shape, generator=gen, dtype=torch.float64)
    v = torch.randn(*v_shape, generator=gen, dtype=torch.float64)
    # Round inputs to f32 first so both sides start from the same values.
    q, k, v = (t.float().double().requires_grad_(True) for t in (q, k, v))
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.float().double()
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                             scale=scale)
    w = torch.randn(*out.shape, generator=gen, dtype=torch.float64).float().double()
    (out * w).sum().backward()
    return {
        "name": name,
        "query": record(q.detach()),
        "key": record(k.detach()),
        "value": record(v.detach()),
        "mask": None if mask is None else record(mask),
        "is_causal": is_causal,
        "scale": scale,
        "w": record(w),
        "out": record(out.detach()),
        "grad_query": record(q.grad),
        "grad_key": record(k.grad),
        "grad_value": record(v.grad),
    }


def main():
    gen = torch.Generator().manual_seed(16)
    cases = [
        case("plain_l5_s7", gen, (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)),
        case("causal_square", gen, (1, 2, 6, 4), (1, 2, 6, 4), (1, 2, 6, 4), is_causal=True),
        case("causal_l3_s5", gen, (2, 1, 3, 4), (2, 1, 5, 4), (2, 1, 5, 3), is_causal=True),
        case("causal_l5_s3", gen, (1, 1, 5, 4), (1, 1, 3, 4), (1, 1, 3, 3), is_causal=True),
    ]
    padding = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    padding[1, :, :, 5:] = False
    cases.append(case("bool_padding", gen, (2, 2, 4, 6), (2, 2, 7, 6), (2, 2, 7, 6),
                      mask=padding))
    additive = torch.randn(5, 7, generator=gen, dtype=torch.float64)
    additive[1, 3] = float("-inf")
    cases.append(case("additive_mask", gen, (2, 5, 3), (2, 7, 3), (2, 7, 5), mask=additive))
    cases.append(case("scale_0_3_unbatched", gen, (5, 8), (9, 8), (9, 2), scale=0.3))
    full = torch.ones(3, 4, dtype=torch.bool)
    full[1, :] = False
    full[2, 0] = False
    cases.append(case("fully_masked_row", gen, (1, 2, 3, 5), (1, 2, 4, 5), (1, 2, 4, 5),
                      mask=full))
    with open(OUT_PATH, "w") as f:
        json.dump({"generator": "scripts/golden/generate_attention.py",
                   "torch": torch.__version__, "cases": cases}, f)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {OUT_PATH}")


if __name__ == "__main__":
    main()
