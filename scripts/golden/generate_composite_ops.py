#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad-core's composite ops (issue 15's porting ops).

What: writes `crates/core/tests/golden/composite_ops.json` in the same format as
`generate_core_ops.py` (whose helpers it imports): flip, roll, repeat, pad, tril/triu,
masked_fill, max_dim/min_dim (values and indices), any/all, std, norm, cumsum. The Rust test
`crates/core/tests/golden_ops.rs` replays both files on every device.

How to run: with a Python that has torch, `python scripts/golden/generate_composite_ops.py`.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_core_ops as core  # noqa: E402

OUT_PATH = os.path.join(core.REPO, "crates", "core", "tests", "golden", "composite_ops.json")
case, gen = core.case, core.gen


def cases():
    g = gen()
    x = g.randn(2, 3, 4)
    case("flip_dims0_2", "flip", {"dims": [0, -1]}, [x], lambda x: torch.flip(x, [0, -1]))
    g = gen()
    x = g.randn(3, 5)
    case("roll_shift2_dim1", "roll", {"shift": 2, "dim": 1}, [x], lambda x: torch.roll(x, 2, 1))
    case("roll_shiftm4_dim0", "roll", {"shift": -4, "dim": 0}, [x],
         lambda x: torch.roll(x, -4, 0))
    g = gen()
    x = g.randn(2, 3)
    case("repeat_2_1_3", "repeat", {"dims": [2, 1, 3]}, [x], lambda x: x.repeat(2, 1, 3))
    g = gen()
    x = g.randn(1, 2, 3, 4)
    case("pad_1_2_0_3", "pad", {"dims": [1, 2, 0, 3], "value": 0.5}, [x],
         lambda x: F.pad(x, (1, 2, 0, 3), value=0.5))
    g = gen()
    x = g.randn(2, 4, 5)
    for k in (0, -1, 2):
        case(f"tril_{k}".replace("-", "m"), "tril", {"diagonal": k}, [x], lambda x, k=k: torch.tril(x, k))
        case(f"triu_{k}".replace("-", "m"), "triu", {"diagonal": k}, [x], lambda x, k=k: torch.triu(x, k))
    g = gen()
    x = g.randn(3, 4)
    mask = g.randn(1, 4) > 0
    case("masked_fill_bcast", "masked_fill", {"value": -2.5}, [x, mask],
         lambda x, m: x.masked_fill(m, -2.5))
    g = gen()
    x = g.distinct(3, 4, 5)
    for dim in (1, -1):
        for keep in (False, True):
            label = f"dim{dim}_keep{int(keep)}".replace("-", "m")
            case(f"max_dim_values_{label}", "max_dim_values", {"dim": dim, "keepdim": keep}, [x],
                 lambda x, d=dim, k=keep: torch.max(x, d, keepdim=k).values)
            case(f"max_dim_indices_{label}", "max_dim_indices", {"dim": dim, "keepdim": keep},
                 [x], lambda x, d=dim, k=keep: torch.max(x, d, keepdim=k).indices.int())
            case(f"min_dim_values_{label}", "min_dim_values", {"dim": dim, "keepdim": keep}, [x],
                 lambda x, d=dim, k=keep: torch.min(x, d, keepdim=k).values)
            case(f"min_dim_indices_{label}", "min_dim_indices", {"dim": dim, "keepdim": keep},
                 [x], lambda x, d=dim, k=keep: torch.min(x, d, keepdim=k).indices.int())
    g = gen()
    x = (g.randn(3, 4) > 0.8).to(torch.float64) * g.randn(3, 4)
    case("any_dim1", "any", {"dims": [1], "keepdim": False}, [x], lambda x: torch.any(x, 1),
         grad_inputs=[])
    case("all_dim0_keep", "all", {"dims": [0], "keepdim": True}, [x.abs() + (x == 0)],
         lambda x: torch.all(x, 0, keepdim=True), grad_inputs=[])
    case("all_dim1_zeros", "all", {"dims": [1], "keepdim": False}, [x],
         lambda x: torch.all(x, 1), grad_inputs=[])
    g = gen()
    x = g.randn(3, 4, 5)
    for unbiased in (False, True):
        case(f"std_dims12_unbiased{int(unbiased)}", "std",
             {"dims": [1, 2], "unbiased": unbiased, "keepdim": False}, [x],
             lambda x, u=unbiased: torch.std(x, [1, 2], unbiased=u))
    case("std_all_keep", "std", {"dims": [], "unbiased": True, "keepdim": True}, [x],
         lambda x: torch.std(x, [0, 1, 2], unbiased=True, keepdim=True))
    g = gen()
    x = g.away_from_zero(3, 4)
    for p in (1.0, 2.0, 3.0):
        case(f"norm_p{int(p)}_dim1", "norm", {"p": p, "dims": [1], "keepdim": False}, [x],
             lambda x, p=p: torch.linalg.vector_norm(x, p, dim=1))
    case("norm_pinf_all", "norm", {"p": "inf", "dims": [], "keepdim": False}, [g.distinct(3, 4)],
         lambda x: torch.linalg.vector_norm(x, float("inf")))
    g = gen()
    x = g.randn(2, 5, 3)
    for dim in (0, 1, -1):
        case(f"cumsum_dim{dim}".replace("-", "m"), "cumsum", {"dim": dim}, [x],
             lambda x, d=dim: torch.cumsum(x, d))


def main():
    torch.set_default_dtype(torch.float32)
    cases()
    document = {
        "generator": "scripts/golden/generate_composite_ops.py",
        "torch_version": torch.__version__,
        "precision": "inputs f32; outputs and grads computed in float64, stored rounded to f32",
        "cases": core.CASES,
    }
    with open(OUT_PATH, "w") as f:
        f.write("{\n")
        for key in ("generator", "torch_version", "precision"):
            f.write(f"  {json.dumps(key)}: {json.dumps(document[key])},\n")
        f.write('  "cases": [\n')
        for i, c in enumerate(core.CASES):
            sep = "," if i + 1 < len(core.CASES) else ""
            f.write("    " + json.dumps(c, separators=(",", ":")) + sep + "\n")
        f.write("  ]\n}\n")
    print(f"wrote {len(core.CASES)} cases -> {OUT_PATH}")


if __name__ == "__main__":
    main()
