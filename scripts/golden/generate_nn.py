#!/usr/bin/env python3
"""Generate golden values for anygrad-nn from PyTorch.

Writes crates/nn/tests/golden/nn_layers.json: for each layer its parameters, input, output
and the gradients (input and parameters) of `(out * upstream).sum()`; for each loss its
inputs, options, output and input gradient; the first steps of each optimizer on a tiny
quadratic problem; and learning-rate schedules. Run once with a torch venv:

    /tmp/torchenv/bin/python scripts/golden/generate_nn.py

The Rust test crates/nn/tests/golden.rs reads the file; `cargo test` never needs Python.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1234)
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "crates", "nn", "tests", "golden", "nn_layers.json")


def enc(t):
    t = t.detach()
    if t.dtype.is_floating_point:
        data = [float(f"{v:.8g}") for v in t.reshape(-1).tolist()]
    else:
        data = [int(v) for v in t.reshape(-1).tolist()]
    return {"shape": list(t.shape), "data": data}


def layer_case(name, module, x, config, train=True, preset=None, int_input=False):
    """Run `module` on `x`, backward `(out * upstream).sum()`, record everything."""
    if preset:
        with torch.no_grad():
            for key, value in preset.items():
                dict(module.named_buffers())[key].copy_(value)
    module.train(train)
    params_before = {k: enc(v) for k, v in module.named_parameters()}
    buffers_before = {k: enc(v) for k, v in module.named_buffers()}
    if not int_input:
        x = x.clone().requires_grad_(True)
    out = module(x)
    upstream = torch.randn_like(out)
    (out * upstream).sum().backward()
    case = {
        "name": name,
        "config": config,
        "train": train,
        "params": params_before,
        "buffers": buffers_before,
        "input": enc(x),
        "upstream": enc(upstream),
        "output": enc(out),
        "grad_params": {k: enc(v.grad) for k, v in module.named_parameters() if v.grad is not None},
        "buffers_after": {k: enc(v) for k, v in module.named_buffers()},
    }
    if not int_input:
        case["grad_input"] = enc(x.grad)
    return case


def randomize_affine(bn):
    with torch.no_grad():
        if bn.weight is not None:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return bn


layers = []
r = torch.randn
layers.append(layer_case("linear", nn.Linear(5, 3), r(4, 5), {"type": "linear", "in": 5, "out": 3, "bias": True}))
layers.append(layer_case("linear_nobias", nn.Linear(5, 3, bias=False), r(2, 3, 5), {"type": "linear", "in": 5, "out": 3, "bias": False}))

conv_specs = [
    ("conv2d_basic", dict(in_channels=3, out_channels=4, kernel_size=3), (2, 3, 6, 6)),
    ("conv2d_stride_pad", dict(in_channels=3, out_channels=4, kernel_size=3, stride=2, padding=1), (2, 3, 7, 7)),
    ("conv2d_dilation", dict(in_channels=2, out_channels=3, kernel_size=3, dilation=2, padding=2), (1, 2, 7, 6)),
    ("conv2d_groups_nobias", dict(in_channels=4, out_channels=6, kernel_size=3, padding=1, groups=2, bias=False), (2, 4, 5, 5)),
    ("conv2d_rect", dict(in_channels=2, out_channels=2, kernel_size=(1, 3), stride=(2, 1), padding=(0, 1)), (1, 2, 5, 4)),
]
for name, kw, shape in conv_specs:
    conv = nn.Conv2d(**kw)
    ks = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    pair = lambda v: list(v) if isinstance(v, tuple) else [v, v]
    config = {
        "type": "conv2d", "in": kw["in_channels"], "out": kw["out_channels"], "kernel": list(ks),
        "stride": pair(kw.get("stride", 1)), "padding": pair(kw.get("padding", 0)),
        "dilation": pair(kw.get("dilation", 1)), "groups": kw.get("groups", 1), "bias": kw.get("bias", True),
    }
    layers.append(layer_case(name, conv, r(*shape), config))

layers.append(layer_case("batchnorm2d_train", randomize_affine(nn.BatchNorm2d(3)), r(4, 3, 5, 5) * 2 + 1,
                         {"type": "batchnorm2d", "features": 3}))
layers.append(layer_case("batchnorm2d_train_preset", randomize_affine(nn.BatchNorm2d(3)), r(2, 3, 4, 4),
                         {"type": "batchnorm2d", "features": 3},
                         preset={"running_mean": r(3), "running_var": torch.rand(3) + 0.5,
                                 "num_batches_tracked": torch.tensor(5)}))
layers.append(layer_case("batchnorm2d_eval", randomize_affine(nn.BatchNorm2d(3)), r(2, 3, 4, 4),
                         {"type": "batchnorm2d", "features": 3}, train=False,
                         preset={"running_mean": r(3), "running_var": torch.rand(3) + 0.5}))
layers.append(layer_case("batchnorm1d_train", randomize_affine(nn.BatchNorm1d(4)), r(8, 4) * 3 - 1,
                         {"type": "batchnorm1d", "features": 4}))
layers.append(layer_case("batchnorm1d_train_3d", randomize_affine(nn.BatchNorm1d(3)), r(4, 3, 5),
                         {"type": "batchnorm1d", "features": 3}))
layers.append(layer_case("batchnorm1d_eval", randomize_affine(nn.BatchNorm1d(4)), r(6, 4),
                         {"type": "batchnorm1d", "features": 4}, train=False,
                         preset={"running_mean": r(4), "running_var": torch.rand(4) + 0.5}))

ln = nn.LayerNorm(6)
with torch.no_grad():
    ln.weight.uniform_(0.5, 1.5)
    ln.bias.uniform_(-0.5, 0.5)
layers.append(layer_case("layernorm", ln, r(3, 4, 6), {"type": "layernorm", "shape": [6]}))
ln2 = nn.LayerNorm([4, 6])
with torch.no_grad():
    ln2.weight.uniform_(0.5, 1.5)
    ln2.bias.uniform_(-0.5, 0.5)
layers.append(layer_case("layernorm_2d", ln2, r(2, 4, 6) * 2, {"type": "layernorm", "shape": [4, 6]}))

layers.append(layer_case("embedding", nn.Embedding(10, 4), torch.tensor([[1, 3, 3], [9, 0, 1]]),
                         {"type": "embedding", "num": 10, "dim": 4}, int_input=True))

pool_specs = [
    ("maxpool2d_k2", nn.MaxPool2d(2), {"type": "maxpool2d", "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]}, (2, 2, 6, 6)),
    ("maxpool2d_k3s2p1", nn.MaxPool2d(3, 2, 1), {"type": "maxpool2d", "kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]}, (1, 2, 7, 7)),
    ("avgpool2d_k2", nn.AvgPool2d(2), {"type": "avgpool2d", "kernel": [2, 2], "stride": [2, 2], "padding": [0, 0]}, (2, 2, 6, 6)),
    ("avgpool2d_k3s1p1", nn.AvgPool2d(3, 1, 1), {"type": "avgpool2d", "kernel": [3, 3], "stride": [1, 1], "padding": [1, 1]}, (1, 2, 5, 5)),
    ("adaptive_avgpool_1x1", nn.AdaptiveAvgPool2d((1, 1)), {"type": "adaptive_avgpool2d", "output": [1, 1]}, (2, 3, 5, 5)),
    ("adaptive_avgpool_2x3", nn.AdaptiveAvgPool2d((2, 3)), {"type": "adaptive_avgpool2d", "output": [2, 3]}, (1, 2, 4, 6)),
    ("adaptive_avgpool_3x2_uneven", nn.AdaptiveAvgPool2d((3, 2)), {"type": "adaptive_avgpool2d", "output": [3, 2]}, (1, 2, 5, 5)),
]
for name, module, config, shape in pool_specs:
    layers.append(layer_case(name, module, r(*shape), config))

act_specs = [
    ("relu", nn.ReLU(), {"type": "relu"}),
    ("gelu", nn.GELU(), {"type": "gelu"}),
    ("silu", nn.SiLU(), {"type": "silu"}),
    ("sigmoid", nn.Sigmoid(), {"type": "sigmoid"}),
    ("tanh", nn.Tanh(), {"type": "tanh"}),
    ("softmax_dim1", nn.Softmax(dim=1), {"type": "softmax", "dim": 1}),
    ("softmax_dim_last", nn.Softmax(dim=-1), {"type": "softmax", "dim": -1}),
    ("flatten", nn.Flatten(), {"type": "flatten"}),
]
for name, module, config in act_specs:
    layers.append(layer_case(name, module, r(3, 4, 5) * 3, config))

# ---- losses ----
losses = []


def loss_case(name, fn, x, target, options, grad=True):
    x = x.clone().requires_grad_(True)
    out = fn(x, target)
    upstream = torch.randn_like(out)
    (out * upstream).sum().backward()
    return {"name": name, "options": options, "input": enc(x), "target": enc(target),
            "output": enc(out), "upstream": enc(upstream), "grad_input": enc(x.grad)}


logits = r(6, 5) * 2
labels = torch.tensor([0, 4, 2, 2, 1, 3])
for red in ["mean", "sum", "none"]:
    losses.append(loss_case(f"cross_entropy_{red}", lambda x, t, red=red: F.cross_entropy(x, t, reduction=red),
                            logits, labels, {"type": "cross_entropy", "reduction": red}))
for red in ["mean", "none"]:
    losses.append(loss_case(f"cross_entropy_smooth_{red}",
                            lambda x, t, red=red: F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
                            logits, labels, {"type": "cross_entropy", "reduction": red, "label_smoothing": 0.1}))
ign = torch.tensor([0, -100, 2, 2, -100, 3])
losses.append(loss_case("cross_entropy_ignore_smooth", lambda x, t: F.cross_entropy(x, t, ignore_index=-100, label_smoothing=0.2),
                        logits, ign, {"type": "cross_entropy", "reduction": "mean", "label_smoothing": 0.2, "ignore_index": -100}))
probs = torch.softmax(r(6, 5), dim=1)
losses.append(loss_case("cross_entropy_probs", lambda x, t: F.cross_entropy(x, t), logits, probs,
                        {"type": "cross_entropy", "reduction": "mean"}))
logp = torch.log_softmax(r(6, 5), dim=1)
for red in ["mean", "sum", "none"]:
    losses.append(loss_case(f"nll_{red}", lambda x, t, red=red: F.nll_loss(x, t, reduction=red), logp, labels,
                            {"type": "nll", "reduction": red}))
pred, tgt = r(4, 3), r(4, 3)
for red in ["mean", "sum", "none"]:
    losses.append(loss_case(f"mse_{red}", lambda x, t, red=red: F.mse_loss(x, t, reduction=red), pred, tgt,
                            {"type": "mse", "reduction": red}))
bl = torch.cat([r(10) * 3, torch.tensor([40.0, -40.0, 0.0])])
bt = torch.cat([(torch.rand(10) > 0.5).float(), torch.tensor([0.0, 1.0, 0.5])])
for red in ["mean", "sum", "none"]:
    losses.append(loss_case(f"bce_logits_{red}", lambda x, t, red=red: F.binary_cross_entropy_with_logits(x, t, reduction=red),
                            bl, bt, {"type": "bce_with_logits", "reduction": red}))
pw_logits, pw_target = r(4, 3), (torch.rand(4, 3) > 0.5).float()
pos_weight = torch.tensor([0.5, 2.0, 3.0])
c = loss_case("bce_logits_pos_weight", lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=pos_weight),
              pw_logits, pw_target, {"type": "bce_with_logits", "reduction": "mean"})
c["pos_weight"] = enc(pos_weight)
losses.append(c)

# ---- optimizers on 0.5 * sum(a * (p - c)^2) ----
optimizers = []
a = torch.tensor([1.0, 2.0, 0.5, 3.0])
center = torch.tensor([0.5, -1.0, 2.0, 0.0])
p_init = torch.tensor([1.5, 0.3, -0.7, 2.0])
opt_specs = [
    ("sgd_plain", lambda p: torch.optim.SGD([p], lr=0.1), {"type": "sgd", "lr": 0.1}),
    ("sgd_momentum_dampening_wd", lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
     {"type": "sgd", "lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("sgd_nesterov_wd", lambda p: torch.optim.SGD([p], lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
     {"type": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("adam", lambda p: torch.optim.Adam([p], lr=0.1), {"type": "adam", "lr": 0.1}),
    ("adam_wd_amsgrad", lambda p: torch.optim.Adam([p], lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True),
     {"type": "adam", "lr": 0.05, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}),
    ("adamw", lambda p: torch.optim.AdamW([p], lr=0.1, weight_decay=0.1), {"type": "adamw", "lr": 0.1, "weight_decay": 0.1}),
]
for name, make, options in opt_specs:
    p = p_init.clone().requires_grad_(True)
    opt = make(p)
    steps = []
    for _ in range(4):
        opt.zero_grad()
        loss = (0.5 * a * (p - center) ** 2).sum()
        loss.backward()
        opt.step()
        steps.append(enc(p))
    optimizers.append({"name": name, "options": options, "a": enc(a), "center": enc(center),
                       "init": enc(p_init), "steps": steps})

# ---- schedulers ----
schedulers = []
for name, make, options in [
    ("step_lr", lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), {"type": "step", "step_size": 3, "gamma": 0.5}),
    ("cosine", lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=8, eta_min=0.01), {"type": "cosine", "t_max": 8, "eta_min": 0.01}),
]:
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.2)
    sched = make(opt)
    lrs = []
    for _ in range(12):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    schedulers.append({"name": name, "options": options, "base_lr": 0.2, "lrs": lrs})

# ---- a PyTorch state dict as safetensors (written by hand: 8-byte header length, JSON
# header, raw little-endian data), to check that PyTorch weights load unchanged ----
import struct

torch.manual_seed(7)
net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
net.train()
for _ in range(3):
    net(torch.randn(8, 3))
net.eval()
net_input = torch.randn(5, 3)
with torch.no_grad():
    net_output = net(net_input)
DT = {torch.float32: "F32", torch.int64: "I64"}
header, blobs, offset = {}, [], 0
for key, value in net.state_dict().items():
    raw = value.contiguous().numpy().tobytes()
    header[key] = {"dtype": DT[value.dtype], "shape": list(value.shape), "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
header["__metadata__"] = {"format": "pt"}
header_bytes = json.dumps(header, separators=(",", ":")).encode()
header_bytes += b" " * ((8 - len(header_bytes) % 8) % 8)
st_path = os.path.join(os.path.dirname(OUT), "torch_state.safetensors")
with open(st_path, "wb") as f:
    f.write(struct.pack("<Q", len(header_bytes)))
    f.write(header_bytes)
    for raw in blobs:
        f.write(raw)
torch_state = {"input": enc(net_input), "output": enc(net_output),
               "num_batches_tracked": int(net.state_dict()["1.num_batches_tracked"])}

result = {"torch_version": torch.__version__, "layers": layers, "losses": losses,
          "optimizers": optimizers, "schedulers": schedulers,
          "torch_state": torch_state}
with open(OUT, "w") as f:
    json.dump(result, f, separators=(",", ":"))
print(f"wrote {OUT}: {os.path.getsize(OUT)} bytes")
