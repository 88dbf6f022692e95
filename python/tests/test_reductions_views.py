"""Reductions (with ``dim``/``keepdim``) and views, compared with numpy."""

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close

X = np.array([[[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]], [[0.5, -1.0, 7.0], [2.0, 2.0, -3.0]]], dtype=np.float32)


CASES = [(None, False)] + [(dim, keepdim) for dim in (0, 1, -1, (0, 2)) for keepdim in (False, True)]


@pytest.mark.parametrize("dim,keepdim", CASES)
def test_sum_mean_var_std_match_numpy(dim, keepdim, device):
    x = torch.tensor(X, device=device)
    axis = dim
    assert_close(x.sum(dim, keepdim) if dim is not None else x.sum(), X.sum(axis=axis, keepdims=keepdim), rtol=1e-5)
    assert_close(x.mean(dim, keepdim) if dim is not None else x.mean(), X.mean(axis=axis, keepdims=keepdim), rtol=1e-5)
    if dim is not None:
        assert_close(x.var(dim, keepdim=keepdim), X.var(axis=axis, ddof=1, keepdims=keepdim), rtol=1e-4)
        assert_close(x.std(dim, unbiased=False, keepdim=keepdim), X.std(axis=axis, keepdims=keepdim), rtol=1e-4)
        assert_close(x.prod(dim, keepdim), X.prod(axis=axis, keepdims=keepdim), rtol=1e-5)


def test_max_min_argmax_argmin(device):
    x = torch.tensor(X, device=device)
    assert x.max().item() == 7.0 and x.min().item() == -3.0
    values, indices = x.max(dim=2)
    assert_close(values, X.max(axis=2))
    assert indices.tolist() == X.argmax(axis=2).tolist() and indices.dtype == torch.int64
    result = x.min(1, keepdim=True)
    assert_close(result.values, X.min(axis=1, keepdims=True))
    assert result.indices.tolist() == X.argmin(axis=1)[:, None, :].tolist()
    assert x.argmax().item() == int(X.argmax())
    assert x.argmin(dim=-1).tolist() == X.argmin(axis=-1).tolist()
    assert_close(torch.max(x, torch.zeros_like(x)), np.maximum(X, 0))
    assert_close(x.amax((0, 1)), X.max(axis=(0, 1)))


def test_bool_reductions_count(device):
    b = torch.tensor([[True, False, True], [True, True, True]], device=device)
    assert b.sum().item() == 5 and b.sum().dtype == torch.int64
    assert b.sum(1).tolist() == [2, 3]
    assert b.all().item() is False and b.any().item() is True
    assert b.float().mean().item() == pytest.approx(5 / 6)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.tensor([1, 2]).mean()


def test_views_match_numpy(device):
    x = torch.tensor(X, device=device)
    assert_close(x.view(6, 2), X.reshape(6, 2))
    assert_close(x.reshape(-1), X.reshape(-1))
    assert_close(x.view((3, -1)), X.reshape(3, -1))
    assert_close(x.permute(2, 0, 1), X.transpose(2, 0, 1))
    assert_close(x.transpose(0, 2), X.swapaxes(0, 2))
    assert_close(x[0].t(), X[0].T)
    assert_close(x[0].T, X[0].T)
    assert_close(x.unsqueeze(1), X[:, None])
    assert tuple(x.unsqueeze(-1).shape) == (2, 2, 3, 1)
    assert tuple(torch.zeros(1, 3, 1).squeeze().shape) == (3,)
    assert tuple(torch.zeros(1, 3, 1).squeeze(0).shape) == (3, 1)
    assert_close(x.flatten(), X.reshape(-1))
    assert_close(x.flatten(1), X.reshape(2, -1))
    assert_close(torch.tensor([[1.0], [2.0]], device=device).expand(2, 3), np.array([[1.0] * 3, [2.0] * 3]))
    assert_close(torch.tensor([1.0, 2.0], device=device).expand(3, -1), np.array([[1.0, 2.0]] * 3))
    assert x.transpose(0, 1).contiguous().is_contiguous()
    assert_close(torch.cat([x, x], 1), np.concatenate([X, X], 1))
    assert_close(torch.stack([x, x]), np.stack([X, X]))
    parts = x.chunk(3, dim=2)
    assert len(parts) == 3 and tuple(parts[0].shape) == (2, 2, 1)
    assert [tuple(p.shape) for p in x.split([1, 2], dim=2)] == [(2, 2, 1), (2, 2, 2)]
    with pytest.raises(RuntimeError):
        x.view(5, 5)


def test_cumsum_of_every_dtype(device):
    x = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert x.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]] and x.cumsum(1).dtype == torch.int64
    mask = torch.tensor([True, False, True, True], device=device)
    assert mask.cumsum(0).tolist() == [1, 1, 2, 3] and mask.cumsum(0).dtype == torch.int64
    assert torch.cumsum(x, 0, dtype=torch.float32).tolist() == [[1.0, 2.0, 3.0], [5.0, 7.0, 9.0]]
    values = np.random.default_rng(0).standard_normal((3, 700)).astype(np.float32)
    assert_close(torch.tensor(values, device=device).cumsum(-1), np.cumsum(values, -1), rtol=1e-4, atol=1e-4)
    w = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    (w.cumsum(0) * torch.tensor([1.0, 10.0, 100.0], device=device)).sum().backward()
    assert w.grad.tolist() == [111.0, 110.0, 100.0]

