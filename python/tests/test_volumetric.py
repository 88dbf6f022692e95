"""The volumetric (3-D) layers written over the 2-D ops (``max_pool3d`` with indices and
``max_unpool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d``, ``adaptive_max_pool3d``,
``conv_transpose3d``, ``dropout3d``, 5-D ``interpolate``, ``BatchNorm3d``, ``InstanceNorm3d``)
against numpy loops written from PyTorch's definitions, on every device; gradients of the
linear ops by the adjoint identity ``<J^T r, v> = <r, J v>``."""

import itertools

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


def _triple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * 3


def _out_size(size, k, s, p, d, ceil_mode):
    span = d * (k - 1) + 1
    if ceil_mode:
        count = -(-(size + 2 * p - span) // s) + 1
        if (count - 1) * s >= size + p:
            count -= 1
        return count
    return (size + 2 * p - span) // s + 1


def _max_pool3d_reference(x, kernel, stride, padding, dilation, ceil_mode):
    k, s, p, d = _triple(kernel), _triple(stride), _triple(padding), _triple(dilation)
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    outs = [_out_size(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    values = np.zeros((n, c, *outs), dtype=np.float64)
    indices = np.zeros((n, c, *outs), dtype=np.int64)
    for o in itertools.product(*(range(v) for v in outs)):
        best = np.full((n, c), -np.inf)
        where = np.zeros((n, c), dtype=np.int64)
        for tap in itertools.product(*(range(v) for v in k)):
            pos = [o[i] * s[i] - p[i] + tap[i] * d[i] for i in range(3)]
            if any(pos[i] < 0 or pos[i] >= sizes[i] for i in range(3)):
                continue
            value = x[:, :, pos[0], pos[1], pos[2]]
            better = value > best
            best = np.where(better, value, best)
            where = np.where(better, (pos[0] * sizes[1] + pos[1]) * sizes[2] + pos[2], where)
        values[(slice(None), slice(None)) + o] = best
        indices[(slice(None), slice(None)) + o] = where
    return values, indices


def _avg_pool3d_reference(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    k, s, p = _triple(kernel), _triple(stride), _triple(padding)
    sizes = x.shape[2:]
    outs = [_out_size(sizes[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for o in itertools.product(*(range(v) for v in outs)):
        starts = [o[i] * s[i] - p[i] for i in range(3)]
        ends = [min(starts[i] + k[i], sizes[i] + p[i]) for i in range(3)]
        padded_count = np.prod([ends[i] - starts[i] for i in range(3)])
        lo = [max(starts[i], 0) for i in range(3)]
        hi = [min(ends[i], sizes[i]) for i in range(3)]
        total = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].sum((2, 3, 4))
        if divisor_override:
            divisor = divisor_override
        elif count_include_pad:
            divisor = padded_count
        else:
            divisor = np.prod([hi[i] - lo[i] for i in range(3)])
        out[(slice(None), slice(None)) + o] = total / divisor
    return out


def _conv_transpose3d_reference(x, w, bias, stride, padding, output_padding, groups, dilation):
    s, p, o, d = _triple(stride), _triple(padding), _triple(output_padding), _triple(dilation)
    n, cin = x.shape[:2]
    cout_group = w.shape[1]
    kernel = w.shape[2:]
    sizes = x.shape[2:]
    full = [(sizes[i] - 1) * s[i] + d[i] * (kernel[i] - 1) + 1 + o[i] for i in range(3)]
    out = np.zeros((n, cout_group * groups, *full))
    per_group = cin // groups
    for g in range(groups):
        xs = x[:, g * per_group:(g + 1) * per_group]
        for tap in itertools.product(*(range(v) for v in kernel)):
            part = np.einsum("ncdhw,co->nodhw", xs, w[g * per_group:(g + 1) * per_group, :, tap[0], tap[1], tap[2]])
            region = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (sizes[i] - 1) * s[i] + 1, s[i]) for i in range(3))
            out[(slice(None), slice(g * cout_group, (g + 1) * cout_group)) + region] += part
    out = out[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1], p[2]:full[2] - p[2]]
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode",
    [(2, None, 0, 1, False), (3, 2, 1, 1, False), ((2, 3, 2), (1, 2, 2), (1, 1, 0), 1, True), (2, 1, 0, 2, False)],
)
def test_max_pool3d_and_unpool(device, kernel, stride, padding, dilation, ceil_mode):
    rng = np.random.RandomState(0)
    values = rng.randn(2, 3, 5, 6, 7).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    expected, expected_indices = _max_pool3d_reference(values, kernel, stride if stride else kernel, padding, dilation, ceil_mode)
    out = F.max_pool3d(x, kernel, stride, padding, dilation, ceil_mode)
    assert_close(out, expected)
    pooled, indices = nn.MaxPool3d(kernel, stride, padding, dilation, return_indices=True, ceil_mode=ceil_mode)(x)
    assert_close(pooled, expected)
    assert indices.dtype == torch.int64 and indices.tolist() == expected_indices.tolist()
    pooled.sum().backward()
    grad = np.zeros(values.size)
    for plane, flat in enumerate(expected_indices.reshape(6, -1)):
        np.add.at(grad, plane * values[0, 0].size + flat, 1.0)
    assert_close(x.grad, grad.reshape(values.shape))
    if stride is None and padding == 0 and dilation == 1:
        restored = nn.MaxUnpool3d(kernel)(pooled.detach(), indices, output_size=values.shape)
        expected_unpool = np.zeros(values.size)
        for plane, flat in enumerate(expected_indices.reshape(6, -1)):
            expected_unpool[plane * values[0, 0].size + flat] = values.reshape(6, -1)[plane, flat]
        assert_close(restored, expected_unpool.reshape(values.shape))


@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode, count_include_pad, divisor_override",
    [(2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None), ((2, 3, 3), (2, 1, 2), (1, 1, 0), True, True, None), (2, 2, 0, False, True, 3)],
)
def test_avg_pool3d(device, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    rng = np.random.RandomState(1)
    values = rng.randn(2, 2, 5, 6, 7).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    expected = _avg_pool3d_reference(values, kernel, stride if stride else kernel, padding, ceil_mode, count_include_pad, divisor_override)
    out = nn.AvgPool3d(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)(x)
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    # The adjoint identity: average pooling is linear.
    r = rng.randn(*expected.shape).astype(np.float32)
    v = rng.randn(*values.shape).astype(np.float32)
    (out * torch.tensor(r, device=device)).sum().backward()
    applied = F.avg_pool3d(torch.tensor(v, device=device), kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    assert np.isclose((x.grad.cpu().numpy() * v).sum(), (applied.cpu().numpy() * r).sum(), rtol=1e-4)


def test_adaptive_pools_3d(device):
    rng = np.random.RandomState(2)
    values = rng.randn(2, 3, 5, 7, 6).astype(np.float32)
    x = torch.tensor(values, device=device)
    out_size = (2, 3, None)
    sizes = (2, 3, 6)

    def bounds(size, count):
        return [((i * size) // count, -(-((i + 1) * size) // count)) for i in range(count)]

    mean = np.zeros((2, 3) + sizes)
    maximum = np.zeros((2, 3) + sizes)
    where = np.zeros((2, 3) + sizes, dtype=np.int64)
    for (a, (d0, d1)), (b, (h0, h1)), (c, (w0, w1)) in itertools.product(*(list(enumerate(bounds(values.shape[2 + i], sizes[i]))) for i in range(3))):
        window = values[:, :, d0:d1, h0:h1, w0:w1]
        mean[:, :, a, b, c] = window.mean((2, 3, 4))
        flat = window.reshape(2, 3, -1)
        maximum[:, :, a, b, c] = flat.max(-1)
        k = flat.argmax(-1)
        dd, rest = np.divmod(k, (h1 - h0) * (w1 - w0))
        hh, ww = np.divmod(rest, w1 - w0)
        where[:, :, a, b, c] = ((d0 + dd) * 7 + h0 + hh) * 6 + w0 + ww
    assert_close(nn.AdaptiveAvgPool3d(out_size)(x), mean, rtol=1e-5, atol=1e-6)
    values_out, indices = nn.AdaptiveMaxPool3d(out_size, return_indices=True)(x)
    assert_close(values_out, maximum)
    assert indices.tolist() == where.tolist()
    assert_close(F.adaptive_max_pool3d(x, out_size), maximum)
    assert tuple(F.adaptive_avg_pool3d(x[0], 1).shape) == (3, 1, 1, 1)


@pytest.mark.parametrize(
    "stride, padding, output_padding, groups, dilation, bias",
    [(1, 0, 0, 1, 1, True), (2, 1, 1, 1, 1, False), ((2, 1, 2), (0, 1, 1), (1, 0, 0), 2, 1, True), (1, 1, 0, 1, (2, 1, 1), True)],
)
def test_conv_transpose3d(device, stride, padding, output_padding, groups, dilation, bias):
    rng = np.random.RandomState(3)
    x_values = rng.randn(2, 4, 3, 4, 3).astype(np.float32)
    w_values = rng.randn(4, 6 // groups, 2, 3, 2).astype(np.float32)
    b_values = rng.randn(6).astype(np.float32) if bias else None
    x = torch.tensor(x_values, device=device, requires_grad=True)
    w = torch.tensor(w_values, device=device, requires_grad=True)
    b = torch.tensor(b_values, device=device, requires_grad=True) if bias else None
    out = F.conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation)
    expected = _conv_transpose3d_reference(x_values, w_values, b_values, stride, padding, output_padding, groups, dilation)
    assert_close(out, expected, rtol=1e-4, atol=1e-4)
    r = rng.randn(*expected.shape).astype(np.float32)
    (out * torch.tensor(r, device=device)).sum().backward()
    v = rng.randn(*x_values.shape).astype(np.float32)
    jv = _conv_transpose3d_reference(v, w_values, None, stride, padding, output_padding, groups, dilation)
    assert np.isclose((x.grad.cpu().numpy() * v).sum(), (jv * r).sum(), rtol=1e-3)
    u = rng.randn(*w_values.shape).astype(np.float32)
    ju = _conv_transpose3d_reference(x_values, u, None, stride, padding, output_padding, groups, dilation)
    assert np.isclose((w.grad.cpu().numpy() * u).sum(), (ju * r).sum(), rtol=1e-3)
    if bias:
        assert_close(b.grad, r.sum((0, 2, 3, 4)), rtol=1e-4, atol=1e-4)


def test_conv_transpose3d_module(device):
    torch.manual_seed(0)
    layer = nn.ConvTranspose3d(3, 5, kernel_size=(2, 3, 3), stride=2, padding=1).to(device)
    assert tuple(layer.weight.shape) == (3, 5, 2, 3, 3) and tuple(layer.bias.shape) == (5,)
    bound = 1 / np.sqrt(5 * 2 * 3 * 3)
    assert np.abs(layer.weight.detach().cpu().numpy()).max() <= bound * np.sqrt(3) * 1.0001
    x = torch.randn(1, 3, 3, 4, 4, device=device)
    assert tuple(layer(x).shape) == (1, 5, 4, 7, 7)
    assert tuple(layer(x, output_size=(5, 8, 8)).shape) == (1, 5, 5, 8, 8)
    assert tuple(layer(x[0]).shape) == (5, 4, 7, 7)
    with pytest.raises(ValueError, match="output size"):
        layer(x, output_size=(9, 9, 9))
    assert "ConvTranspose3d(3, 5, kernel_size=(2, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1))" == repr(layer)
    # the 1-D and 2-D layers share the same base
    assert tuple(nn.ConvTranspose1d(2, 3, 3, stride=2).to(device)(torch.randn(1, 2, 5, device=device), output_size=[12]).shape) == (1, 3, 12)
    assert tuple(nn.ConvTranspose2d(2, 3, 3, stride=2, groups=1).to(device)(torch.randn(1, 2, 4, 5, device=device)).shape) == (1, 3, 9, 11)


def _linear_weights(in_size, out_size, align_corners, scale=None):
    """The ``[out, in]`` matrix of PyTorch's linear resampling along one axis."""
    matrix = np.zeros((out_size, in_size))
    for i in range(out_size):
        if align_corners:
            source = i * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            step = 1.0 / scale if scale else in_size / out_size
            source = max((i + 0.5) * step - 0.5, 0.0)
        low = min(int(np.floor(source)), in_size - 1)
        high = min(low + 1, in_size - 1)
        matrix[i, low] += 1 - (source - low)
        matrix[i, high] += source - low
    return matrix


@pytest.mark.parametrize("size, scale_factor, align_corners", [((6, 5, 8), None, False), ((6, 5, 8), None, True), (None, 2, False), (None, (1.5, 2, 0.5), None)])
def test_interpolate_trilinear_and_nearest(device, size, scale_factor, align_corners):
    rng = np.random.RandomState(4)
    values = rng.randn(2, 3, 4, 3, 6).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    scales = _triple(scale_factor) if scale_factor is not None else (None,) * 3
    outs = size if size is not None else tuple(int(np.floor(values.shape[2 + i] * scales[i])) for i in range(3))
    out = F.interpolate(x, size=size, scale_factor=scale_factor, mode="trilinear", align_corners=align_corners)
    expected = values.astype(np.float64)
    for axis in range(3):
        matrix = _linear_weights(values.shape[2 + axis], outs[axis], bool(align_corners), scales[axis])
        expected = np.moveaxis(np.tensordot(matrix, np.moveaxis(expected, 2 + axis, 0), axes=1), 0, 2 + axis)
    assert_close(out, expected, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert x.grad is not None and tuple(x.grad.shape) == values.shape
    nearest = nn.Upsample(size=size, scale_factor=scale_factor, mode="nearest")(x)
    picked = values
    for axis in range(3):
        step = 1.0 / scales[axis] if scales[axis] else values.shape[2 + axis] / outs[axis]
        source = np.minimum(np.floor(np.arange(outs[axis], dtype=np.float32) * np.float32(step)).astype(np.int64), values.shape[2 + axis] - 1)
        picked = np.take(picked, source, axis=2 + axis)
    assert_close(nearest, picked)
    with pytest.raises(NotImplementedError, match="5-D"):
        F.interpolate(x, scale_factor=2, mode="bicubic")


def test_norms_and_dropout_3d(device):
    rng = np.random.RandomState(5)
    values = (rng.randn(3, 4, 2, 3, 5) * 2 + 1).astype(np.float32)
    x = torch.tensor(values, device=device)
    bn = nn.BatchNorm3d(4).to(device)
    mean = values.mean((0, 2, 3, 4), keepdims=True)
    var = values.var((0, 2, 3, 4), keepdims=True)
    assert_close(bn(x), (values - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    assert_close(bn.running_mean, 0.1 * mean.reshape(-1), rtol=1e-4, atol=1e-5)
    assert_close(bn.running_var, 0.9 + 0.1 * values.var((0, 2, 3, 4), ddof=1), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="5D"):
        bn(x[0])
    inorm = nn.InstanceNorm3d(4, affine=True).to(device)
    mean = values.mean((2, 3, 4), keepdims=True)
    var = values.var((2, 3, 4), keepdims=True)
    assert_close(inorm(x), (values - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-4)
    drop = nn.Dropout3d(0.5).to(device)
    out = drop(torch.ones(8, 6, 2, 3, 4, device=device)).cpu().numpy()
    per_channel = out.reshape(48, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert all(len(set(row)) == 1 for row in per_channel)
    drop.eval()
    assert_close(drop(x), values)
