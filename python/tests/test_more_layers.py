"""The layers ``PReLU``, ``PixelShuffle``/``PixelUnshuffle``, ``InstanceNorm1d/2d``,
``AdaptiveMaxPool1d/2d``, ``Softmax2d``, ``Bilinear`` and the losses
``CosineEmbeddingLoss``, ``MarginRankingLoss``, ``TripletMarginLoss`` (with their
``nn.functional`` forms) against numpy written from PyTorch's definitions, on every device."""

import math

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close

RNG = np.random.default_rng(7)


def test_prelu(device):
    values = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    shared = nn.PReLU().to(device)
    assert shared.weight.shape == (1,) and shared.weight.tolist() == [0.25]
    assert_close(shared(x), np.where(values > 0, values, 0.25 * values))
    per_channel = nn.PReLU(3, init=0.1).to(device)
    with torch.no_grad():
        per_channel.weight.copy_(torch.tensor([0.1, 0.2, 0.3], device=device))
    out = per_channel(x)
    slopes = np.array([0.1, 0.2, 0.3], dtype=np.float32)[None, :, None]
    assert_close(out, np.where(values > 0, values, slopes * values), rtol=1e-5)
    out.sum().backward()
    assert_close(per_channel.weight.grad, np.minimum(values, 0).sum(axis=(0, 2)), rtol=1e-5)
    assert_close(x.grad, np.where(values > 0, 1.0, np.broadcast_to(slopes, values.shape)))
    assert repr(per_channel) == "PReLU(num_parameters=3)"
    with pytest.raises(RuntimeError, match="mismatch"):
        per_channel(torch.zeros(2, 4, device=device))


def test_pixel_shuffle(device):
    values = np.arange(2 * 8 * 2 * 3, dtype=np.float32).reshape(2, 8, 2, 3)
    x = torch.tensor(values, device=device)
    r = 2
    expected = values.reshape(2, 2, r, r, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    shuffled = nn.PixelShuffle(r)(x)
    assert shuffled.tolist() == expected.tolist()
    assert F.pixel_shuffle(x, 2).tolist() == expected.tolist()
    assert nn.PixelUnshuffle(2)(shuffled).tolist() == values.tolist()
    assert F.pixel_unshuffle(shuffled, 2).tolist() == values.tolist()
    assert F.pixel_shuffle(x[0], 2).shape == (2, 4, 6)
    with pytest.raises(RuntimeError, match="divisible"):
        F.pixel_shuffle(torch.zeros(1, 3, 2, 2, device=device), 2)


def _instance_norm(values, eps=1e-5):
    axes = tuple(range(2, values.ndim))
    mean = values.mean(axis=axes, keepdims=True)
    var = values.var(axis=axes, keepdims=True)
    return (values - mean) / np.sqrt(var + eps)


def test_instance_norm(device):
    values = RNG.standard_normal((3, 2, 4, 5)).astype(np.float32) * 3 + 1
    x = torch.tensor(values, device=device)
    plain = nn.InstanceNorm2d(2)
    assert plain.weight is None and plain.running_mean is None
    assert_close(plain(x), _instance_norm(values), rtol=1e-4, atol=1e-5)
    assert_close(F.instance_norm(x), _instance_norm(values), rtol=1e-4, atol=1e-5)
    assert_close(plain(x[0]), _instance_norm(values[:1])[0], rtol=1e-4, atol=1e-5)
    layer = nn.InstanceNorm2d(2, affine=True, track_running_stats=True, momentum=0.5).to(device)
    assert sorted(layer.state_dict()) == ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([2.0, 0.5], device=device))
        layer.bias.copy_(torch.tensor([1.0, -1.0], device=device))
    out = layer(x)
    affine = _instance_norm(values) * np.array([2.0, 0.5])[None, :, None, None] + np.array([1.0, -1.0])[None, :, None, None]
    assert_close(out, affine, rtol=1e-4, atol=1e-4)
    count = 4 * 5
    batch_mean = values.mean(axis=(2, 3)).mean(0)
    batch_var = (values.var(axis=(2, 3)) * count / (count - 1)).mean(0)
    assert_close(layer.running_mean, 0.5 * batch_mean, rtol=1e-4, atol=1e-5)
    assert_close(layer.running_var, 0.5 + 0.5 * batch_var, rtol=1e-4, atol=1e-5)
    assert layer.num_batches_tracked.item() == 1
    layer.eval()
    mean = layer.running_mean.cpu().numpy()[None, :, None, None]
    var = layer.running_var.cpu().numpy()[None, :, None, None]
    expected = (values - mean) / np.sqrt(var + 1e-5) * np.array([2.0, 0.5])[None, :, None, None] + np.array([1.0, -1.0])[None, :, None, None]
    assert_close(layer(x), expected, rtol=1e-4, atol=1e-4)
    sequence = RNG.standard_normal((2, 3, 6)).astype(np.float32)
    assert_close(nn.InstanceNorm1d(3)(torch.tensor(sequence, device=device)), _instance_norm(sequence), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="expected"):
        nn.InstanceNorm1d(3)(x)


def _adaptive_max(values, sizes):
    """PyTorch's adaptive max pooling over the trailing dims: windows
    [floor(i·in/out), ceil((i+1)·in/out))."""
    if len(sizes) == 1:
        size = values.shape[-1]
        return np.stack([values[..., (i * size) // sizes[0]:-(-((i + 1) * size) // sizes[0])].max(-1) for i in range(sizes[0])], -1)
    h, w = values.shape[-2:]
    rows = []
    for i in range(sizes[0]):
        row = []
        for j in range(sizes[1]):
            window = values[..., (i * h) // sizes[0]:-(-((i + 1) * h) // sizes[0]), (j * w) // sizes[1]:-(-((j + 1) * w) // sizes[1])]
            row.append(window.max(axis=(-2, -1)))
        rows.append(np.stack(row, -1))
    return np.stack(rows, -2)


def test_adaptive_max_pool(device):
    values = RNG.standard_normal((2, 3, 7, 10)).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    for size in ((3, 4), (7, 5), (1, 1), (2, 10)):
        assert_close(nn.AdaptiveMaxPool2d(size)(x), _adaptive_max(values, size))
    assert_close(F.adaptive_max_pool2d(x, 3), _adaptive_max(values, (3, 3)))
    assert_close(F.adaptive_max_pool2d(x, (None, 4)), _adaptive_max(values, (7, 4)))
    assert_close(F.adaptive_max_pool2d(x[0], (3, 4)), _adaptive_max(values[0], (3, 4)))
    F.adaptive_max_pool2d(x, (7, 5)).sum().backward()
    expected = np.zeros_like(values)
    pairs = values.reshape(2, 3, 7, 5, 2)
    winners = pairs.argmax(-1)
    np.put_along_axis(expected.reshape(2, 3, 7, 5, 2), winners[..., None], 1.0, axis=-1)
    assert_close(x.grad, expected)
    sequence = values[:, :, 0]
    assert_close(nn.AdaptiveMaxPool1d(3)(torch.tensor(sequence, device=device)), _adaptive_max(sequence, (3,)))
    assert_close(F.adaptive_max_pool1d(torch.tensor(sequence, device=device), 4), _adaptive_max(sequence, (4,)))
    # return_indices: each maximum's flat position h * W + w, the first in the window on ties.
    pooled, indices = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
    assert_close(pooled, _adaptive_max(values, (3, 4)))
    h, w = values.shape[-2:]
    for i in range(3):
        h0, h1 = (i * h) // 3, -(-((i + 1) * h) // 3)
        for j in range(4):
            w0, w1 = (j * w) // 4, -(-((j + 1) * w) // 4)
            window = values[..., h0:h1, w0:w1].reshape(2, 3, -1).argmax(-1)
            expected_index = (h0 + window // (w1 - w0)) * w + w0 + window % (w1 - w0)
            assert indices[..., i, j].tolist() == expected_index.tolist()
    ties = torch.tensor([[[1.0, 3.0, 3.0, 0.0, 3.0]]], device=device)
    assert nn.AdaptiveMaxPool1d(2, return_indices=True)(ties)[1].tolist() == [[[1, 2]]]


def test_softmax2d(device):
    values = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    expected = np.exp(values) / np.exp(values).sum(axis=1, keepdims=True)
    assert_close(nn.Softmax2d()(torch.tensor(values, device=device)), expected, rtol=1e-5)
    assert_close(nn.Softmax2d()(torch.tensor(values[0], device=device)), expected[0], rtol=1e-5)
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(torch.zeros(2, 3, device=device))


def test_bilinear(device):
    torch.manual_seed(0)
    layer = nn.Bilinear(4, 3, 5).to(device)
    assert layer.weight.shape == (5, 4, 3) and layer.bias.shape == (5,)
    bound = 1 / math.sqrt(4)
    weight = layer.weight.detach().cpu().numpy()
    assert np.abs(weight).max() <= bound and np.abs(layer.bias.detach().cpu().numpy()).max() <= bound
    a = RNG.standard_normal((2, 6, 4)).astype(np.float32)
    b = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    expected = np.einsum("...i,kij,...j->...k", a, weight, b) + layer.bias.detach().cpu().numpy()
    x1, x2 = torch.tensor(a, device=device), torch.tensor(b, device=device)
    out = layer(x1, x2)
    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    out.sum().backward()
    assert_close(layer.weight.grad, np.einsum("bni,bnj->ij", a, b)[None].repeat(5, 0), rtol=1e-4, atol=1e-4)
    assert_close(F.bilinear(x1, x2, layer.weight.detach()), expected - layer.bias.detach().cpu().numpy(), rtol=1e-4, atol=1e-5)
    assert "in1_features=4, in2_features=3, out_features=5, bias=True" in repr(layer)
    assert nn.Bilinear(2, 2, 1, bias=False).bias is None


def test_ranking_losses(device):
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    b = RNG.standard_normal((5, 4)).astype(np.float32)
    c = RNG.standard_normal((5, 4)).astype(np.float32)
    sign = np.array([1, -1, 1, -1, -1], dtype=np.float32)
    x1, x2, x3 = (torch.tensor(v, device=device) for v in (a, b, c))
    target = torch.tensor(sign, device=device)
    cos = (a * b).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((b * b).sum(1) + 1e-12))
    for margin in (0.0, 0.2):
        expected = np.where(sign == 1, 1 - cos, np.maximum(0, cos - margin))
        assert_close(nn.CosineEmbeddingLoss(margin=margin)(x1, x2, target), expected.mean(), rtol=1e-5)
        assert_close(F.cosine_embedding_loss(x1, x2, target, margin=margin, reduction="none"), expected, rtol=1e-5, atol=1e-6)
    s1, s2 = a[:, 0], b[:, 0]
    expected = np.maximum(0, -sign * (s1 - s2) + 0.3)
    assert_close(nn.MarginRankingLoss(margin=0.3)(x1[:, 0], x2[:, 0], target), expected.mean(), rtol=1e-5)
    assert_close(nn.MarginRankingLoss(reduction="sum")(x1[:, 0], x2[:, 0], target), np.maximum(0, -sign * (s1 - s2)).sum(), rtol=1e-5)
    assert_close(F.margin_ranking_loss(x1[:, 0], x2[:, 0], target, reduction="none"), np.maximum(0, -sign * (s1 - s2)), rtol=1e-5)

    def distance(u, v, p=2.0):
        return (np.abs(u - v + 1e-6) ** p).sum(-1) ** (1 / p)

    expected = np.maximum(distance(a, b) - distance(a, c) + 1.0, 0)
    assert_close(nn.TripletMarginLoss()(x1, x2, x3), expected.mean(), rtol=1e-5)
    swapped = np.maximum(distance(a, b, 1.0) - np.minimum(distance(a, c, 1.0), distance(b, c, 1.0)) + 0.5, 0)
    layer = nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True, reduction="none")
    assert_close(layer(x1, x2, x3), swapped, rtol=1e-5, atol=1e-6)
    assert_close(F.triplet_margin_loss(x1, x2, x3, reduction="sum"), expected.sum(), rtol=1e-5)
    anchor = torch.tensor(a, device=device, requires_grad=True)
    nn.TripletMarginLoss()(anchor, x2, x3).backward()
    assert anchor.grad.shape == (5, 4)
