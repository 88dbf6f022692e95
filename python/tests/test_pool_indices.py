"""Tests of ``max_pool2d``/``max_pool1d`` with ``return_indices=True`` and of
``max_unpool2d``/``max_unpool1d`` (functions and layers) against numpy written from PyTorch's
definitions, on each device."""

import numpy as np
import pytest

import anygrad
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


def _out_size(size, kernel, stride, padding, dilation, ceil_mode):
    span = dilation * (kernel - 1) + 1
    numerator = size + 2 * padding - span
    count = (numerator + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (count - 1) * stride >= size + padding:
        count -= 1
    return count


def _numpy_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
    """Values and flat in-plane indices: the first maximum in the window's row-major order."""
    height, width = x.shape[-2:]
    out_h = _out_size(height, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    out_w = _out_size(width, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    lead = x.shape[:-2]
    planes = x.reshape(-1, height, width)
    values = np.zeros((planes.shape[0], out_h, out_w), dtype=x.dtype)
    indices = np.zeros((planes.shape[0], out_h, out_w), dtype=np.int64)
    for plane in range(planes.shape[0]):
        for i in range(out_h):
            for j in range(out_w):
                best, where = -np.inf, -1
                for a in range(kernel[0]):
                    for b in range(kernel[1]):
                        h = i * stride[0] - padding[0] + a * dilation[0]
                        w = j * stride[1] - padding[1] + b * dilation[1]
                        if 0 <= h < height and 0 <= w < width and planes[plane, h, w] > best:
                            best, where = planes[plane, h, w], h * width + w
                values[plane, i, j], indices[plane, i, j] = best, where
    return values.reshape(*lead, out_h, out_w), indices.reshape(*lead, out_h, out_w)


def _numpy_unpool(values, indices, plane_shape):
    lead = values.shape[: values.ndim - len(plane_shape)]
    size = int(np.prod(plane_shape))
    flat_values = values.reshape(-1, values.size // max(int(np.prod(lead)), 1))
    flat_indices = indices.reshape(flat_values.shape)
    out = np.zeros((flat_values.shape[0], size), dtype=values.dtype)
    for row in range(out.shape[0]):
        out[row, flat_indices[row]] = flat_values[row]
    return out.reshape(*lead, *plane_shape)


@pytest.mark.parametrize(
    "kernel,stride,padding,dilation,ceil_mode",
    [((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 2), (2, 1), (1, 0), (1, 1), False), ((3, 3), (2, 2), (1, 1), (2, 1), True), ((2, 3), (3, 2), (0, 1), (1, 1), True)],
)
def test_max_pool2d_indices_match_numpy(device, kernel, stride, padding, dilation, ceil_mode):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 8)).astype(np.float32)
    values, indices = F.max_pool2d(anygrad.tensor(x, device=device), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    expected_values, expected_indices = _numpy_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
    assert indices.dtype == anygrad.int64
    assert tuple(indices.shape) == expected_indices.shape
    assert_close(values, expected_values)
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices)


def test_max_pool2d_indices_ties_pick_the_first(device):
    x = anygrad.ones(1, 1, 4, 4, device=device)
    _, indices = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(indices.cpu().numpy(), [[[[0, 2], [8, 10]]]])


@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool2d_indices_gradient_flows_through_values(device, dilation):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    x = anygrad.tensor(x_np, device=device, requires_grad=True)
    pool = nn.MaxPool2d(3, stride=2, padding=1, dilation=dilation, return_indices=True)
    values, indices = pool(x)
    weights = rng.standard_normal(tuple(values.shape)).astype(np.float32)
    (values * anygrad.tensor(weights, device=device)).sum().backward()
    expected_values, expected_indices = _numpy_max_pool2d(x_np, (3, 3), (2, 2), (1, 1), (dilation, dilation), False)
    assert_close(values, expected_values)
    expected = np.zeros((2, 36), dtype=np.float32)
    for plane in range(2):
        np.add.at(expected[plane], expected_indices[0, plane].reshape(-1), weights[0, plane].reshape(-1))
    assert_close(x.grad, expected.reshape(1, 2, 6, 6))


def test_max_unpool2d_roundtrip_and_output_size(device):
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    x = anygrad.tensor(x_np, device=device, requires_grad=True)
    values, indices = nn.MaxPool2d(2, return_indices=True)(x)
    unpool = nn.MaxUnpool2d(2)
    out = unpool(values, indices)
    assert tuple(out.shape) == (2, 3, 4, 6)
    expected_values, expected_indices = _numpy_max_pool2d(x_np, (2, 2), (2, 2), (0, 0), (1, 1), False)
    # Flat positions of the 5 x 7 input plane, placed in a 5 x 7 plane through output_size.
    sized = unpool(values, indices, output_size=x.shape)
    assert tuple(sized.shape) == (2, 3, 5, 7)
    assert_close(sized, _numpy_unpool(expected_values, expected_indices, (5, 7)))
    sized.sum().backward()
    grad = np.zeros_like(x_np)
    grad.reshape(6, 35)[np.arange(6)[:, None], expected_indices.reshape(6, -1)] = 1
    assert_close(x.grad, grad)
    with pytest.raises(ValueError):
        F.max_unpool2d(values, indices, 2, output_size=(9, 9))


def test_max_unpool2d_values_get_gradients(device):
    values = anygrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]], device=device, requires_grad=True)
    indices = anygrad.tensor([[[[0, 3], [9, 14]]]], device=device)
    out = F.max_unpool2d(values, indices, 2, stride=2)
    expected = np.zeros(16, dtype=np.float32)
    expected[[0, 3, 9, 14]] = [1, 2, 3, 4]
    assert_close(out, expected.reshape(1, 1, 4, 4))
    (out * anygrad.arange(16, device=device).reshape(1, 1, 4, 4).float()).sum().backward()
    assert_close(values.grad, np.array([[[[0.0, 3.0], [9.0, 14.0]]]]))


def test_max_pool1d_indices_and_unpool1d(device):
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((2, 3, 11)).astype(np.float32)
    x = anygrad.tensor(x_np, device=device)
    values, indices = F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True)
    expected_values, expected_indices = _numpy_max_pool2d(x_np[:, :, None, :], (1, 3), (1, 2), (0, 1), (1, 1), False)
    assert_close(values, expected_values[:, :, 0])
    np.testing.assert_array_equal(indices.cpu().numpy(), expected_indices[:, :, 0])
    layer_values, layer_indices = nn.MaxPool1d(3, 2, 1, return_indices=True)(x)
    np.testing.assert_array_equal(layer_indices.cpu().numpy(), expected_indices[:, :, 0])
    out = nn.MaxUnpool1d(3, 2, 1)(layer_values, layer_indices, output_size=[11])
    assert_close(out, _numpy_unpool(expected_values[:, :, 0], expected_indices[:, :, 0], (11,)))
    assert tuple(F.max_unpool1d(values, indices, 3, 2, 1).shape) == (2, 3, 11)


def test_max_pool_without_indices_is_unchanged(device):
    x = anygrad.randn(1, 2, 6, 6, device=device)
    plain = F.max_pool2d(x, 2)
    values, _ = F.max_pool2d(x, 2, return_indices=True)
    assert_close(plain, values.cpu().numpy())
