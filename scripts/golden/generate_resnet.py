#!/usr/bin/env python3
"""Generate the ResNet-18 and ResNet-50 golden files from torchvision, with formula weights.

Every state-dict entry (parameters *and* buffers) of torchvision's `resnet18(num_classes=1000)`
(or `resnet50(num_classes=1000)`) is filled by a deterministic formula that
crates/models/tests/resnet_golden.rs computes identically, so no weight file is committed. For the tensor named `name` with `n` elements
and flat (row-major) index `i`:

    h    = (sum of the UTF-8 bytes of name) mod 1000
    t    = 43758.5453 * sin(0.37 * i + 0.11 * h)    # float64, libm sin
    s[i] = 2 * (t - floor(t)) - 1                    # pseudo-random in [-1, 1)

    rank >= 2 weight (conv, fc):  s[i] * sqrt(3 / fan_in)   fan_in = n / shape[0]
    rank 1 `*.weight` (BN gamma): 1 + 0.1 * s[i]
    `fc.bias`:                    0.01 * s[i]
    other rank 1 `*.bias` (BN):   0.1 * s[i]
    `*.running_mean`:             0.05 * s[i]
    `*.running_var`:              1 + 0.2 * |s[i]|
    `*.num_batches_tracked`:      0

each evaluated in float64 and rounded once to float32. (A plain `sin(0.37 * i + ...)` would
make every weight matrix rank 2 — row o is sin(a_o + b_k) — and the network nearly blind to
its input; the `fract(43758.5453 * sin)` hash gives full-rank, white-noise-like weights with
variance 1/fan_in, like a random init, so the logits depend strongly on the input.)

The input is a [2, 3, 64, 64] batch with x[i] = 0.5 * sin(0.01 * i) + 0.25 * cos(0.003 * i)
over the flat index of the whole batch (float64, rounded to float32). The model runs in eval
mode (BatchNorm uses the running statistics) in float32 on the CPU.

Writes crates/models/tests/golden/<model>.json (resnet18.json, resnet50.json): the formula
parameters, [sum, sum |w|] of
every formula tensor (so formula drift is told apart from a forward bug), the logits
([2, 1000]), and per-stage statistics (mean, std, max |x| per image after the stem
conv1+bn1+relu, maxpool, layer1..layer4, and the pooled features) to localize a mismatch.
Run once per model with a torch venv (torchvision is used when importable; otherwise an
inline copy of torchvision's ResNet-18/50 with the same module names); the model argument
defaults to resnet18:

    /tmp/torchenv/bin/python scripts/golden/generate_resnet.py resnet18
    /tmp/torchenv/bin/python scripts/golden/generate_resnet.py resnet50

(ResNet-50's 25.6 million formula values take about a minute of pure Python; its golden file
is about 50 kB, like ResNet-18's 33 kB: sums, statistics and logits, no weights.)

(The committed resnet18.json was made with torch 2.15.0 and torchvision 0.29.2 installed with
`pip install --no-deps --target /tmp/tv torchvision==0.29.2 pillow` and `PYTHONPATH=/tmp/tv`,
as no torchvision for torch 2.15 existed; only its Python model code is used. The inline copy
gives bitwise-identical results.)

`cargo test -p anygrad-models --test resnet_golden` never needs Python.
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn

GOLDEN_DIR = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "..", "crates", "models", "tests", "golden",
)
MODELS = ("resnet18", "resnet50")

WEIGHT_FREQ = 0.37
NAME_PHASE = 0.11
HASH_SCALE = 43758.5453
INPUT_SHAPE = [2, 3, 64, 64]


def name_hash(name):
    return sum(name.encode("utf-8")) % 1000


def formula(name, shape):
    """The formula tensor for state-dict entry `name` of `shape` (see the module docstring)."""
    n = math.prod(shape)
    if name.endswith("num_batches_tracked"):
        return torch.zeros(shape, dtype=torch.int64)
    phase = NAME_PHASE * name_hash(name)
    s = []
    for i in range(n):
        t = HASH_SCALE * math.sin(WEIGHT_FREQ * i + phase)
        s.append(2.0 * (t - math.floor(t)) - 1.0)
    if len(shape) >= 2:
        scale = math.sqrt(3.0 / (n // shape[0]))
        v = [x * scale for x in s]
    elif name.endswith("running_mean"):
        v = [0.05 * x for x in s]
    elif name.endswith("running_var"):
        v = [1.0 + 0.2 * abs(x) for x in s]
    elif name == "fc.bias":
        v = [0.01 * x for x in s]
    elif name.endswith("weight"):
        v = [1.0 + 0.1 * x for x in s]
    elif name.endswith("bias"):
        v = [0.1 * x for x in s]
    else:
        raise ValueError(f"no formula for {name}")
    return torch.tensor(v, dtype=torch.float64).to(torch.float32).reshape(shape)


def input_batch():
    n = math.prod(INPUT_SHAPE)
    v = [0.5 * math.sin(0.01 * i) + 0.25 * math.cos(0.003 * i) for i in range(n)]
    return torch.tensor(v, dtype=torch.float64).to(torch.float32).reshape(INPUT_SHAPE)


# --- torchvision's ResNet-18 and ResNet-50, inline (used only when torchvision is not importable)
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """torchvision's v1.5 bottleneck: the stride sits on the 3x3 convolution."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], 2)
        self.layer3 = self._make_layer(block, 256, layers[2], 2)
        self.layer4 = self._make_layer(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


INLINE = {
    "resnet18": lambda: ResNet(BasicBlock, [2, 2, 2, 2], 1000),
    "resnet50": lambda: ResNet(Bottleneck, [3, 4, 6, 3], 1000),
}


def build_model(name):
    try:
        import torchvision

        model = getattr(torchvision.models, name)(num_classes=1000)
        return model, f"torchvision {torchvision.__version__}"
    except ImportError:
        return INLINE[name](), f"inline copy of torchvision's {name}"


def stats(t):
    """[mean, std (population), max |x|] per image."""
    flat = t.detach().to(torch.float64).reshape(t.shape[0], -1)
    return [
        [float(f"{v:.9g}") for v in (row.mean().item(), row.std(unbiased=False).item(), row.abs().max().item())]
        for row in flat
    ]


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    if name not in MODELS or len(sys.argv) > 2:
        sys.exit(f"usage: generate_resnet.py [{' | '.join(MODELS)}]")
    out = os.path.join(GOLDEN_DIR, f"{name}.json")
    model, source = build_model(name)
    state = model.state_dict()
    filled = {key: formula(key, list(t.shape)).to(t.dtype) for key, t in state.items()}
    model.load_state_dict(filled, strict=True)
    model.eval()
    x = input_batch()
    stages = {}
    with torch.no_grad():
        h = model.relu(model.bn1(model.conv1(x)))
        stages["stem"] = stats(h)
        h = model.maxpool(h)
        stages["maxpool"] = stats(h)
        for layer in ["layer1", "layer2", "layer3", "layer4"]:
            h = getattr(model, layer)(h)
            stages[layer] = stats(h)
        features = torch.flatten(model.avgpool(h), 1)
        stages["features"] = stats(features)
        logits = model.fc(features)
        direct = model(x)
    assert torch.equal(logits, direct), "staged forward differs from model(x)"
    golden = {
        "model": name,
        "num_classes": 1000,
        "source": f"{source}, torch {torch.__version__}, float32 CPU, eval mode",
        "weight_formula": {
            "freq": WEIGHT_FREQ,
            "name_phase": NAME_PHASE,
            "hash_scale": HASH_SCALE,
            "text": "t = hash_scale*sin(freq*i + name_phase*(sum(name bytes) % 1000)); s = 2*(t-floor(t))-1; "
            "rank>=2: s*sqrt(3/fan_in); "
            "rank-1 weight: 1+0.1s; fc.bias: 0.01s; other bias: 0.1s; running_mean: 0.05s; "
            "running_var: 1+0.2|s|; num_batches_tracked: 0",
        },
        "input": {
            "shape": INPUT_SHAPE,
            "text": "x[i] = 0.5*sin(0.01*i) + 0.25*cos(0.003*i), flat index over the whole batch",
        },
        "weight_sums": {
            key: [float(f"{t.double().sum().item():.12g}"), float(f"{t.double().abs().sum().item():.12g}")]
            for key, t in filled.items()
        },
        "stage_order": ["stem", "maxpool", "layer1", "layer2", "layer3", "layer4", "features"],
        "stages": stages,
        "output_shape": list(logits.shape),
        "output": [float(f"{v:.9g}") for v in logits.reshape(-1).tolist()],
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {os.path.normpath(out)} ({os.path.getsize(out)} bytes) using {source}")
    print("logits: max|y| =", logits.abs().max().item(), " std =", logits.std().item())
    for k, v in stages.items():
        print(f"  {k:9s} {v}")


if __name__ == "__main__":
    main()
