#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad's spatial layers (issue 15).

What: writes `crates/nn/tests/golden/spatial_layers.json`: conv_transpose2d (groups,
stride, padding, output_padding, dilation, bias), conv1d, interpolate (nearest, bilinear with
and without align_corners, by size and by scale factor), adaptive_max_pool2d (values, flat
indices, and gradients routed to the first maximum, with ties), group_norm (affine and not).
Each case holds its inputs, the output, an upstream gradient `upstream` and the gradients of
`sum(output * upstream)` with respect to every float input. The Rust test
`crates/nn/tests/spatial_layers.rs` replays them on every device.

How to run: with a Python that has torch, `python scripts/golden/generate_spatial_layers.py`.
"""

import json
import os

import torch
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_PATH = os.path.join(REPO, "crates", "nn", "tests", "golden", "spatial_layers.json")
CASES = []


def gen():
    g = torch.Generator().manual_seed(len(CASES) + 15)

    class Draw:
        def randn(self, *shape):
            return torch.randn(*shape, generator=g, dtype=torch.float64).float()

        def randint(self, high, *shape):
            return torch.randint(0, high, shape, generator=g).float()

    return Draw()


def entry(t):
    t = t.detach()
    data = t.flatten().tolist()
    if t.is_floating_point():
        data = [float(f"{v:.9g}") for v in data]
    return {"shape": list(t.shape), "data": data}


def case(name, op, config, inputs, fn):
    leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*leaves)
    extra = []
    if isinstance(out, tuple):
        out, extra = out[0], list(out[1:])
    upstream = gen().randn(*out.shape)
    (out * upstream).sum().backward()
    CASES.append({
        "name": name,
        "op": op,
        "config": config,
        "inputs": [entry(t) for t in inputs],
        "output": entry(out),
        "extra": [entry(e) for e in extra],
        "upstream": entry(upstream),
        "grads": [entry(t.grad) for t in leaves],
    })


def cases():
    g = gen()
    x, w, b = g.randn(2, 4, 5, 6), g.randn(4, 3, 3, 3), g.randn(3)
    cfg = {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1], "dilation": [1, 1],
           "groups": 1}
    case("conv_transpose2d_stride2_outpad1", "conv_transpose2d", cfg, [x, w, b],
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1))
    g = gen()
    x, w, b = g.randn(1, 4, 4, 5), g.randn(4, 2, 3, 2), g.randn(4)
    cfg = {"stride": [1, 2], "padding": [2, 1], "output_padding": [0, 1], "dilation": [2, 1],
           "groups": 2}
    case("conv_transpose2d_groups2_dilated", "conv_transpose2d", cfg, [x, w, b],
         lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(1, 2), padding=(2, 1),
                                            output_padding=(0, 1), dilation=(2, 1), groups=2))
    g = gen()
    x, w, b = g.randn(2, 4, 9), g.randn(6, 2, 3), g.randn(6)
    cfg = {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}
    case("conv1d_groups2", "conv1d", cfg, [x, w, b],
         lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2))

    g = gen()
    x = g.randn(2, 3, 5, 7)
    for name, cfg, kwargs in [
        ("nearest_size_8x11", {"mode": "nearest", "size": [8, 11]},
         {"size": (8, 11), "mode": "nearest"}),
        ("nearest_scale2", {"mode": "nearest", "scale": [2.0, 2.0]},
         {"scale_factor": 2.0, "mode": "nearest"}),
        ("nearest_down_3x4", {"mode": "nearest", "size": [3, 4]},
         {"size": (3, 4), "mode": "nearest"}),
        ("bilinear_size_8x11", {"mode": "bilinear", "align_corners": False, "size": [8, 11]},
         {"size": (8, 11), "mode": "bilinear", "align_corners": False}),
        ("bilinear_corners_size_8x11",
         {"mode": "bilinear", "align_corners": True, "size": [8, 11]},
         {"size": (8, 11), "mode": "bilinear", "align_corners": True}),
        ("bilinear_scale_1_5", {"mode": "bilinear", "align_corners": False, "scale": [1.5, 1.5]},
         {"scale_factor": 1.5, "mode": "bilinear", "align_corners": False}),
        ("bilinear_corners_scale2",
         {"mode": "bilinear", "align_corners": True, "scale": [2.0, 2.0]},
         {"scale_factor": 2.0, "mode": "bilinear", "align_corners": True}),
        ("bilinear_down_3x4", {"mode": "bilinear", "align_corners": False, "size": [3, 4]},
         {"size": (3, 4), "mode": "bilinear", "align_corners": False}),
    ]:
        case("interpolate_" + name, "interpolate", cfg, [x],
             lambda x, kwargs=kwargs: F.interpolate(x, **kwargs))

    g = gen()
    x = g.randn(2, 3, 7, 9)
    case("adaptive_max_pool2d_7x9_to_3x4", "adaptive_max_pool2d", {"output_size": [3, 4]}, [x],
         lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True))
    g = gen()
    x = g.randint(3, 1, 2, 5, 6)
    case("adaptive_max_pool2d_ties", "adaptive_max_pool2d", {"output_size": [2, 4]}, [x],
         lambda x: F.adaptive_max_pool2d(x, (2, 4), return_indices=True))

    g = gen()
    x, w, b = g.randn(2, 6, 4, 5), g.randn(6), g.randn(6)
    case("group_norm_affine", "group_norm", {"num_groups": 3, "eps": 1e-5}, [x, w, b],
         lambda x, w, b: F.group_norm(x, 3, w, b, 1e-5))
    g = gen()
    x = g.randn(3, 4, 7)
    case("group_norm_plain_rank3", "group_norm", {"num_groups": 2, "eps": 1e-3}, [x],
         lambda x: F.group_norm(x, 2, eps=1e-3))


def main():
    cases()
    with open(OUT_PATH, "w") as f:
        json.dump({"torch": torch.__version__, "cases": CASES}, f)
        f.write("\n")
    print(f"wrote {len(CASES)} cases to {OUT_PATH}")


if __name__ == "__main__":
    main()
