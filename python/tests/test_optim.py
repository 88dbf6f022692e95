"""Optimizers and schedulers against numpy implementations of PyTorch's update rules, parameter
groups, state dicts and gradient clipping."""

import math

import numpy as np
import pytest

import anygrad as torch
import anygrad.nn as nn
import anygrad.optim as optim
from conftest import assert_close

GRADS = [np.array([0.5, -1.0, 2.0], dtype=np.float32), np.array([-0.25, 0.75, 1.0], dtype=np.float32),
         np.array([1.0, 0.0, -3.0], dtype=np.float32)]
START = np.array([1.0, 2.0, -1.0], dtype=np.float32)


def run(optimizer_factory, device):
    """Three steps with fixed gradients; the parameter after each."""
    p = nn.Parameter(torch.tensor(START, device=device))
    opt = optimizer_factory([p])
    history = []
    for grad in GRADS:
        p.grad = torch.tensor(grad, device=device)
        opt.step()
        history.append(p.detach().cpu().numpy().copy())
    return history


def reference_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, buf, out = START.astype(np.float64), None, []
    for g in GRADS:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def reference_adam(lr, b1, b2, eps, weight_decay=0.0, decoupled=False, amsgrad=False):
    p = START.astype(np.float64)
    m = np.zeros(3)
    v = np.zeros(3)
    vmax = np.zeros(3)
    out = []
    for t, g in enumerate(GRADS, 1):
        if weight_decay and decoupled:
            p = p * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        second = np.maximum(vmax, v) if amsgrad else v
        vmax = second
        p = p - lr / (1 - b1**t) * m / (np.sqrt(second) / math.sqrt(1 - b2**t) + eps)
        out.append(p)
    return out


@pytest.mark.parametrize("settings", [
    dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.5, dampening=0.1, weight_decay=0.01),
])
def test_sgd_matches_pytorch_rule(settings, device):
    for got, expected in zip(run(lambda ps: optim.SGD(ps, **settings), device), reference_sgd(**settings)):
        assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,settings", [
    ("adam", dict(lr=0.01)), ("adam", dict(lr=0.01, weight_decay=0.1)), ("adam", dict(lr=0.01, amsgrad=True)),
    ("adamw", dict(lr=0.01)), ("adamw", dict(lr=0.01, weight_decay=0.1)),
])
def test_adam_and_adamw_match_pytorch_rule(kind, settings, device):
    factory = optim.Adam if kind == "adam" else optim.AdamW
    decay = settings.get("weight_decay", 0.0 if kind == "adam" else 0.01)
    expected = reference_adam(settings["lr"], 0.9, 0.999, 1e-8, decay, kind == "adamw", settings.get("amsgrad", False))
    for got, want in zip(run(lambda ps: factory(ps, **settings), device), expected):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_rmsprop_adagrad_adadelta_match_pytorch_rules(device):
    p, sq, out = START.astype(np.float64), np.zeros(3), []
    for g in GRADS:
        sq = 0.99 * sq + 0.01 * g * g
        p = p - 0.01 * g / (np.sqrt(sq) + 1e-8)
        out.append(p)
    for got, want in zip(run(lambda ps: optim.RMSprop(ps, lr=0.01), device), out):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    p, acc, out = START.astype(np.float64), np.zeros(3), []
    for g in GRADS:
        acc = acc + g * g
        p = p - 0.1 * g / (np.sqrt(acc) + 1e-10)
        out.append(p)
    for got, want in zip(run(lambda ps: optim.Adagrad(ps, lr=0.1), device), out):
        assert_close(got, want, rtol=1e-5, atol=1e-6)
    p, sq, delta_acc, out = START.astype(np.float64), np.zeros(3), np.zeros(3), []
    for g in GRADS:
        sq = 0.9 * sq + 0.1 * g * g
        delta = np.sqrt(delta_acc + 1e-6) / np.sqrt(sq + 1e-6) * g
        delta_acc = 0.9 * delta_acc + 0.1 * delta * delta
        p = p - 1.0 * delta
        out.append(p)
    for got, want in zip(run(lambda ps: optim.Adadelta(ps, lr=1.0), device), out):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_parameter_groups_and_state_dict():
    a, b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    a.grad, b.grad = torch.ones(2), torch.ones(2)
    opt.step()
    assert_close(a, [0.9, 0.9])
    assert_close(b, [0.5, 0.5])
    state = opt.state_dict()
    assert state["param_groups"][1]["params"] == [1] and 0 in state["state"]
    a2, b2 = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    opt2 = optim.SGD([{"params": [a2]}, {"params": [b2], "lr": 0.5}], lr=0.1, momentum=0.9)
    opt2.load_state_dict(state)
    assert opt2.state[a2]["momentum_buffer"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [a]}, {"params": [a]}], lr=0.1)
    with pytest.raises(ValueError, match="learning rate"):
        optim.Adam([a], lr=-1)


def test_schedulers_follow_pytorch_closed_forms():
    p = nn.Parameter(torch.ones(1))
    opt = optim.SGD([p], lr=1.0)
    step = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.1)
    rates = []
    for _ in range(5):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        step.step()
    assert rates == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01])
    opt = optim.SGD([p], lr=1.0)
    cosine = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    rates = []
    for _ in range(5):
        rates.append(cosine.get_last_lr()[0])
        cosine.step()
    assert rates == pytest.approx([(1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)])
    opt = optim.SGD([p], lr=2.0)
    lam = optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5**epoch)
    lam.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0)


def _rates(scheduler, optimizer, steps, key="lr"):
    values = []
    for _ in range(steps):
        values.append(optimizer.param_groups[0][key])
        optimizer.step()
        scheduler.step()
    return values


def test_more_schedulers_follow_pytorch_formulas():
    p = nn.Parameter(torch.ones(1))
    sched = optim.lr_scheduler
    opt = optim.SGD([p], lr=1.0)
    assert _rates(sched.ConstantLR(opt, factor=0.5, total_iters=2), opt, 4) == pytest.approx([0.5, 0.5, 1.0, 1.0])
    opt = optim.SGD([p], lr=1.0)
    assert _rates(sched.PolynomialLR(opt, total_iters=4, power=2.0), opt, 6) == pytest.approx(
        [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
    )
    opt = optim.SGD([p], lr=1.0)
    assert _rates(sched.MultiplicativeLR(opt, lambda epoch: 0.9), opt, 4) == pytest.approx([1.0, 0.9, 0.81, 0.729])
    # Warm restarts: periods of 2, then 4 (T_mult=2).
    opt = optim.SGD([p], lr=1.0)
    restarts = sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    cosine = [(1 + math.cos(math.pi * t / period)) / 2 for t, period in [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8)]]
    assert _rates(restarts, opt, 7) == pytest.approx(cosine)
    restarts.step(2.5)
    assert opt.param_groups[0]["lr"] == pytest.approx((1 + math.cos(math.pi * 0.5 / 4)) / 2)
    # A linear warm-up for two epochs, then an exponential decay from the base rate.
    opt = optim.SGD([p], lr=1.0)
    warmup = sched.LinearLR(opt, start_factor=0.1, total_iters=2)
    decay = sched.ExponentialLR(opt, gamma=0.5)
    sequence = sched.SequentialLR(opt, [warmup, decay], milestones=[2])
    assert _rates(sequence, opt, 5) == pytest.approx([0.1, 0.55, 1.0, 0.5, 0.25])


def test_one_cycle_follows_its_phases():
    p = nn.Parameter(torch.ones(1))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    one_cycle = optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    initial, low = 1.0 / 25, 1.0 / 25 / 1e4

    def cos(start, end, pct):
        return end + (start - end) / 2 * (math.cos(math.pi * pct) + 1)

    # Up from max_lr / 25 over steps 0..2 (30% of 10, less one), down to initial / 1e4 by step 9.
    expected = [cos(initial, 1.0, t / 2) for t in range(3)] + [cos(1.0, low, (t - 2) / 7) for t in range(3, 10)]
    momenta = [cos(0.95, 0.85, t / 2) for t in range(3)] + [cos(0.85, 0.95, (t - 2) / 7) for t in range(3, 10)]
    seen_momenta = []
    rates = []
    for _ in range(10):
        rates.append(opt.param_groups[0]["lr"])
        seen_momenta.append(opt.param_groups[0]["momentum"])
        opt.step()
        if len(rates) < 10:
            one_cycle.step()
    assert rates == pytest.approx(expected)
    assert seen_momenta == pytest.approx(momenta)
    one_cycle.step()
    with pytest.raises(ValueError, match="total steps"):
        one_cycle.step()
    # Adam cycles beta1; linear annealing; three phases.
    opt = optim.Adam([p], lr=0.1)
    linear = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, epochs=2, steps_per_epoch=5, anneal_strategy="linear", three_phase=True)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    rates = _rates(linear, opt, 5)
    assert rates == pytest.approx([0.02, 0.26, 0.5, 0.26, 0.02])
    with pytest.raises(ValueError, match="total_steps"):
        optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0)


def test_reduce_on_plateau_waits_for_patience():
    p = nn.Parameter(torch.ones(1))
    opt = optim.SGD([p], lr=1.0)
    plateau = optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    rates = []
    for metric in [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7]:
        plateau.step(torch.tensor(metric))
        rates.append(opt.param_groups[0]["lr"])
    assert rates == pytest.approx([1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25])
    assert plateau.get_last_lr() == pytest.approx([0.25])
    opt = optim.SGD([p], lr=1.0)
    maximize = optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=0, cooldown=1, min_lr=0.05)
    for accuracy in [0.5, 0.4, 0.3, 0.2, 0.1]:
        maximize.step(accuracy)
    # Reduced at the second epoch, cooled down for one, reduced again, floored at min_lr.
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
    with pytest.raises(ValueError, match="Factor"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, factor=2.0)


def test_clip_grad_norm_scales_to_the_limit(device):
    a = nn.Parameter(torch.zeros(2, device=device))
    b = nn.Parameter(torch.zeros(1, device=device))
    a.grad = torch.tensor([3.0, 0.0], device=device)
    b.grad = torch.tensor([4.0], device=device)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    assert_close(a.grad, [0.6, 0.0], rtol=1e-5)
    assert_close(b.grad, [0.8], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0)
    assert_close(a.grad, [0.6, 0.0], rtol=1e-5)


def test_training_a_small_model_reduces_its_loss(device):
    torch.manual_seed(0)
    x = torch.randn(64, 4, device=device)
    y = (x[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    opt = optim.Adam(model.parameters(), lr=0.05)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first * 0.5
    accuracy = (model(x).argmax(1) == y).float().mean().item()
    assert accuracy > 0.9
