"""The ``torch``-namespace functions written over tensor ops (``anygrad/_functions.py``)
against numpy on every device, and the sampling functions' statistics."""

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close


def test_shape_helpers(device):
    a = torch.arange(3, device=device)
    b = torch.arange(4, device=device)
    for indexing in ("ij", "xy"):
        got = torch.meshgrid(a, b, indexing=indexing)
        expected = np.meshgrid(np.arange(3), np.arange(4), indexing=indexing)
        for g, e in zip(got, expected):
            assert g.tolist() == e.tolist()
    x, y = torch.broadcast_tensors(torch.zeros(3, 1, device=device), torch.ones(4, device=device))
    assert tuple(x.shape) == tuple(y.shape) == (3, 4)
    z = torch.arange(24, device=device).reshape(2, 3, 4)
    assert torch.movedim(z, 0, -1).tolist() == np.moveaxis(np.arange(24).reshape(2, 3, 4), 0, -1).tolist()
    assert torch.movedim(z, (0, 1), (2, 0)).tolist() == np.moveaxis(np.arange(24).reshape(2, 3, 4), (0, 1), (2, 0)).tolist()
    assert torch.swapaxes(z, 0, 2).shape == (4, 3, 2)
    assert torch.tile(a, (2, 2)).tolist() == np.tile(np.arange(3), (2, 2)).tolist()
    assert torch.hstack([a, a]).tolist() == [0, 1, 2, 0, 1, 2]
    assert torch.vstack([a, a]).tolist() == [[0, 1, 2], [0, 1, 2]]
    assert torch.column_stack([a, a]).tolist() == [[0, 0], [1, 1], [2, 2]]
    with pytest.raises(RuntimeError, match="broadcast"):
        torch.broadcast_tensors(torch.zeros(3, device=device), torch.zeros(4, device=device))


def test_arithmetic_helpers(device):
    values = np.array([[1.0, 4.0, 9.0], [16.0, 25.0, -36.0]], dtype=np.float32)
    x = torch.tensor(values, device=device)
    assert_close(torch.diff(x, dim=1), np.diff(values, axis=1))
    assert_close(torch.diff(x, n=2, dim=1), np.diff(values, n=2, axis=1))
    assert torch.trace(x).item() == 26.0
    assert_close(torch.addcmul(x, x, x, value=0.5), values + 0.5 * values * values)
    assert_close(torch.addcdiv(x, x, x + 1, value=2), values + 2 * values / (values + 1), rtol=1e-5)
    assert_close(torch.fmod(x, 5.0), np.fmod(values, 5.0), rtol=1e-5, atol=1e-5)
    close = torch.isclose(x, x + 1e-6, rtol=0, atol=1e-5)
    assert bool(close.all())
    nan = torch.tensor([float("nan"), 1.0], device=device)
    assert torch.isclose(nan, nan).tolist() == [False, True] and torch.isclose(nan, nan, equal_nan=True).tolist() == [True, True]
    assert torch.count_nonzero(torch.tensor([[0, 1], [2, 0]], device=device)).item() == 2
    assert torch.count_nonzero(torch.tensor([[0, 1], [2, 3]], device=device), dim=1).tolist() == [1, 2]
    order = x.argsort(dim=1)
    assert_close(torch.take_along_dim(x, order, dim=1), np.take_along_axis(values, np.argsort(values, axis=1), axis=1))
    assert_close(torch.cumprod(x, 1), np.cumprod(values, axis=1), rtol=1e-5)


def test_search_and_dtype_facts(device):
    sequence = np.array([1.0, 3.0, 5.0, 7.0], dtype=np.float32)
    values = np.array([0.0, 3.0, 6.0, 9.0], dtype=np.float32)
    s, v = torch.tensor(sequence, device=device), torch.tensor(values, device=device)
    for side in ("left", "right"):
        assert torch.searchsorted(s, v, side=side).tolist() == np.searchsorted(sequence, values, side=side).tolist()
    rows = torch.tensor([[1.0, 2.0], [5.0, 6.0]], device=device)
    assert torch.searchsorted(rows, torch.tensor([[1.5], [7.0]], device=device)).tolist() == [[1], [2]]
    assert torch.bucketize(v, s, right=True).tolist() == np.digitize(values, sequence).tolist()
    assert torch.finfo(torch.float16).eps == float(np.finfo(np.float16).eps)
    assert torch.finfo().max == float(np.finfo(np.float32).max)
    assert torch.iinfo(torch.int64).max == 2**63 - 1
    with pytest.raises(TypeError):
        torch.iinfo(torch.float32)


def test_sampling_statistics(device):
    torch.manual_seed(0)
    weights = torch.tensor([1.0, 0.0, 3.0, 4.0], device=device)
    draws = torch.multinomial(weights, 4000, replacement=True)
    counts = np.bincount(draws.cpu().numpy(), minlength=4) / 4000
    assert counts[1] == 0 and np.allclose(counts, [0.125, 0.0, 0.375, 0.5], atol=0.03), counts
    without = torch.multinomial(torch.tensor([[1.0, 2.0, 3.0, 4.0, 0.0]], device=device), 4)
    assert sorted(without[0].tolist()) == [0, 1, 2, 3]
    firsts = np.bincount([torch.multinomial(weights, 1).item() for _ in range(400)], minlength=4) / 400
    assert np.allclose(firsts, [0.125, 0.0, 0.375, 0.5], atol=0.08), firsts
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(weights, 5)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.multinomial(torch.tensor([-1.0, 2.0], device=device), 1)
    samples = torch.normal(torch.full((20000,), 2.0, device=device), 0.5)
    assert abs(samples.mean().item() - 2.0) < 0.02 and abs(samples.std().item() - 0.5) < 0.02
    coins = torch.bernoulli(torch.full((20000,), 0.25, device=device))
    assert abs(coins.mean().item() - 0.25) < 0.02


def test_settings_scripts_set():
    model = torch.nn.Linear(2, 2)
    assert torch.compile(model) is model
    assert torch.compile()(len) is len
    torch.set_float32_matmul_precision("high")
    assert torch.get_float32_matmul_precision() == "high"
    torch.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="precision"):
        torch.set_float32_matmul_precision("fast")
