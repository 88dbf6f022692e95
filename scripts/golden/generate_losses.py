#!/usr/bin/env python3
"""Generate PyTorch golden values for anygrad-nn's losses of issue 15 (second part).

What: writes `crates/nn/tests/golden/losses.json`: KLDivLoss (every reduction, log_target),
class-weighted cross-entropy (mean / sum / none, with ignore_index and with label smoothing,
class-index and probability targets) and BCELoss at predictions exactly 0 and 1 (finite
gradients: PyTorch clamps the log at -100 and the gradient's denominator at 1e-12). Each case
holds the inputs, the options, the output and the gradient of `(out * upstream).sum()` with
respect to the input. The Rust test `crates/nn/tests/loss_golden.rs` replays it.

How to run: with a Python that has torch, `python scripts/golden/generate_losses.py`.
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(4321)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates", "nn",
                   "tests", "golden", "losses.json")


def enc(t):
    t = t.detach()
    if t.dtype.is_floating_point:
        data = [float(f"{v:.8g}") for v in t.reshape(-1).tolist()]
    else:
        data = [int(v) for v in t.reshape(-1).tolist()]
    return {"shape": list(t.shape), "data": data}


cases = []


def case(name, fn, x, target, options, weight=None):
    x = x.clone().requires_grad_(True)
    out = fn(x, target)
    upstream = torch.randn_like(out)
    (out * upstream).sum().backward()
    entry = {"name": name, "options": options, "input": enc(x), "target": enc(target),
             "output": enc(out), "upstream": enc(upstream), "grad_input": enc(x.grad)}
    if weight is not None:
        entry["weight"] = enc(weight)
    cases.append(entry)


# KL divergence: input is log-probabilities; target probabilities or log-probabilities.
log_q = torch.log_softmax(torch.randn(4, 5), 1)
p = torch.softmax(torch.randn(4, 5), 1)
p[0, 1] = 0.0  # a zero target contributes 0 (not NaN)
for red in ["none", "sum", "mean", "batchmean"]:
    case(f"kl_div_{red}", lambda x, t, red=red: F.kl_div(x, t, reduction=red), log_q, p,
         {"type": "kl_div", "reduction": red, "log_target": False})
log_p = torch.log_softmax(torch.randn(4, 5), 1)
for red in ["batchmean", "none"]:
    case(f"kl_div_log_target_{red}", lambda x, t, red=red: F.kl_div(x, t, reduction=red, log_target=True),
         log_q, log_p, {"type": "kl_div", "reduction": red, "log_target": True})

# Class-weighted cross-entropy.
logits = torch.randn(6, 4) * 2
labels = torch.tensor([0, 3, 2, 2, 1, 3])
weight = torch.tensor([0.5, 2.0, 1.0, 3.0])
for red in ["mean", "sum", "none"]:
    case(f"cross_entropy_weight_{red}", lambda x, t, red=red: F.cross_entropy(x, t, weight=weight, reduction=red),
         logits, labels, {"type": "cross_entropy", "reduction": red}, weight)
ignored = torch.tensor([0, -100, 2, 2, 1, -100])
case("cross_entropy_weight_ignore", lambda x, t: F.cross_entropy(x, t, weight=weight, ignore_index=-100),
     logits, ignored, {"type": "cross_entropy", "reduction": "mean", "ignore_index": -100}, weight)
case("cross_entropy_weight_ignore_smooth",
     lambda x, t: F.cross_entropy(x, t, weight=weight, ignore_index=-100, label_smoothing=0.2),
     logits, ignored, {"type": "cross_entropy", "reduction": "mean", "ignore_index": -100, "label_smoothing": 0.2},
     weight)
image_logits = torch.randn(2, 4, 3)
image_labels = torch.tensor([[0, 1, 3], [2, 2, 0]])
case("cross_entropy_weight_spatial", lambda x, t: F.cross_entropy(x, t, weight=weight),
     image_logits, image_labels, {"type": "cross_entropy", "reduction": "mean"}, weight)
probabilities = torch.softmax(torch.randn(6, 4), 1)
case("cross_entropy_weight_probs", lambda x, t: F.cross_entropy(x, t, weight=weight, label_smoothing=0.1),
     logits, probabilities, {"type": "cross_entropy", "reduction": "mean", "label_smoothing": 0.1}, weight)

# BCE on probabilities with predictions exactly 0 and 1 (and targets on both sides).
prediction = torch.tensor([0.0, 0.0, 1.0, 1.0, 0.3, 0.9, 0.0, 1.0])
target = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.25, 0.75])
for red in ["mean", "none"]:
    case(f"bce_saturated_{red}", lambda x, t, red=red: F.binary_cross_entropy(x, t, reduction=red),
         prediction, target, {"type": "bce", "reduction": red})

with open(OUT, "w") as f:
    json.dump({"generator": "scripts/golden/generate_losses.py", "torch_version": torch.__version__,
               "cases": cases}, f)
    f.write("\n")
print(f"wrote {len(cases)} cases -> {OUT}")
