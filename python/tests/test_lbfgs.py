"""Tests of ``optim.LBFGS``: it reaches the minimum of a quadratic (with and without the
strong Wolfe line search) and of the Rosenbrock function, on each device."""

import numpy as np
import pytest

import anygrad
import anygrad.optim as optim
from conftest import assert_close


def _quadratic_problem():
    rng = np.random.default_rng(0)
    m = rng.standard_normal((6, 6))
    a = (m @ m.T + 6 * np.eye(6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    return a, b, np.linalg.solve(a.astype(np.float64), b.astype(np.float64))


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_minimises_a_quadratic(device, line_search_fn):
    a_np, b_np, solution = _quadratic_problem()
    a, b = anygrad.tensor(a_np, device=device), anygrad.tensor(b_np, device=device)
    x = anygrad.zeros(6, device=device, requires_grad=True)
    optimizer = optim.LBFGS([x], lr=1, max_iter=50, line_search_fn=line_search_fn)

    def closure():
        optimizer.zero_grad()
        loss = 0.5 * (x * (a @ x)).sum() - (b * x).sum()
        loss.backward()
        return loss

    first = None
    for _ in range(3):
        loss = optimizer.step(closure)
        first = float(loss) if first is None else first
    assert first == pytest.approx(0.0)
    assert_close(x, solution, rtol=1e-3, atol=1e-4)
    assert optimizer.state[x]["func_evals"] >= 2


def test_lbfgs_minimises_rosenbrock(device):
    xy = anygrad.tensor([-1.5, 2.0], device=device, requires_grad=True)
    optimizer = optim.LBFGS([xy], lr=1, max_iter=100, history_size=10, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        x, y = xy[0], xy[1]
        loss = (1 - x) ** 2 + 100 * (y - x * x) ** 2
        loss.backward()
        return loss

    for _ in range(4):
        optimizer.step(closure)
    assert_close(xy, np.array([1.0, 1.0]), rtol=0, atol=1e-3)


def test_lbfgs_settings_and_errors():
    p = anygrad.zeros(2, requires_grad=True)
    optimizer = optim.LBFGS([p], max_iter=8)
    assert optimizer.param_groups[0]["max_eval"] == 10
    assert optimizer.param_groups[0]["history_size"] == 100
    with pytest.raises(ValueError):
        optim.LBFGS([p], line_search_fn="backtracking")
    with pytest.raises(ValueError):
        optim.LBFGS([{"params": [p]}, {"params": [anygrad.zeros(1, requires_grad=True)]}])
    # A zero gradient is already optimal: the first loss comes back and nothing moves.
    def closure():
        optimizer.zero_grad()
        loss = (p * 0).sum()
        loss.backward()
        return loss

    assert float(optimizer.step(closure)) == 0.0
    assert_close(p, np.zeros(2))
