"""``F.pad`` in its modes "constant", "reflect", "replicate" and "circular" against numpy's
``pad`` ("constant", "reflect", "edge", "wrap"), on every device and for 1 to 3 padded dims,
with the gradients each copied element collects; and the padding layers
(``ZeroPad*``, ``ConstantPad*``, ``ReflectionPad*``, ``ReplicationPad*``, ``CircularPad*``)."""

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close

NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _numpy_pad(values, pad, mode):
    widths = [(0, 0)] * values.ndim
    for i in range(len(pad) // 2):
        widths[values.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(values, widths, mode=NUMPY_MODES[mode])


def _numpy_pad_gradient(shape, pad, mode, upstream):
    """The input's gradient: each output element's upstream value added to the element it
    copies (found by padding the input's flat positions)."""
    positions = np.arange(int(np.prod(shape))).reshape(shape)
    if mode == "constant":
        positions = _numpy_pad(positions + 1, pad, mode) - 1
    else:
        positions = _numpy_pad(positions, pad, mode)
    gradient = np.zeros(int(np.prod(shape)))
    keep = positions >= 0
    np.add.at(gradient, positions[keep], upstream[keep])
    return gradient.reshape(shape)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape,pad",
    [((2, 3, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 3, 0)), ((1, 1, 3, 4, 4), (1, 1, 2, 1, 0, 2)), ((2, 3, 4), (3, 3))],
)
def test_pad_matches_numpy(device, mode, shape, pad):
    rng = np.random.default_rng(len(shape))
    values = rng.standard_normal(shape).astype(np.float32)
    x = torch.tensor(values, device=device, requires_grad=True)
    out = F.pad(x, pad, mode=mode)
    expected = _numpy_pad(values, pad, mode)
    assert out.shape == expected.shape
    assert_close(out, expected)
    upstream = rng.standard_normal(expected.shape).astype(np.float32)
    (out * torch.tensor(upstream, device=device)).sum().backward()
    assert_close(x.grad, _numpy_pad_gradient(shape, pad, mode, upstream), rtol=1e-5, atol=1e-5)


def test_pad_crops_and_checks(device):
    values = np.arange(10, dtype=np.float32).reshape(1, 10)
    x = torch.tensor(values, device=device)
    assert F.pad(x, (-2, 1), mode="replicate").tolist() == [[2, 3, 4, 5, 6, 7, 8, 9, 9]]
    assert F.pad(x, (1, -3), mode="reflect").tolist() == [[1, 0, 1, 2, 3, 4, 5, 6]]
    assert F.pad(x, (1, 1), value=7.0).tolist()[0][0] == 7.0
    with pytest.raises(RuntimeError, match="less than"):
        F.pad(x, (10, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="at most"):
        F.pad(x, (11, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="mode"):
        F.pad(x, (1, 1), mode="symmetric")
    with pytest.raises(ValueError, match="even"):
        F.pad(x, (1, 1, 1))


def test_padding_layers(device):
    values = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4)
    x = torch.tensor(values, device=device)
    cases = [
        (nn.ZeroPad2d(1), (1, 1, 1, 1), "constant"),
        (nn.ZeroPad2d((1, 0, 2, 1)), (1, 0, 2, 1), "constant"),
        (nn.ReflectionPad2d((2, 1, 1, 2)), (2, 1, 1, 2), "reflect"),
        (nn.ReplicationPad2d(2), (2, 2, 2, 2), "replicate"),
        (nn.CircularPad2d(1), (1, 1, 1, 1), "circular"),
        (nn.ReflectionPad1d(2), (2, 2), "reflect"),
        (nn.ReplicationPad1d((0, 3)), (0, 3), "replicate"),
        (nn.ZeroPad1d(2), (2, 2), "constant"),
    ]
    for layer, pad, mode in cases:
        assert_close(layer(x), _numpy_pad(values, pad, mode))
    constant = nn.ConstantPad2d((1, 1, 0, 2), 3.5)
    expected = np.pad(values, [(0, 0), (0, 0), (0, 2), (1, 1)], constant_values=3.5)
    assert_close(constant(x), expected)
    assert_close(nn.ConstantPad1d(1, -1.0)(x), np.pad(values, [(0, 0), (0, 0), (0, 0), (1, 1)], constant_values=-1.0))
    assert nn.ConstantPad3d(1, 0.0)(x).shape == (1, 4, 5, 6)
    assert repr(nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    assert repr(nn.ReflectionPad2d((1, 2, 3, 4))) == "ReflectionPad2d((1, 2, 3, 4))"
    with pytest.raises(ValueError):
        nn.ReflectionPad2d((1, 2))
