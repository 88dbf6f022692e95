"""Selections that return PyTorch's named tuples (``topk``, ``sort``, ``max``/``min`` with a
dim, ``kthvalue``, ``median``, ``mode``) against numpy on every device, and the stability of
``sort``/``argsort`` (with and without ``stable=True``)."""

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close

VALUES = np.array([[3.0, 1.0, 2.0, 1.0, 5.0], [0.0, 5.0, 4.0, 5.0, 5.0]], dtype=np.float32)


def test_topk_returns_named_tuple(device):
    x = torch.tensor(VALUES, device=device)
    for result in (x.topk(2), torch.topk(x, 2), torch.topk(x, k=2, dim=1, largest=True, sorted=True)):
        assert type(result).__name__ == "topk"
        assert result._fields == ("values", "indices")
        values, indices = result
        assert result.values is values and result.indices is indices
        assert result.values.tolist() == [[5.0, 3.0], [5.0, 5.0]]
        assert result.indices.tolist() == [[4, 0], [1, 3]]
        assert result.indices.dtype == torch.int64
    smallest = x.topk(2, dim=0, largest=False)
    assert smallest.values.tolist() == np.sort(VALUES, axis=0)[:2].tolist()


def test_sort_returns_named_tuple_and_is_stable(device):
    x = torch.tensor(VALUES, device=device)
    for stable in (False, True):
        result = x.sort(dim=1, stable=stable)
        assert type(result).__name__ == "sort"
        assert_close(result.values, np.sort(VALUES, axis=1, kind="stable"))
        assert result.indices.tolist() == np.argsort(VALUES, axis=1, kind="stable").tolist()
        descending = torch.sort(x, dim=1, descending=True, stable=stable)
        # Stable descending keeps equal values in their original order too.
        assert descending.indices.tolist() == [[4, 0, 2, 1, 3], [1, 3, 4, 2, 0]]
        assert torch.argsort(x, dim=1, stable=stable).tolist() == result.indices.tolist()
    values, indices = torch.sort(x)
    assert values.tolist() == np.sort(VALUES).tolist() and indices.shape == (2, 5)
    ties = torch.zeros(64, device=device)
    assert ties.sort(stable=True).indices.tolist() == list(range(64))
    with pytest.raises(TypeError, match="stable"):
        x.sort(stable="yes")


def test_max_min_with_dim_named(device):
    x = torch.tensor(VALUES, device=device)
    high = x.max(dim=1)
    assert type(high).__name__ == "max" and high.values.tolist() == [5.0, 5.0] and high.indices.tolist() == [4, 1]
    low = torch.min(x, 1)
    assert type(low).__name__ == "min" and low.values.tolist() == [1.0, 0.0] and low.indices.tolist() == [1, 0]


def test_kthvalue_median_mode(device):
    x = torch.tensor(VALUES, device=device)
    kth = x.kthvalue(2, dim=1)
    assert type(kth).__name__ == "kthvalue"
    assert kth.values.tolist() == np.sort(VALUES, axis=1)[:, 1].tolist()
    picked = np.take_along_axis(VALUES, np.array(kth.indices.tolist())[:, None], axis=1)[:, 0]
    assert picked.tolist() == kth.values.tolist()
    assert torch.kthvalue(x, 1, 0, keepdim=True).values.shape == (1, 5)
    # median: the lower of the two middle values, as PyTorch.
    assert torch.median(x).item() == np.sort(VALUES.reshape(-1))[(VALUES.size - 1) // 2]
    med = x.median(dim=1)
    assert type(med).__name__ == "median"
    assert med.values.tolist() == np.sort(VALUES, axis=1)[:, 2].tolist()
    even = torch.tensor([[4.0, 1.0, 3.0, 2.0]], device=device).median(1)
    assert even.values.tolist() == [2.0] and even.indices.tolist() == [3]
    most = x.mode(dim=1)
    assert type(most).__name__ == "mode"
    # Row 0: 1.0 twice (last at 3); row 1: 5.0 three times (last at 4).
    assert most.values.tolist() == [1.0, 5.0] and most.indices.tolist() == [3, 4]
    tie = torch.tensor([2, 7, 7, 2, 9], device=device).mode()
    assert tie.values.item() == 2 and tie.indices.item() == 3
    by_column = torch.mode(torch.tensor([[1, 2], [1, 3], [4, 3]], device=device), 0, keepdim=True)
    assert by_column.values.tolist() == [[1, 3]] and by_column.indices.tolist() == [[1, 2]]
    with pytest.raises(RuntimeError, match="out of range"):
        x.kthvalue(6, dim=1)


def test_topk_gradient_flows_to_picked_values(device):
    x = torch.tensor(VALUES, device=device, requires_grad=True)
    x.topk(2, dim=1).values.sum().backward()
    expected = np.zeros_like(VALUES)
    expected[0, [4, 0]] = 1
    expected[1, [1, 3]] = 1
    assert_close(x.grad, expected)
