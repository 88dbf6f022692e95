"""Autograd from Python: backward, grad, requires_grad, detach, no_grad (context manager and
decorator), gradients checked against hand-derived values."""

import numpy as np
import pytest

import anygrad as torch
from conftest import assert_close


def test_backward_gives_analytic_gradients(device):
    x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = (x * x * 3 + x.exp()).sum()
    y.backward()
    assert_close(x.grad, 6 * np.array([1.0, 2.0, 3.0]) + np.exp([1.0, 2.0, 3.0]), rtol=1e-5)
    w = torch.randn(4, 3, device=device, requires_grad=True)
    inputs = torch.randn(5, 4, device=device)
    (inputs @ w).relu().mean().backward()
    mask = ((inputs @ w).detach().numpy() if device == "cpu" else (inputs @ w).detach().cpu().numpy()) > 0
    expected = inputs.cpu().numpy().T @ (mask / mask.size)
    assert_close(w.grad, expected, rtol=1e-4, atol=1e-6)


def test_gradients_accumulate_and_clear():
    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    x.grad = None
    assert x.grad is None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_backward_errors_are_runtime_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(2).sum().backward()
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(torch.tensor([1.0, 0.5]))
    assert x.grad.tolist() == [2.0, 1.0]
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2], requires_grad=True)


def test_no_grad_as_context_manager_and_decorator():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        y = x * 2
        assert not torch.is_grad_enabled()
        with torch.enable_grad():
            z = x * 2
    assert torch.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad

    @torch.no_grad()
    def evaluate(t):
        return t * 2

    assert not evaluate(x).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with torch.inference_mode():
        assert not (x * 2).requires_grad


def test_detach_requires_grad_and_leaves():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.grad_fn is not None and x.grad_fn is None
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    a = torch.zeros(2)
    assert a.requires_grad_() is a and a.requires_grad
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_autograd_grad_returns_gradients():
    x = torch.tensor([2.0], requires_grad=True)
    (g,) = torch.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [4.0] and x.grad is None
