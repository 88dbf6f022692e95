#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad-core's sorting and scan ops (issue 15).

What: writes `crates/core/tests/golden/sort_scan_ops.json` in the same format as
`generate_core_ops.py` (whose helpers it imports): sort / argsort (stable, ties, NaN-free),
topk (distinct values), prod (with one zero and with several zeros, for the gradient),
cumsum and cumprod (with a zero). The Rust test `crates/core/tests/golden_ops.rs` replays the
file on every device.

How to run: with a Python that has torch, `python scripts/golden/generate_sort_scan_ops.py`.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_core_ops as core  # noqa: E402

OUT_PATH = os.path.join(core.REPO, "crates", "core", "tests", "golden", "sort_scan_ops.json")
case, gen = core.case, core.gen


def sort_cases():
    g = gen()
    x = g.randn(3, 5, 4)
    for dim in (0, 1, -1):
        for desc in (False, True):
            label = f"dim{dim}_desc{int(desc)}".replace("-", "m")
            case(f"sort_values_{label}", "sort_values", {"dim": dim, "descending": desc}, [x],
                 lambda x, d=dim, s=desc: torch.sort(x, dim=d, descending=s, stable=True).values)
            case(f"sort_indices_{label}", "sort_indices", {"dim": dim, "descending": desc}, [x],
                 lambda x, d=dim, s=desc: torch.sort(x, dim=d, descending=s, stable=True).indices.int())
    # Ties: stable order in both directions (values rounded to a few levels).
    g = gen()
    x = torch.round(g.randn(4, 9) * 1.5)
    for desc in (False, True):
        case(f"argsort_ties_desc{int(desc)}", "argsort", {"dim": -1, "descending": desc}, [x],
             lambda x, s=desc: torch.argsort(x, dim=-1, descending=s, stable=True).int())
        case(f"sort_values_ties_desc{int(desc)}", "sort_values",
             {"dim": -1, "descending": desc}, [x],
             lambda x, s=desc: torch.sort(x, dim=-1, descending=s, stable=True).values)
    # Integer input.
    g = gen()
    x = g.ints(-5, 5, 3, 7)
    case("argsort_int_dim1", "argsort", {"dim": 1, "descending": False}, [x],
         lambda x: torch.argsort(x, dim=1, stable=True).int())
    # A row longer than one workgroup's sort (the GPU's multi-pass path).
    g = gen()
    x = g.randn(2, 1100)
    case("sort_values_long_row", "sort_values", {"dim": 1, "descending": False}, [x],
         lambda x: torch.sort(x, dim=1, stable=True).values)
    case("argsort_long_row_desc", "argsort", {"dim": 1, "descending": True}, [x],
         lambda x: torch.argsort(x, dim=1, descending=True, stable=True).int())
    g = gen()
    x = g.distinct(4, 6)
    for k, dim, largest in ((3, 1, True), (2, 0, False), (6, -1, True)):
        label = f"k{k}_dim{dim}_largest{int(largest)}".replace("-", "m")
        case(f"topk_values_{label}", "topk_values", {"k": k, "dim": dim, "largest": largest},
             [x], lambda x, k=k, d=dim, l=largest: torch.topk(x, k, d, l, True).values)
        case(f"topk_indices_{label}", "topk_indices", {"k": k, "dim": dim, "largest": largest},
             [x], lambda x, k=k, d=dim, l=largest: torch.topk(x, k, d, l, True).indices.int())


def scan_cases():
    g = gen()
    x = g.away_from_zero(2, 5, 3, margin=0.3)
    for dims, keep in (([1], False), ([0, 2], True), ([], False)):
        label = "_".join(str(d) for d in dims) or "all"
        case(f"prod_dims{label}_keep{int(keep)}", "prod", {"dims": dims, "keepdim": keep}, [x],
             lambda x, d=dims, k=keep: (torch.prod(x) if not d else
                                         torch.prod(torch.prod(x, d[1], keepdim=k), d[0], keepdim=k)
                                         if len(d) == 2 else torch.prod(x, d[0], keepdim=k)))
    g = gen()
    x = g.away_from_zero(3, 6, margin=0.3)
    x[0, 2] = 0.0  # one zero in row 0
    x[1, 1] = 0.0  # two zeros in row 1
    x[1, 4] = 0.0
    case("prod_zeros_dim1", "prod", {"dims": [1], "keepdim": False}, [x],
         lambda x: torch.prod(x, 1))
    case("cumprod_zeros_dim1", "cumprod", {"dim": 1}, [x], lambda x: torch.cumprod(x, 1))
    g = gen()
    x = g.randn(2, 7, 3)
    for dim in (0, 1, -1):
        case(f"scan_cumsum_dim{dim}".replace("-", "m"), "cumsum", {"dim": dim}, [x],
             lambda x, d=dim: torch.cumsum(x, d))
    g = gen()
    x = g.randn(1, 300)
    case("cumsum_long", "cumsum", {"dim": 1}, [x], lambda x: torch.cumsum(x, 1))
    g = gen()
    x = g.uniform(0.5, 1.5, 3, 5)
    case("cumprod_dim0", "cumprod", {"dim": 0}, [x], lambda x: torch.cumprod(x, 0))


def main():
    torch.set_default_dtype(torch.float32)
    sort_cases()
    scan_cases()
    document = {
        "generator": "scripts/golden/generate_sort_scan_ops.py",
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
