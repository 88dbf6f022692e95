"""``nn``: Modules subclassed in Python (registration, traversal, state dicts, modes,
devices, hooks), the layers and losses against numpy, and PyTorch's initialisations."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.blocks = nn.ModuleList([nn.Linear(64, 8), nn.Linear(8, 8)])
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(8, 3))
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))
        self.plain = 5

    def forward(self, x):
        x = F.max_pool2d(self.bn(self.conv(x)).relu(), 2).flatten(1)
        for block in self.blocks:
            x = block(x)
        return self.head(x) * self.scale


def test_attributes_register_in_pytorch_order():
    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == [
        "scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "blocks.0.weight", "blocks.0.bias",
        "blocks.1.weight", "blocks.1.bias", "head.1.weight", "head.1.bias",
    ]
    assert [name for name, _ in net.named_children()] == ["conv", "bn", "blocks", "head"]
    assert len(list(net.modules())) == 9
    keys = list(net.state_dict().keys())
    assert "steps" in keys and "bn.running_mean" in keys and "bn.num_batches_tracked" in keys
    assert net.plain == 5 and isinstance(net.blocks[1], nn.Linear)


def test_parameters_match_pytorch_order_for_a_plain_net():
    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(2, 3)
            self.fc2 = nn.Linear(3, 1)

    assert [n for n, _ in Plain().named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


def test_forward_backward_train_eval_and_zero_grad(device):
    net = Net().to(device)
    assert all(p.device == torch.device(device) for p in net.parameters())
    x = torch.randn(2, 1, 8, 8, device=device)
    out = net(x)
    assert tuple(out.shape) == (2, 3)
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.eval()
    assert not net.training and not net.bn.training and not net.blocks[0].training
    net.train()
    assert net.head[1].training
    assert net.bn.num_batches_tracked.item() == 1


def test_state_dict_round_trip_and_strict_loading(tmp_path):
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert pa.tolist() == pb.tolist(), name
    state = a.state_dict()
    del state["conv.bias"]
    state["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key.*"conv.bias"'):
        b.load_state_dict(state)
    result = b.load_state_dict(state, strict=False)
    assert result.missing_keys == ["conv.bias"] and result.unexpected_keys == ["extra"]
    bad = a.state_dict()
    bad["conv.weight"] = torch.zeros(1, 1)
    with pytest.raises(RuntimeError, match="size mismatch for conv.weight"):
        b.load_state_dict(bad)
    path = tmp_path / "net.pt"
    torch.save(a.state_dict(), path)
    c = Net()
    c.load_state_dict(torch.load(path))
    assert c.conv.weight.tolist() == a.conv.weight.tolist()


def test_apply_and_forward_hooks():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and "Linear" in seen

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    net.apply(init)
    assert net.blocks[0].bias.tolist() == [0.0] * 8
    calls = []
    handle = net.head.register_forward_hook(lambda m, args, out: calls.append(tuple(out.shape)))
    net(torch.randn(1, 1, 8, 8))
    handle.remove()
    net(torch.randn(1, 1, 8, 8))
    assert calls == [(1, 3)]
    doubled = net.head.register_forward_hook(lambda m, args, out: out * 0)
    assert net(torch.randn(1, 1, 8, 8)).abs().sum().item() == 0
    doubled.remove()


def test_sequential_from_ordered_dict_and_indexing():
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert [n for n, _ in seq.named_parameters()] == ["fc.weight", "fc.bias"]
    assert isinstance(seq[1], nn.Tanh) and len(seq) == 2
    assert "Linear(in_features=2, out_features=2, bias=True)" in repr(seq)


def test_default_initialisation_follows_pytorch():
    torch.manual_seed(0)
    linear = nn.Linear(400, 50)
    bound = 1 / math.sqrt(400)
    w = linear.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    conv = nn.Conv2d(8, 16, 3)
    bound = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= bound
    assert nn.BatchNorm2d(3).weight.tolist() == [1.0] * 3 and nn.LayerNorm(3).bias.tolist() == [0.0] * 3
    emb = nn.Embedding(1000, 8).weight.detach().numpy()
    assert abs(emb.std() - 1) < 0.1


def test_layers_match_numpy(device):
    x = np.random.RandomState(0).randn(2, 3, 6, 6).astype(np.float32)
    t = torch.tensor(x, device=device)
    assert_close(nn.MaxPool2d(2)(t), x.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    assert_close(nn.AvgPool2d(2)(t), x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
    assert_close(nn.AdaptiveAvgPool2d((1, 1))(t), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    assert_close(nn.AdaptiveAvgPool2d(3)(t), x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
    assert_close(nn.Flatten()(t), x.reshape(2, -1))
    bn = nn.BatchNorm2d(3).to(device)
    mean, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    assert_close(bn(t), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    assert_close(bn.running_mean, 0.1 * mean.reshape(-1), rtol=1e-4, atol=1e-6)
    n = x.size // 3
    assert_close(bn.running_var, 0.9 + 0.1 * var.reshape(-1) * n / (n - 1), rtol=1e-4)
    bn.eval()
    assert_close(bn(t), (x - bn.running_mean.cpu().numpy().reshape(1, 3, 1, 1)) / np.sqrt(bn.running_var.cpu().numpy().reshape(1, 3, 1, 1) + 1e-5), rtol=1e-4, atol=1e-4)
    ln = nn.LayerNorm(6).to(device)
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    assert_close(ln(t), (x - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-4)
    rms = nn.RMSNorm(6).to(device)
    rms.weight.data = torch.arange(6, device=device).float() / 5 + 0.5
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    expected = expected * (np.arange(6) / 5 + 0.5)
    assert_close(rms(t), expected, rtol=1e-4, atol=1e-5)
    assert_close(F.rms_norm(t, (6,), eps=1e-3), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-3), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        assert_close(rms(t), expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="rms_norm"):
        F.rms_norm(t, (5,))
    lin = nn.Linear(6, 4).to(device)
    assert_close(lin(t), x @ lin.weight.detach().cpu().numpy().T + lin.bias.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    assert_close(nn.ReLU()(t), np.maximum(x, 0))
    assert_close(nn.Sigmoid()(t), 1 / (1 + np.exp(-x)), rtol=1e-5)
    assert_close(nn.Softmax(dim=1)(t), np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5)
    gelu = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    assert_close(nn.GELU()(t), gelu, rtol=1e-4, atol=1e-5)
    assert_close(nn.SiLU()(t), x / (1 + np.exp(-x)), rtol=1e-4, atol=1e-6)
    d = nn.Dropout(0.5)
    kept = d(torch.ones(1000, device=device)).cpu().numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept > 0).sum() < 700
    d.eval()
    assert d(torch.ones(3, device=device)).tolist() == [1.0, 1.0, 1.0]
    emb = nn.Embedding(5, 2).to(device)
    idx = torch.tensor([[0, 4], [1, 1]], device=device)
    assert_close(emb(idx), emb.weight.detach().cpu().numpy()[[[0, 4], [1, 1]]])


def test_conv2d_matches_a_direct_numpy_convolution(device):
    rng = np.random.RandomState(1)
    x = rng.randn(1, 2, 5, 5).astype(np.float32)
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1).to(device)
    w, b = conv.weight.detach().cpu().numpy(), conv.bias.detach().cpu().numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((1, 3, 3, 3), dtype=np.float32)
    for o in range(3):
        for i in range(3):
            for j in range(3):
                expected[0, o, i, j] = (padded[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] * w[o]).sum() + b[o]
    assert_close(conv(torch.tensor(x, device=device)), expected, rtol=1e-4, atol=1e-5)


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_losses_match_numpy(device):
    rng = np.random.RandomState(2)
    logits = rng.randn(6, 4).astype(np.float32)
    labels = np.array([0, 3, 1, 1, 2, 0])
    z, y = torch.tensor(logits, device=device), torch.tensor(labels, device=device)
    logp = _log_softmax(logits)
    nll = -logp[np.arange(6), labels]
    assert_close(nn.CrossEntropyLoss()(z, y), nll.mean(), rtol=1e-5)
    assert_close(F.cross_entropy(z, y, reduction="sum"), nll.sum(), rtol=1e-5)
    assert_close(F.cross_entropy(z, y, reduction="none"), nll, rtol=1e-5)
    weight = np.array([1.0, 2.0, 0.5, 1.0], dtype=np.float32)
    w = weight[labels]
    assert_close(F.cross_entropy(z, y, weight=torch.tensor(weight, device=device)), (nll * w).sum() / w.sum(), rtol=1e-5)
    assert_close(nn.NLLLoss()(F.log_softmax(z, dim=1), y), nll.mean(), rtol=1e-5)
    ignored = labels.copy()
    ignored[0] = -100
    assert_close(F.cross_entropy(z, torch.tensor(ignored, device=device)), nll[1:].mean(), rtol=1e-5)
    smooth = 0.1
    expected = ((1 - smooth) * nll - smooth * logp.mean(1)).mean()
    assert_close(F.cross_entropy(z, y, label_smoothing=smooth), expected, rtol=1e-5)
    target = rng.randn(6, 4).astype(np.float32)
    t = torch.tensor(target, device=device)
    assert_close(nn.MSELoss()(z, t), ((logits - target) ** 2).mean(), rtol=1e-5)
    assert_close(nn.L1Loss()(z, t), np.abs(logits - target).mean(), rtol=1e-5)
    binary = (target > 0).astype(np.float32)
    bce = np.maximum(logits, 0) - logits * binary + np.log1p(np.exp(-np.abs(logits)))
    assert_close(nn.BCEWithLogitsLoss()(z, torch.tensor(binary, device=device)), bce.mean(), rtol=1e-5)
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(z, torch.tensor([0, 1], device=device))


def test_loss_gradients_reach_the_logits(device):
    z = torch.zeros(2, 3, device=device, requires_grad=True)
    F.cross_entropy(z, torch.tensor([0, 2], device=device)).backward()
    expected = np.full((2, 3), 1 / 3) / 2
    expected[0, 0] -= 0.5
    expected[1, 2] -= 0.5
    assert_close(z.grad, expected, rtol=1e-5, atol=1e-7)


def test_module_errors_are_clear():
    class Broken(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match="super"):
        Broken()
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        nn.Linear(2, 2).missing
    with pytest.raises(RuntimeError, match="channels"):
        nn.BatchNorm2d(3)(torch.zeros(2, 4, 2, 2))


def test_functional_batch_norm_matches_numpy_and_updates_running_stats(device):
    rng = np.random.RandomState(3)
    x = rng.randn(4, 3, 5, 2).astype(np.float32)
    weight, bias = rng.rand(3).astype(np.float32) + 0.5, rng.randn(3).astype(np.float32)
    mean0, var0 = rng.randn(3).astype(np.float32), rng.rand(3).astype(np.float32) + 0.5
    t = torch.tensor(x, device=device, requires_grad=True)
    running_mean, running_var = torch.tensor(mean0, device=device), torch.tensor(var0, device=device)
    w, b = torch.tensor(weight, device=device), torch.tensor(bias, device=device)
    shape = (1, 3, 1, 1)
    y = F.batch_norm(t, running_mean, running_var, w, b, training=True, momentum=0.3, eps=1e-3)
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    normalized = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3)
    assert_close(y, normalized * weight.reshape(shape) + bias.reshape(shape), rtol=1e-4, atol=1e-5)
    n = x.size // 3
    assert_close(running_mean, 0.7 * mean0 + 0.3 * mean, rtol=1e-5, atol=1e-6)
    assert_close(running_var, 0.7 * var0 + 0.3 * var * n / (n - 1), rtol=1e-5, atol=1e-6)
    # The gradient of sum(y * r) against numpy's closed form.
    r = rng.randn(*x.shape).astype(np.float32)
    (y * torch.tensor(r, device=device)).sum().backward()
    g = r * weight.reshape(shape)
    inv_std = 1 / np.sqrt(var.reshape(shape) + 1e-3)
    expected = inv_std * (g - g.mean(axis=(0, 2, 3), keepdims=True) - normalized * (g * normalized).mean(axis=(0, 2, 3), keepdims=True))
    assert_close(t.grad, expected, rtol=1e-3, atol=1e-4)
    # Eval: the running statistics normalize, nothing moves.
    before = running_mean.cpu().numpy().copy()
    y = F.batch_norm(t.detach(), running_mean, running_var, w, b, training=False, eps=1e-3)
    rm, rv = running_mean.cpu().numpy().reshape(shape), running_var.cpu().numpy().reshape(shape)
    assert_close(y, (x - rm) / np.sqrt(rv + 1e-3) * weight.reshape(shape) + bias.reshape(shape), rtol=1e-4, atol=1e-5)
    assert_close(running_mean, before)
    # Batch statistics without running ones; bad arguments name the op.
    assert_close(F.batch_norm(t.detach(), None, None, training=True), (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5), rtol=1e-4, atol=1e-4)
    with pytest.raises((ValueError, RuntimeError), match="batch_norm"):
        F.batch_norm(t, None, None, training=False)
    with pytest.raises((ValueError, RuntimeError), match="batch_norm"):
        F.batch_norm(t, torch.zeros(4, device=device), torch.ones(4, device=device))
    with pytest.raises((ValueError, RuntimeError), match="batch_norm"):
        F.batch_norm(t, running_mean, None, training=True)


def test_batch_norm_eval_follows_changed_statistics_and_copies(device):
    import copy

    bn = nn.BatchNorm2d(2).to(device).eval()
    x = torch.tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2), device=device)
    with torch.no_grad():
        first = bn(x).cpu().numpy()
        assert_close(bn(x), first)
        # Written in place: the kept scale and shift are stale and must not be used.
        bn.running_mean.fill_(1.0)
        bn.running_var.mul_(4.0)
        assert_close(bn(x), (x.cpu().numpy() - 1.0) / np.sqrt(4.0 + 1e-5), rtol=1e-5, atol=1e-5)
        bn.weight.data = torch.tensor([2.0, -1.0], device=device)
        scale = np.array([2.0, -1.0], dtype=np.float32).reshape(1, 2, 1, 1)
        assert_close(bn(x), (x.cpu().numpy() - 1.0) / np.sqrt(4.0 + 1e-5) * scale, rtol=1e-5, atol=1e-5)
    twin = copy.deepcopy(bn)
    assert_close(twin(x), bn(x))
    assert twin._fold_cache is not bn._fold_cache
