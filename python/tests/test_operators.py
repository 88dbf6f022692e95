"""Operators with scalars and broadcasting, their reversed and in-place forms, comparisons
and logical operators, compared with numpy; the type promotion PyTorch applies."""

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close

A = np.array([[1.5, -2.0, 3.0], [4.0, 5.5, -6.0]], dtype=np.float32)
B = np.array([2.0, -3.0, 0.5], dtype=np.float32)


def test_arithmetic_with_tensors_and_scalars_matches_numpy(device):
    a, b = torch.tensor(A, device=device), torch.tensor(B, device=device)
    assert_close(a + b, A + B)
    assert_close(a - b, A - B)
    assert_close(a * b, A * B)
    assert_close(a / b, A / B, rtol=1e-6)
    assert_close(a + 2, A + 2)
    assert_close(2 - a, 2 - A)
    assert_close(3 * a, 3 * A)
    assert_close(1 / a, 1 / A, rtol=1e-6)
    assert_close(a ** 2, A ** 2)
    assert_close(2 ** b, 2.0 ** B, rtol=1e-5)
    assert_close(a // b, A // B)
    assert_close(a % b, np.mod(A, B), atol=1e-5)
    assert_close(a % 4, np.mod(A, 4), atol=1e-5)
    assert_close(7 % b, np.mod(7, B), atol=1e-5)
    assert_close(-a, -A)
    assert_close(abs(a), np.abs(A))
    assert_close(a @ b, A @ B)


def test_integer_division_and_promotion_follow_pytorch(device):
    i = torch.tensor([7, -7, 4], device=device)
    assert (i / 2).dtype == torch.float32
    assert_close(i / 2, [3.5, -3.5, 2.0])
    assert (i // 2).dtype == torch.int64 and (i // 2).tolist() == [3, -4, 2]
    assert (i % 3).tolist() == [1, 2, 1]
    assert (i + 0.5).dtype == torch.float32 and (i + 1).dtype == torch.int64
    assert (i * 2).tolist() == [14, -14, 8]
    f = torch.tensor([1.0, 2.0, 3.0], device=device)
    assert (i + f).dtype == torch.float32
    assert (torch.tensor([True, False], device=device) + 1).dtype == torch.int64
    assert (i > 0.5).tolist() == [True, False, True]


def test_comparisons_and_logical_operators(device):
    a = torch.tensor([1, 2, 3], device=device)
    assert (a == 2).tolist() == [False, True, False]
    assert (a != 2).tolist() == [True, False, True]
    assert (a < 2).tolist() == [True, False, False] and (a >= 2).tolist() == [False, True, True]
    assert (a == torch.tensor([1, 0, 3], device=device)).tolist() == [True, False, True]
    m, n = a > 1, a < 3
    assert (m & n).tolist() == [False, True, False]
    assert (m | n).tolist() == [True, True, True]
    assert (m ^ n).tolist() == [True, False, True]
    assert (~m).tolist() == [True, False, False]
    assert (a == "text") is False
    assert (a & a).tolist() == a.tolist()
    with pytest.raises(TypeError, match="bitwise_and"):
        a.float() & a.float()


def test_in_place_operators_write_storage_and_views_see_them(device):
    x = torch.zeros(2, 3, device=device)
    row = x[1]
    x += 1
    x *= torch.tensor([1.0, 2.0, 3.0], device=device)
    x -= 0.5
    x /= 2
    expected = (np.ones((2, 3)) * [1, 2, 3] - 0.5) / 2
    assert_close(x, expected)
    assert_close(row, expected[1])
    x.add_(1, alpha=2).mul_(2)
    assert_close(x, (expected + 2) * 2)
    i = torch.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += 0.5


def test_in_place_on_a_leaf_that_requires_grad_is_refused():
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w += 1
    with torch.no_grad():
        w += 1
    assert w.tolist() == [2.0, 2.0]


def test_in_place_inside_a_graph_keeps_gradients_right():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    h = w * 3
    h += w
    h.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]


def test_broadcast_mismatch_is_a_runtime_error_naming_the_op(device):
    with pytest.raises(RuntimeError, match="shapes"):
        torch.ones(2, 3, device=device) + torch.ones(4, device=device)
    with pytest.raises(TypeError, match="unsupported operand"):
        torch.ones(2) + "a"
    with pytest.raises(RuntimeError):
        torch.ones(2, 3) @ torch.ones(2, 3)


def test_zero_dim_cpu_tensors_join_either_side(device):
    g = torch.ones(3, device=device)
    two = torch.tensor(2.0)
    assert (two * g).tolist() == [2.0, 2.0, 2.0]
    assert (g * two).tolist() == [2.0, 2.0, 2.0]
    assert (torch.tensor(5.0) - g).tolist() == [4.0, 4.0, 4.0]
    assert (two < g).tolist() == [False, False, False]
    assert torch.where(g > 0, g, torch.tensor(0.0)).tolist() == [1.0, 1.0, 1.0]
    assert str((two * g).device) == str(g.device)
    if device != "cpu":
        with pytest.raises(RuntimeError, match=r"move one with \.to\(device\)"):
            torch.ones(3) * g
