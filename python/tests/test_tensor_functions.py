"""``unique``, ``roll``, ``lerp``, ``index_put``/``index_put_``, ``cdist``, ``einsum``, memory formats
and ``nn.utils.rnn.pad_sequence`` against numpy written from PyTorch's definitions, on every
device, with their gradients."""

import pickle

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
from anygrad.nn.utils.rnn import pad_sequence
from conftest import assert_close


def test_unique(device):
    values = np.array([[3, 1, 2, 1], [0, 5, 3, 5]], dtype=np.int64)
    x = torch.tensor(values, device=device)
    assert torch.unique(x).tolist() == np.unique(values).tolist()
    output, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    expected, expected_inverse, expected_counts = np.unique(values, return_inverse=True, return_counts=True)
    assert output.tolist() == expected.tolist()
    assert inverse.tolist() == expected_inverse.reshape(values.shape).tolist()
    assert counts.tolist() == expected_counts.tolist()
    assert inverse.dtype == torch.int64 and counts.dtype == torch.int64
    floats = torch.tensor([0.5, -1.0, 0.5, 2.0], device=device)
    out, counts = floats.unique(sorted=False, return_counts=True)
    assert out.tolist() == [-1.0, 0.5, 2.0] and counts.tolist() == [1, 2, 1]
    assert torch.unique(torch.tensor([True, False, True], device=device)).tolist() == [False, True]
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 4]], dtype=np.int64)
    y = torch.tensor(rows, device=device)
    output, inverse, counts = torch.unique(y, dim=0, return_inverse=True, return_counts=True)
    expected, expected_inverse, expected_counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    assert output.tolist() == expected.tolist() and output.device == y.device
    assert inverse.tolist() == expected_inverse.reshape(-1).tolist()
    assert counts.tolist() == expected_counts.tolist()
    assert y.unique(dim=1).tolist() == np.unique(rows, axis=1).tolist()
    assert torch.unique(y.float(), dim=-1).tolist() == np.unique(rows, axis=1).astype(np.float32).tolist()


def test_roll(device):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = torch.tensor(values, device=device)
    assert torch.roll(x, 1).tolist() == np.roll(values, 1).tolist()
    assert x.roll(-5).tolist() == np.roll(values, -5).tolist()
    assert torch.roll(x, 1, 0).tolist() == np.roll(values, 1, 0).tolist()
    assert torch.roll(x, (1, -1), (0, 1)).tolist() == np.roll(values, (1, -1), (0, 1)).tolist()
    assert x.roll(shifts=2, dims=-1).tolist() == np.roll(values, 2, -1).tolist()
    with pytest.raises(RuntimeError, match="align"):
        x.roll((1, 2), 0)


def test_lerp(device):
    start = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    end = np.array([10.0, 10.0, 10.0], dtype=np.float32)
    weight = np.array([0.0, 0.5, 1.0], dtype=np.float32)
    a = torch.tensor(start, device=device, requires_grad=True)
    b = torch.tensor(end, device=device, requires_grad=True)
    assert_close(torch.lerp(a, b, 0.25), start + 0.25 * (end - start))
    w = torch.tensor(weight, device=device, requires_grad=True)
    out = a.lerp(b, w)
    assert_close(out, start + weight * (end - start))
    out.sum().backward()
    assert_close(a.grad, 1 - weight)
    assert_close(b.grad, weight)
    assert_close(w.grad, end - start)


def test_index_put(device):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = torch.tensor(values, device=device)
    rows = torch.tensor([0, 2, 0], device=device)
    cols = torch.tensor([1, 3, 1], device=device)
    added = x.index_put((rows, cols), torch.tensor([1.0, 2.0, 3.0], device=device), accumulate=True)
    expected = values.copy()
    np.add.at(expected, (np.array([0, 2, 0]), np.array([1, 3, 1])), np.array([1.0, 2.0, 3.0]))
    assert_close(added, expected)
    assert_close(x, values)  # out of place
    put = x.index_put((torch.tensor([1], device=device),), torch.tensor(-1.0, device=device))
    expected = values.copy()
    expected[1] = -1
    assert_close(put, expected)
    mask = torch.tensor(values > 6, device=device)
    assert_close(x.index_put((mask,), torch.tensor(0.0, device=device)), np.where(values > 6, 0, values))
    y = x.clone()
    assert y.index_put_((rows, cols), torch.tensor(5.0, device=device)) is y
    expected = values.copy()
    expected[[0, 2], [1, 3]] = 5
    assert_close(y, expected)
    y.index_put_((torch.tensor([-1], device=device), torch.tensor([0], device=device)), torch.tensor([1.0], device=device), accumulate=True)
    expected[2, 0] += 1
    assert_close(y, expected)
    # Gradients reach the input (where not overwritten) and the values.
    base = torch.tensor(values, device=device, requires_grad=True)
    source = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    out = base.index_put((torch.tensor([0, 1], device=device), torch.tensor([0, 0], device=device)), source)
    (out * torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)).sum().backward()
    expected_grad = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected_grad[[0, 1], [0, 0]] = 0
    assert_close(base.grad, expected_grad)
    assert_close(source.grad, [0.0, 4.0])


def _cdist(a, b, p):
    difference = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (difference != 0).sum(-1).astype(np.float64)
    if p == np.inf:
        return difference.max(-1)
    return (difference ** p).sum(-1) ** (1.0 / p)


def test_cdist(device):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 3)).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)
    x1, x2 = torch.tensor(a, device=device), torch.tensor(b, device=device)
    for p in (2.0, 1.0, 3.0, 0.0, float("inf")):
        assert_close(torch.cdist(x1, x2, p=p), _cdist(a, b, p), rtol=1e-4, atol=1e-5)
    assert torch.cdist(x1[0], x2[0]).shape == (4, 5)
    # The gradient at a zero distance is zero (not NaN).
    same = torch.tensor(a[0], device=device, requires_grad=True)
    torch.cdist(same, same).sum().backward()
    assert np.isfinite(same.grad.cpu().numpy()).all()
    with pytest.raises(RuntimeError, match="columns"):
        torch.cdist(x1, torch.zeros(2, 5, 4, device=device))


def test_memory_formats_are_accepted(device):
    x = torch.randn(2, 3, 4, 5, device=device)
    for memory_format in (torch.channels_last, torch.contiguous_format, torch.preserve_format):
        assert_close(x.to(memory_format=memory_format), x.cpu().numpy())
        assert_close(x.to(device, memory_format=memory_format), x.cpu().numpy())
        assert_close(x.contiguous(memory_format=memory_format), x.cpu().numpy())
    assert x.is_contiguous() and x.is_contiguous(memory_format=torch.contiguous_format)
    assert not x.is_contiguous(memory_format=torch.channels_last)
    assert torch.ones(2, 1, 3, 3, device=device).is_contiguous(memory_format=torch.channels_last)
    model = nn.Conv2d(3, 4, 3).to(device, memory_format=torch.channels_last)
    assert model.weight.device == torch.device(device)
    assert model(x.to(memory_format=torch.channels_last)).shape == (2, 4, 2, 3)
    assert repr(torch.channels_last) == "anygrad.channels_last"
    assert pickle.loads(pickle.dumps(torch.channels_last)) is torch.channels_last
    assert isinstance(torch.channels_last, torch.memory_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")


def test_pad_sequence(device):
    sequences = [torch.tensor(np.full((n, 2), n, dtype=np.float32), device=device, requires_grad=True) for n in (3, 1, 2)]
    out = pad_sequence(sequences)
    assert out.shape == (3, 3, 2)
    expected = np.zeros((3, 3, 2), dtype=np.float32)
    for b, n in enumerate((3, 1, 2)):
        expected[:n, b] = n
    assert_close(out, expected)
    first = pad_sequence(sequences, batch_first=True, padding_value=-1.0, padding_side="left")
    expected = np.full((3, 3, 2), -1.0, dtype=np.float32)
    for b, n in enumerate((3, 1, 2)):
        expected[b, 3 - n:] = n
    assert_close(first, expected)
    first.sum().backward()
    assert_close(sequences[1].grad, np.ones((1, 2)))
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence(sequences, padding_side="middle")


def test_einsum_matches_numpy(device):
    rng = np.random.RandomState(5)
    a, b = rng.rand(2, 3, 4).astype(np.float32), rng.rand(2, 4, 5).astype(np.float32)
    square, v = rng.rand(3, 3).astype(np.float32), rng.rand(3).astype(np.float32)
    ta, tb = torch.tensor(a, device=device), torch.tensor(b, device=device)
    ts, tv = torch.tensor(square, device=device), torch.tensor(v, device=device)
    for equation, operands, arrays in [
        ("bij,bjk->bik", (ta, tb), (a, b)),
        ("...ij,...jk", (ta, tb), (a, b)),
        ("ii", (ts,), (square,)),
        ("ii->i", (ts,), (square,)),
        ("i,j->ij", (tv, tv), (v, v)),
        ("i,ij,j->", (tv, ts, tv), (v, square, v)),
    ]:
        np.testing.assert_allclose(torch.einsum(equation, *operands).cpu().numpy(), np.einsum(equation, *arrays), rtol=1e-5, atol=1e-5)
    # Operands as one list, and gradients through the product.
    x = torch.tensor(a, device=device, requires_grad=True)
    torch.einsum("bij,bjk->bik", [x, tb]).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.broadcast_to(b.sum(axis=2)[:, None, :], a.shape), rtol=1e-5)
    with pytest.raises((ValueError, RuntimeError), match="einsum"):
        torch.einsum("ij,jk->ik", ta)
