"""Tests of ``F.conv3d``/``nn.Conv3d`` (a composite over the 2-D convolution) and
``F.conv_transpose1d``/``nn.ConvTranspose1d``: values and gradients against numpy written from
PyTorch's definitions, and PyTorch's initialisation, on each device."""

import math

import numpy as np
import pytest

import anygrad
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


def _numpy_conv3d(x, w, b, stride, padding, dilation, groups, upstream=None):
    """out[n, o, i, j, k] = b[o] + sum over the group's channels and kernel taps of
    w[o, c, a, p, q] * x_padded[n, c, i*s0 + a*d0, j*s1 + p*d1, k*s2 + q*d2]; with ``upstream``
    also the gradients of ``sum(out * upstream)`` to x and w."""
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    n, channels = x.shape[:2]
    out_channels, per_group = w.shape[:2]
    kernel = w.shape[2:]
    sizes = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    out = np.zeros((n, out_channels, *sizes))
    grad_xp, grad_w = np.zeros_like(xp, dtype=np.float64), np.zeros_like(w, dtype=np.float64)
    out_per_group = out_channels // groups
    for g in range(groups):
        channels_in = slice(g * per_group, (g + 1) * per_group)
        channels_out = slice(g * out_per_group, (g + 1) * out_per_group)
        for a in range(kernel[0]):
            for p in range(kernel[1]):
                for q in range(kernel[2]):
                    window = (
                        slice(None), channels_in,
                        slice(a * dilation[0], a * dilation[0] + (sizes[0] - 1) * stride[0] + 1, stride[0]),
                        slice(p * dilation[1], p * dilation[1] + (sizes[1] - 1) * stride[1] + 1, stride[1]),
                        slice(q * dilation[2], q * dilation[2] + (sizes[2] - 1) * stride[2] + 1, stride[2]),
                    )
                    tap = w[channels_out, :, a, p, q]
                    out[:, channels_out] += np.einsum("ncdhw,oc->nodhw", xp[window], tap)
                    if upstream is not None:
                        grad_xp[window] += np.einsum("nodhw,oc->ncdhw", upstream[:, channels_out], tap)
                        grad_w[channels_out, :, a, p, q] += np.einsum("nodhw,ncdhw->oc", upstream[:, channels_out], xp[window])
    if b is not None:
        out += b.reshape(1, -1, 1, 1, 1)
    core = tuple(slice(p, p + x.shape[2 + i]) for i, p in enumerate(padding))
    return out, grad_xp[(slice(None), slice(None)) + core], grad_w


@pytest.mark.parametrize(
    "stride,padding,dilation,groups,bias",
    [((1, 1, 1), (0, 0, 0), (1, 1, 1), 1, True), ((2, 1, 2), (1, 0, 1), (1, 1, 1), 1, False), ((1, 2, 1), (2, 1, 0), (2, 1, 1), 2, True)],
)
def test_conv3d_matches_numpy_with_gradients(device, stride, padding, dilation, groups, bias):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((2, 4, 5, 6, 5)).astype(np.float32)
    w_np = rng.standard_normal((6, 4 // groups, 2, 3, 2)).astype(np.float32)
    b_np = rng.standard_normal(6).astype(np.float32) if bias else None
    x = anygrad.tensor(x_np, device=device, requires_grad=True)
    w = anygrad.tensor(w_np, device=device, requires_grad=True)
    b = anygrad.tensor(b_np, device=device, requires_grad=True) if bias else None
    out = F.conv3d(x, w, b, stride, padding, dilation, groups)
    upstream = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    expected, grad_x, grad_w = _numpy_conv3d(x_np, w_np, b_np, stride, padding, dilation, groups, upstream)
    assert tuple(out.shape) == expected.shape
    assert_close(out, expected, rtol=1e-4, atol=1e-4)
    (out * anygrad.tensor(upstream, device=device)).sum().backward()
    assert_close(x.grad, grad_x, rtol=1e-4, atol=1e-4)
    assert_close(w.grad, grad_w, rtol=1e-4, atol=1e-3)
    if bias:
        assert_close(b.grad, upstream.sum(axis=(0, 2, 3, 4)), rtol=1e-4, atol=1e-4)


def test_conv3d_layer_init_same_padding_and_unbatched(device):
    anygrad.manual_seed(0)
    layer = nn.Conv3d(3, 4, (3, 2, 3), padding="same").to(device)
    assert tuple(layer.weight.shape) == (4, 3, 3, 2, 3)
    bound = 1 / math.sqrt(3 * 3 * 2 * 3)
    weights = layer.weight.detach().cpu().numpy()
    assert np.abs(weights).max() <= bound + 1e-6 and np.abs(weights).max() > 0.5 * bound
    assert np.abs(layer.bias.detach().cpu().numpy()).max() <= bound + 1e-6
    x_np = np.random.default_rng(1).standard_normal((3, 4, 5, 6)).astype(np.float32)
    out = layer(anygrad.tensor(x_np, device=device))
    assert tuple(out.shape) == (4, 4, 5, 6)
    padded = np.pad(x_np[None], ((0, 0), (0, 0), (1, 1), (0, 1), (1, 1)))
    expected, _, _ = _numpy_conv3d(padded, weights, layer.bias.detach().cpu().numpy(), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1)
    assert_close(out, expected[0], rtol=1e-4, atol=1e-4)
    assert "Conv3d(3, 4, kernel_size=(3, 2, 3)" in repr(layer)


def _numpy_conv_transpose1d(x, w, b, stride, padding, output_padding, groups, dilation):
    """out[n, g*O + o, i*s - p + k*d] += x[n, g*C + c, i] * w[g*C + c, o, k]."""
    n, channels, length = x.shape
    per_group, out_per_group, kernel = channels // groups, w.shape[1], w.shape[2]
    full = (length - 1) * stride + dilation * (kernel - 1) + 1 + output_padding
    out = np.zeros((n, out_per_group * groups, full))
    for g in range(groups):
        for c in range(per_group):
            for i in range(length):
                for k in range(kernel):
                    out[:, g * out_per_group : (g + 1) * out_per_group, i * stride + k * dilation] += x[:, g * per_group + c, i : i + 1] * w[g * per_group + c, :, k]
    out = out[:, :, padding : full - padding]
    if b is not None:
        out += b.reshape(1, -1, 1)
    return out


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 1, 2, 2)])
def test_conv_transpose1d_matches_numpy_with_gradients(device, stride, padding, output_padding, groups, dilation):
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal((2, 4, 7)).astype(np.float32)
    w_np = rng.standard_normal((4, 6 // groups, 3)).astype(np.float32)
    b_np = rng.standard_normal(6).astype(np.float32)
    x = anygrad.tensor(x_np, device=device, requires_grad=True)
    w = anygrad.tensor(w_np, device=device, requires_grad=True)
    out = F.conv_transpose1d(x, w, anygrad.tensor(b_np, device=device), stride, padding, output_padding, groups, dilation)
    expected = _numpy_conv_transpose1d(x_np.astype(np.float64), w_np, b_np, stride, padding, output_padding, groups, dilation)
    assert tuple(out.shape) == expected.shape
    assert_close(out, expected, rtol=1e-4, atol=1e-4)
    # The map is linear in x (and in w): the gradient of sum(out * u) to x, entry by entry, is
    # the change of that sum when the entry goes from 0 to 1.
    upstream = rng.standard_normal(expected.shape)
    out.backward(anygrad.tensor(upstream.astype(np.float32), device=device))
    grad_x = np.zeros_like(x_np, dtype=np.float64)
    for index in np.ndindex(*x_np.shape):
        unit = np.zeros_like(x_np, dtype=np.float64)
        unit[index] = 1
        grad_x[index] = (_numpy_conv_transpose1d(unit, w_np, None, stride, padding, output_padding, groups, dilation) * upstream).sum()
    assert_close(x.grad, grad_x, rtol=1e-4, atol=1e-4)
    assert w.grad is not None and tuple(w.grad.shape) == w_np.shape


def test_conv_transpose1d_layer(device):
    anygrad.manual_seed(0)
    layer = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, groups=2).to(device)
    assert tuple(layer.weight.shape) == (4, 3, 3)
    bound = 1 / math.sqrt(3 * 3)
    assert np.abs(layer.weight.detach().cpu().numpy()).max() <= bound + 1e-6
    assert np.abs(layer.bias.detach().cpu().numpy()).max() <= bound + 1e-6
    x_np = np.random.default_rng(3).standard_normal((2, 4, 5)).astype(np.float32)
    x = anygrad.tensor(x_np, device=device)
    assert tuple(layer(x).shape) == (2, 6, 9)
    out = layer(x, output_size=[10])
    expected = _numpy_conv_transpose1d(x_np.astype(np.float64), layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy(), 2, 1, 1, 2, 1)
    assert_close(out, expected, rtol=1e-4, atol=1e-4)
    assert tuple(layer(x[0]).shape) == (6, 9)
    with pytest.raises(ValueError):
        layer(x, output_size=[12])
    out.sum().backward()
    assert layer.weight.grad is not None and layer.bias.grad is not None


def test_conv1d_function_matches_numpy(device):
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((2, 4, 9)).astype(np.float32)
    w_np = rng.standard_normal((6, 2, 3)).astype(np.float32)
    out = F.conv1d(anygrad.tensor(x_np, device=device), anygrad.tensor(w_np, device=device), None, 2, 1, 2, 2)
    expected, _, _ = _numpy_conv3d(x_np[:, :, None, None, :], w_np[:, :, None, None, :], None, (1, 1, 2), (0, 0, 1), (1, 1, 2), 2)
    assert_close(out, expected[:, :, 0, 0], rtol=1e-4, atol=1e-4)
    assert tuple(F.conv1d(anygrad.tensor(x_np[0], device=device), anygrad.tensor(w_np, device=device), groups=2).shape) == (6, 7)
