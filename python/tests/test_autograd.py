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


def test_long_native_work_releases_the_gil():
    import threading
    import time

    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    a = torch.randn(1000, 1000)
    thread = threading.Thread(target=count)
    thread.start()
    time.sleep(0.01)
    before = len(ticks)
    start = time.perf_counter()
    rounds = 0
    while time.perf_counter() - start < 0.5:
        a @ a
        rounds += 1
    during = len(ticks) - before
    stop.set()
    thread.join()
    # With the GIL released the counting thread ticks all through each matmul (hundreds of
    # ticks); held, it would get about one turn per matmul.
    assert during > 5 * rounds, (during, rounds)


def test_in_place_activations_and_copy_keep_gradients_right():
    import anygrad.nn.functional as F

    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    h = x * 3
    F.relu(h, inplace=True).sum().backward()
    assert x.grad.tolist() == [0.0, 3.0]
    x.grad = None
    h = x * 3
    h.relu_()
    (h * 2).sum().backward()
    assert x.grad.tolist() == [0.0, 6.0]
    x.grad = None
    y = torch.zeros(2)
    h = x * 1
    h.copy_(x * 5)
    h.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.copy_(y)


def test_tensor_hooks_and_retain_grad(device):
    x = torch.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = x * 2
    seen = []
    handle = y.register_hook(lambda grad: seen.append(grad.tolist()) or grad * 10)
    y.retain_grad()
    (y * y).sum().backward(retain_graph=True)
    assert seen == [[4.0, 8.0, 12.0]]
    assert x.grad.tolist() == [80.0, 160.0, 240.0]
    assert y.grad.tolist() == [40.0, 80.0, 120.0]
    handle.remove()
    x.grad = None
    (y * y).sum().backward()
    assert x.grad.tolist() == [8.0, 16.0, 24.0] and len(seen) == 1
    leaf = torch.ones(2, device=device, requires_grad=True)
    with leaf.register_hook(lambda grad: grad + 1):
        leaf.sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0]

    def broken(grad):
        raise ValueError("no thanks")

    z = torch.ones(2, device=device, requires_grad=True)
    z.register_hook(broken)
    with pytest.raises(RuntimeError, match="no thanks"):
        (z * 2).sum().backward()
    with pytest.raises(RuntimeError, match="hook"):
        torch.ones(2, device=device).register_hook(lambda grad: grad)
    w = torch.ones(2, device=device, requires_grad=True)
    w.register_hook(lambda grad: grad.sum())
    with pytest.raises(RuntimeError, match="shape"):
        (w * 3).sum().backward()
