"""Python indexing and assignment, compared with numpy: ints, negative ints, slices with
steps, None, Ellipsis, boolean masks, index tensors and lists."""

import numpy as np
import pytest

import anygrad as torch

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

KEYS = [
    0, -1, (1, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2)), (Ellipsis, 2),
    (None, 1), (slice(None), None, slice(1, 3)), (0, Ellipsis, slice(None, None, 3)),
    (slice(None, None, 2), -1, slice(4, 0, None)), (1, slice(None), 4),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_basic_indexing_matches_numpy(key, device):
    x = torch.tensor(X, device=device)
    np.testing.assert_array_equal(x[key].cpu().numpy(), X[key])


def test_advanced_indexing_matches_numpy(device):
    x = torch.tensor(X, device=device)
    index = np.array([2, 0, 2])
    np.testing.assert_array_equal(x[torch.tensor(index, device=device)].cpu().numpy(), X[index])
    np.testing.assert_array_equal(x[[0, 2]].cpu().numpy(), X[[0, 2]])
    np.testing.assert_array_equal(x[:, [1, 3]].cpu().numpy(), X[:, [1, 3]])
    np.testing.assert_array_equal(x[[0, 1], [2, 3]].cpu().numpy(), X[[0, 1], [2, 3]])
    np.testing.assert_array_equal(x[:, [0, 1], [2, 3]].cpu().numpy(), X[:, [0, 1], [2, 3]])
    np.testing.assert_array_equal(x[[0, 1], :, [2, 3]].cpu().numpy(), X[[0, 1], :, [2, 3]])
    np.testing.assert_array_equal(x[torch.tensor([-1])].cpu().numpy(), X[[-1]])
    mask = X > 30
    np.testing.assert_array_equal(x[x > 30].cpu().numpy(), X[mask])
    rows = np.array([True, False, True])
    np.testing.assert_array_equal(x[torch.tensor(rows, device=device)].cpu().numpy(), X[rows])
    np.testing.assert_array_equal(x[1, torch.tensor([[0, 1], [2, 3]], device=device)].cpu().numpy(), X[1, np.array([[0, 1], [2, 3]])])


def test_index_errors_are_index_errors(device):
    x = torch.tensor(X, device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    if device == "cpu":
        with pytest.raises(IndexError, match="out of bounds"):
            x[torch.tensor([0, 5], device=device)]
    else:
        # As on CUDA, the kernel checks a GPU index: the error comes at the next readback.
        for bad in ([0, 5], [-4, 1]):
            with pytest.raises(ValueError, match="index was out of range"):
                x[torch.tensor(bad, device=device)].cpu()
        np.testing.assert_array_equal(x[torch.tensor([-1, 0], device=device)].cpu().numpy(), X[[-1, 0]])
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(ValueError, match="step"):
        x[::-1]


def test_assignment_matches_numpy(device):
    cases = [
        (0, 7.0), ((slice(None), 1), -1.0), ((1, slice(None, None, 2)), 3.0),
        (([0, 2],), 9.0), ((slice(None), [0, 3], 1), 5.0),
    ]
    for key, value in cases:
        expected = X.copy()
        expected[key] = value
        x = torch.tensor(X, device=device)
        x[key] = value
        np.testing.assert_array_equal(x.cpu().numpy(), expected)
    expected = X.copy()
    expected[expected > 40] = 0
    x = torch.tensor(X, device=device)
    x[x > 40] = 0
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    x = torch.tensor(X, device=device)
    x[0, :, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    expected = X.copy()
    expected[0, :, 0] = [1, 2, 3, 4]
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    i = torch.zeros(4, dtype=torch.long, device=device)
    i[1:3] = 5
    assert i.tolist() == [0, 5, 5, 0]
    # A position named twice is written, not added to: the last value stays (numpy's rule,
    # and PyTorch's on the CPU), also for an infinite value written before it.
    x = torch.zeros(5, device=device)
    x[torch.tensor([1, 1, 3], device=device)] = 5.0
    assert x.tolist() == [0.0, 5.0, 0.0, 5.0, 0.0]
    x[torch.tensor([2, 4, 2], device=device)] = torch.tensor([float("inf"), 7.0, 3.0], device=device)
    assert x.tolist() == [0.0, 5.0, 3.0, 5.0, 7.0]


def test_assignment_shape_mismatch_is_an_error():
    x = torch.zeros(2, 3)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[0] = torch.ones(2)


def test_gather_index_select_masked_fill(device):
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.gather(1, torch.tensor([[1], [0]], device=device)).tolist() == [[2.0], [3.0]]
    assert x.index_select(0, torch.tensor([1, 1], device=device)).tolist() == [[3.0, 4.0], [3.0, 4.0]]
    assert x.masked_fill(x > 2, 0.0).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert torch.where(x > 2, x, 0.0).tolist() == [[0.0, 0.0], [3.0, 4.0]]
