"""``F.interpolate``, ``nn.Upsample`` and ``transforms.Resize`` against numpy written from the
definitions: nearest and bilinear (both corner conventions) on the library's kernels, and the
antialiased bilinear filter (a triangle widened by the shrink factor, rows normalised: PIL's,
which torchvision's Resize uses; on the development machine Pillow 13's resize agreed with it
within one level of 255 on uint8 images); ``F.grid_sample`` (every mode, padding and corner
convention, 4-D and 5-D, with its gradients) and ``F.affine_grid`` against numpy written from
PyTorch's formulas."""

import itertools

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from anygrad.vision import transforms
from conftest import assert_close


def _bilinear_reference(x, out_h, out_w, align_corners):
    n, c, h, w = x.shape

    def axis(size_in, size_out):
        if align_corners:
            src = np.arange(size_out) * ((size_in - 1) / (size_out - 1) if size_out > 1 else 0.0)
        else:
            src = np.maximum((np.arange(size_out) + 0.5) * size_in / size_out - 0.5, 0.0)
        low = np.minimum(np.floor(src).astype(int), size_in - 1)
        high = np.minimum(low + 1, size_in - 1)
        return low, high, src - low

    (hl, hh, hf), (wl, wh, wf) = axis(h, out_h), axis(w, out_w)
    top = x[:, :, hl][:, :, :, wl] * (1 - wf) + x[:, :, hl][:, :, :, wh] * wf
    bottom = x[:, :, hh][:, :, :, wl] * (1 - wf) + x[:, :, hh][:, :, :, wh] * wf
    return top * (1 - hf)[:, None] + bottom * hf[:, None]


def _antialias_reference(x, out_h, out_w):
    """Each output pixel a weighted mean of the input pixels under its triangle filter."""

    def weights(size_in, size_out):
        scale = size_in / size_out
        support, inverse = (scale, 1 / scale) if scale >= 1 else (1.0, 1.0)
        matrix = np.zeros((size_out, size_in))
        for i in range(size_out):
            center = scale * (i + 0.5)
            for j in range(size_in):
                if center - support <= j + 0.5 <= center + support:
                    matrix[i, j] = max(0.0, 1 - abs((j + 0.5 - center) * inverse))
            matrix[i] /= matrix[i].sum()
        return matrix

    return np.einsum("ih,nchw,jw->ncij", weights(x.shape[2], out_h), x, weights(x.shape[3], out_w))


def test_interpolate_matches_its_definitions(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    t = torch.tensor(x, device=device)
    nearest = F.interpolate(t, scale_factor=2, mode="nearest")
    assert_close(nearest, x.repeat(2, axis=2).repeat(2, axis=3))
    for align in (False, True):
        out = F.interpolate(t, size=(9, 12), mode="bilinear", align_corners=align)
        assert_close(out, _bilinear_reference(x.astype(np.float64), 9, 12, align), rtol=1e-4, atol=1e-5)
    shrunk = F.interpolate(t, size=(3, 4), mode="bilinear", antialias=True)
    assert_close(shrunk, _antialias_reference(x.astype(np.float64), 3, 4), rtol=1e-4, atol=1e-5)
    line = F.interpolate(t[:, :, 0], scale_factor=2.0, mode="linear")
    assert_close(line, _bilinear_reference(x[:, :, :1].astype(np.float64), 1, 14, False)[:, :, 0], rtol=1e-4, atol=1e-5)
    area = F.interpolate(t[:, :, :4, :6], size=(2, 3), mode="area")
    assert_close(area, x[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
    with pytest.raises(ValueError, match="only one"):
        F.interpolate(t)
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(t, scale_factor=2, mode="bicubic")


def test_upsample_modules(device):
    x = torch.arange(4, dtype=torch.float32, device=device).reshape(1, 1, 2, 2)
    assert nn.Upsample(scale_factor=2)(x).tolist()[0][0][0] == [0.0, 0.0, 1.0, 1.0]
    corners = nn.UpsamplingBilinear2d(size=(3, 3))(x)
    assert_close(corners, [[[[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]]]])
    assert "scale_factor=2" in repr(nn.Upsample(scale_factor=2))


def test_resize_keeps_the_aspect_ratio_and_dtype(device):
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, size=(30, 45, 3), dtype=np.uint8)
    out = transforms.Resize(20)(image)
    assert out.shape == (20, 30, 3) and out.dtype == np.uint8
    expected = _antialias_reference(image.transpose(2, 0, 1)[None].astype(np.float64), 20, 30)[0].transpose(1, 2, 0)
    assert np.abs(out.astype(int) - np.clip(np.round(expected), 0, 255)).max() <= 1
    tensor = torch.tensor(image.transpose(2, 0, 1).astype(np.float32) / 255, device=device)
    resized = transforms.Resize((10, 12))(tensor)
    assert tuple(resized.shape) == (3, 10, 12)
    assert_close(resized, _antialias_reference(image.transpose(2, 0, 1)[None] / 255.0, 10, 12)[0], rtol=1e-4, atol=1e-5)
    nearest = transforms.Resize((60, 90), interpolation=transforms.InterpolationMode.NEAREST)(image)
    assert (nearest[::2, ::2] == image).all()
    assert transforms.Resize(10, max_size=12)(image).shape[:2] == (8, 12)
    with pytest.raises(ValueError, match="max_size"):
        transforms.Resize(20, max_size=10)(image)


def test_max_pool_ceil_mode_keeps_partial_windows(device):
    x = (np.arange(2 * 7 * 5).reshape(1, 2, 7, 5) * np.where(np.arange(5) % 2, 1, -1)).astype(np.float32)
    t = torch.tensor(x, device=device, requires_grad=True)
    out = F.max_pool2d(t, 2, ceil_mode=True)
    assert tuple(out.shape) == (1, 2, 4, 3)
    expected = np.full((1, 2, 4, 3), -np.inf, dtype=np.float32)
    for i in range(4):
        for j in range(3):
            expected[:, :, i, j] = x[:, :, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2].max(axis=(2, 3))
    assert_close(out, expected)
    out.sum().backward()
    assert t.grad.sum().item() == 24
    # PyTorch drops a last window that would start in the right padding: 5 → 3, not 4.
    assert tuple(F.max_pool2d(torch.ones(1, 1, 5, 5, device=device), 3, stride=2, padding=1, ceil_mode=True).shape) == (1, 1, 3, 3)
    assert tuple(nn.MaxPool2d(3, stride=2, ceil_mode=True)(torch.ones(1, 1, 6, 6, device=device)).shape) == (1, 1, 3, 3)


def _avg_pool_reference(x, k, s, p, ceil_mode, count_include_pad, divisor_override=None):
    """PyTorch's average pooling loop."""
    n, c, h, w = x.shape

    def size(length):
        out = (length + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= length + p:
            out -= 1
        return out

    out = np.zeros((n, c, size(h), size(w)))
    for i in range(size(h)):
        for j in range(size(w)):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            pool = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
            divisor = divisor_override or (pool if count_include_pad else (h1 - h0) * (w1 - w0))
            out[:, :, i, j] = total / divisor
    return out


def test_avg_pool_ceil_mode_and_divisor(device):
    x = np.random.default_rng(2).standard_normal((1, 2, 7, 6)).astype(np.float32)
    t = torch.tensor(x, device=device, requires_grad=True)
    for k, s, p in [(2, 2, 0), (3, 2, 1), (3, 3, 1)]:
        for include in (True, False):
            out = F.avg_pool2d(t, k, s, p, ceil_mode=True, count_include_pad=include)
            assert_close(out, _avg_pool_reference(x, k, s, p, True, include), rtol=1e-5, atol=1e-6)
    override = F.avg_pool2d(t, 3, 2, 1, divisor_override=4)
    assert_close(override, _avg_pool_reference(x, 3, 2, 1, False, True, divisor_override=4), rtol=1e-5, atol=1e-6)
    nn.AvgPool2d(3, 2, ceil_mode=True)(t).sum().backward()
    assert t.grad is not None and tuple(t.grad.shape) == (1, 2, 7, 6)


def _grid_sample_reference(x, grid, mode, padding_mode, align_corners):
    """PyTorch's grid sampling in float64 numpy: unnormalize, ``compute_coordinates`` (clamp,
    ``reflect_coordinates``), then bilinear corners, nearest (``rint``: halves to even) or
    bicubic (two passes of cubic convolution, A = -0.75, padding each tap)."""
    x = np.asarray(x, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    k = len(sizes)
    points = grid.reshape(n, -1, k)
    batch = np.arange(n)[:, None]

    def unnormalize(coordinate, size):
        if align_corners:
            return (coordinate + 1) / 2 * (size - 1)
        return ((coordinate + 1) * size - 1) / 2

    def reflect(v, twice_low, twice_high):
        if twice_low == twice_high:
            return np.zeros_like(v)
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        distance = np.abs(v - low)
        extra = np.fmod(distance, span)
        flips = np.floor(distance / span)
        return np.where(flips % 2 == 0, extra + low, span - extra + low)

    def pad(v, size):
        if padding_mode == "border":
            return np.clip(v, 0, size - 1)
        if padding_mode == "reflection":
            v = reflect(v, 0, 2 * (size - 1)) if align_corners else reflect(v, -1, 2 * size - 1)
            return np.clip(v, 0, size - 1)
        return v

    def read(indices):
        """x at integer positions (one [n, points] array per axis, outermost first), 0 outside."""
        inside = np.ones(indices[0].shape, dtype=bool)
        clipped = []
        for index, size in zip(indices, sizes):
            inside &= (index >= 0) & (index < size)
            clipped.append(np.clip(index, 0, size - 1))
        values = np.stack([x[(batch, channel, *clipped)] for channel in range(c)], axis=1)
        return values * inside[:, None, :]

    # Outermost axis first: the grid lists x (the last axis) first.
    positions = [unnormalize(points[:, :, k - 1 - a], sizes[a]) for a in range(k)]
    if mode == "nearest":
        out = read([np.rint(pad(p, s)).astype(np.int64) for p, s in zip(positions, sizes)])
    elif mode == "bilinear":
        padded = [pad(p, s) for p, s in zip(positions, sizes)]
        out = 0
        for corner in itertools.product((0, 1), repeat=k):
            weight = 1
            indices = []
            for p, high in zip(padded, corner):
                low = np.floor(p)
                weight = weight * ((p - low) if high else (low + 1 - p))
                indices.append(low.astype(np.int64) + high)
            out = out + read(indices) * weight[:, None, :]
    else:
        a = -0.75

        def coefficients(t):
            near = lambda s: ((a + 2) * s - (a + 3)) * s * s + 1
            far = lambda s: ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
            return [far(t + 1), near(t), near(1 - t), far(2 - t)]

        y, xx = positions
        y0, x0 = np.floor(y), np.floor(xx)
        wy, wx = coefficients(y - y0), coefficients(xx - x0)
        out = 0
        for i in range(4):
            row = pad(y0 - 1 + i, sizes[0]).astype(np.int64)
            line = 0
            for j in range(4):
                column = pad(x0 - 1 + j, sizes[1]).astype(np.int64)
                line = line + read([row, column]) * wx[j][:, None, :]
            out = out + line * wy[i][:, None, :]
    return out.reshape(n, c, *grid.shape[1:-1])


def _grid_values(rng, shape):
    """Grid coordinates inside and outside [-1, 1], with the ends, the centre and ties."""
    values = rng.uniform(-1.4, 1.4, size=shape)
    flat = values.reshape(-1)
    special = [-1.0, 1.0, 0.0, -0.5, 0.5, -1.25, 1.5]
    flat[::5] = np.resize(special, flat[::5].shape)
    return values.astype(np.float32)


def test_grid_sample_matches_numpy(device):
    rng = np.random.default_rng(3)
    cases = [((2, 3, 4, 5), (2, 3, 4, 2), ("bilinear", "nearest", "bicubic")),
             ((1, 2, 1, 3), (1, 2, 2, 2), ("bilinear", "nearest", "bicubic")),
             ((2, 2, 3, 4, 5), (2, 2, 3, 2, 3), ("bilinear", "nearest"))]
    for input_shape, grid_shape, modes in cases:
        x = rng.standard_normal(input_shape).astype(np.float32)
        g = _grid_values(rng, grid_shape)
        t, grid = torch.tensor(x, device=device), torch.tensor(g, device=device)
        for mode in modes:
            for padding_mode in ("zeros", "border", "reflection"):
                for align in (False, True):
                    out = F.grid_sample(t, grid, mode=mode, padding_mode=padding_mode, align_corners=align)
                    expected = _grid_sample_reference(x, g, mode, padding_mode, align)
                    assert tuple(out.shape) == expected.shape
                    assert_close(out, expected, rtol=1e-4, atol=1e-5)
    # align_corners=None is False, as in PyTorch.
    assert_close(F.grid_sample(t, grid), _grid_sample_reference(x, g, "bilinear", "zeros", False), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="grid_sample"):
        F.grid_sample(t, grid, mode="area")
    with pytest.raises(ValueError, match="grid_sample"):
        F.grid_sample(t, grid, mode="bicubic")


def _affine_grid_reference(theta, size, align_corners):
    def base(count):
        if count == 1:
            return np.zeros(1)
        line = np.linspace(-1, 1, count)
        return line if align_corners else line * (count - 1) / count

    spatial = size[2:]
    axes = np.meshgrid(*[base(s) for s in spatial], indexing="ij")
    rows = np.stack([*axes[::-1], np.ones(spatial)], axis=-1)
    return np.einsum("...i,nji->n...j", rows, np.asarray(theta, dtype=np.float64))


def test_affine_grid_matches_numpy_and_feeds_grid_sample(device):
    rng = np.random.default_rng(4)
    for size, theta_shape in (((2, 3, 4, 5), (2, 2, 3)), ((1, 2, 3, 1, 4), (1, 3, 4))):
        theta = rng.standard_normal(theta_shape).astype(np.float32)
        for align in (False, True):
            grid = F.affine_grid(torch.tensor(theta, device=device), list(size), align_corners=align)
            assert_close(grid, _affine_grid_reference(theta, size, align), rtol=1e-5, atol=1e-6)
    # The identity map samples every pixel at its centre: the input comes back.
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    identity = torch.tensor(np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1)), device=device)
    for align in (False, True):
        grid = F.affine_grid(identity, (2, 3, 4, 5), align_corners=align)
        assert_close(F.grid_sample(torch.tensor(x, device=device), grid, align_corners=align), x, rtol=1e-5, atol=1e-5)


def test_grid_sample_gradients_match_finite_differences(device):
    """Bilinear: the gradients to the input and to the grid against central differences of
    the numpy reference (the grid keeps away from the kinks at whole and half pixels)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 3, 4))
    whole = rng.integers(-2, 5, size=(1, 2, 3, 2))
    fraction = rng.choice([0.15, 0.3, 0.65, 0.85], size=whole.shape)
    weights = rng.uniform(0.5, 1.5, size=(1, 2, 2, 3))
    step = 1e-6
    for padding_mode in ("zeros", "border", "reflection"):
        for align in (False, True):
            sizes = np.array([4, 3])  # x then y
            pixels = whole + fraction
            g = pixels * 2 / (sizes - 1) - 1 if align else (2 * pixels + 1) / sizes - 1
            t = torch.tensor(x.astype(np.float32), device=device, requires_grad=True)
            grid = torch.tensor(g.astype(np.float32), device=device, requires_grad=True)
            out = F.grid_sample(t, grid, padding_mode=padding_mode, align_corners=align)
            (out * torch.tensor(weights.astype(np.float32), device=device)).sum().backward()

            def objective(xv, gv):
                return (_grid_sample_reference(xv, gv, "bilinear", padding_mode, align) * weights).sum()

            for value, tensor, is_grid in ((x, t, False), (g, grid, True)):
                numeric = np.zeros(value.size)
                for i in range(value.size):
                    delta = np.zeros(value.size)
                    delta[i] = step
                    delta = delta.reshape(value.shape)
                    plus = (x, g + delta) if is_grid else (x + delta, g)
                    minus = (x, g - delta) if is_grid else (x - delta, g)
                    numeric[i] = (objective(*plus) - objective(*minus)) / (2 * step)
                assert_close(tensor.grad, numeric.reshape(value.shape), rtol=1e-3, atol=1e-4)
