"""``lr_scheduler.CyclicLR`` (the three modes, a custom ``scale_fn``, momentum cycling, state
dicts) and ``ChainedScheduler`` (a warm-up chained with a decay gives the product of their
factors, as PyTorch's chainable schedulers do), against the rates written out from PyTorch's
definitions."""

import math
import pickle

import pytest

import anygrad as torch
from anygrad.optim.lr_scheduler import (
    ChainedScheduler, ConstantLR, CosineAnnealingLR, CyclicLR, ExponentialLR, LinearLR,
    MultiplicativeLR, ReduceLROnPlateau, StepLR,
)


def _optimizer(kind="sgd", lr=1.0):
    parameters = [torch.nn.Parameter(torch.zeros(2))]
    if kind == "adam":
        return torch.optim.Adam(parameters, lr=lr)
    return torch.optim.SGD(parameters, lr=lr, momentum=0.9)


def _cyclic(step, base, top, up, down, scale):
    """PyTorch's CyclicLR rate at ``step``; ``scale(cycle, step)`` the amplitude's factor."""
    total = up + down
    cycle = math.floor(1 + step / total)
    x = 1.0 + step / total - cycle
    ratio = up / total
    factor = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
    return base + (top - base) * factor * scale(cycle, step)


@pytest.mark.parametrize(
    "mode, gamma, scale",
    [
        ("triangular", 1.0, lambda cycle, step: 1.0),
        ("triangular2", 1.0, lambda cycle, step: 1 / 2.0 ** (cycle - 1)),
        ("exp_range", 0.95, lambda cycle, step: 0.95 ** step),
    ],
)
def test_cyclic_lr_modes(mode, gamma, scale):
    optimizer = _optimizer()
    scheduler = CyclicLR(optimizer, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5, mode=mode, gamma=gamma)
    for step in range(30):
        expected = _cyclic(step, 0.01, 0.1, 3, 5, scale)
        assert math.isclose(optimizer.param_groups[0]["lr"], expected, rel_tol=1e-9)
        assert math.isclose(scheduler.get_last_lr()[0], expected, rel_tol=1e-9)
        # momentum cycles the other way between 0.9 and 0.8
        height = (expected - 0.01) / (0.1 - 0.01)
        assert math.isclose(optimizer.param_groups[0]["momentum"], 0.9 - 0.1 * height, rel_tol=1e-9)
        optimizer.step()
        scheduler.step()


def test_cyclic_lr_custom_scale_beta1_and_state():
    optimizer = _optimizer("adam")
    scheduler = CyclicLR(optimizer, 0.001, 0.006, step_size_up=2, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations")
    rates = []
    for step in range(8):
        rates.append(optimizer.param_groups[0]["lr"])
        scheduler.step()
    assert all(math.isclose(r, _cyclic(i, 0.001, 0.006, 2, 2, lambda c, s: 0.5 ** s)) for i, r in enumerate(rates))
    assert optimizer.param_groups[0]["betas"][1] == 0.999
    state = pickle.loads(pickle.dumps(scheduler.state_dict()))
    assert state["last_epoch"] == 8 and "_scale_fn_custom" not in state
    no_momentum = torch.optim.Adagrad([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="momentum"):
        CyclicLR(no_momentum, 0.01, 0.1)
    assert CyclicLR(no_momentum, 0.01, 0.1, cycle_momentum=False).get_last_lr() == [0.01]
    with pytest.raises(ValueError, match="mode"):
        CyclicLR(_optimizer(), 0.01, 0.1, mode="sawtooth")


def test_chained_scheduler_multiplies_the_factors():
    optimizer = _optimizer(lr=1.0)
    scheduler = ChainedScheduler([ConstantLR(optimizer, factor=0.1, total_iters=2), ExponentialLR(optimizer, gamma=0.9)])
    rates = [optimizer.param_groups[0]["lr"]]
    for _ in range(5):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    expected = [(0.1 if epoch < 2 else 1.0) * 0.9 ** epoch for epoch in range(6)]
    assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(rates, expected)), rates
    optimizer = _optimizer(lr=0.5)
    warmup = LinearLR(optimizer, start_factor=0.25, total_iters=4)
    decay = StepLR(optimizer, step_size=3, gamma=0.5)
    halving = MultiplicativeLR(optimizer, lambda epoch: 0.9)
    cosine = CosineAnnealingLR(optimizer, T_max=10)
    scheduler = ChainedScheduler([warmup, decay, halving, cosine])
    for epoch in range(12):
        linear = 0.25 + 0.75 * min(epoch, 4) / 4
        cos = (1 + math.cos(math.pi * epoch / 10)) / 2
        expected = 0.5 * linear * 0.5 ** (epoch // 3) * 0.9 ** epoch * cos
        assert math.isclose(optimizer.param_groups[0]["lr"], expected, rel_tol=1e-9, abs_tol=1e-15), (epoch, optimizer.param_groups[0]["lr"], expected)
        scheduler.step()
    state = scheduler.state_dict()
    assert len(state["_schedulers"]) == 4
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        ChainedScheduler([ReduceLROnPlateau(optimizer)])
