"""Tests of ``F.ctc_loss`` / ``nn.CTCLoss``: values against a small numpy implementation of
the CTC forward (alpha) recursion, gradients against finite differences of it, reductions,
target layouts, impossible alignments and ``zero_infinity``, on each device."""

import numpy as np
import pytest

import anygrad
import anygrad.nn as nn
import anygrad.nn.functional as F
from conftest import assert_close


def _numpy_ctc(log_probs, target, input_length, blank=0):
    """-log p(target | input): the alpha recursion over the target with blanks around and
    between its labels, in log space (float64)."""
    extended = [blank]
    for label in target:
        extended += [int(label), blank]
    width = len(extended)
    alpha = np.full(width, -np.inf)
    if input_length == 0:
        return 0.0 if len(target) == 0 else np.inf
    alpha[0] = log_probs[0, extended[0]]
    if width > 1:
        alpha[1] = log_probs[0, extended[1]]
    for t in range(1, input_length):
        new = np.full(width, -np.inf)
        for s in range(width):
            terms = [alpha[s]]
            if s >= 1:
                terms.append(alpha[s - 1])
            if s >= 2 and extended[s] != blank and extended[s] != extended[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = np.logaddexp.reduce(terms) + log_probs[t, extended[s]]
        alpha = new
    total = np.logaddexp(alpha[-1], alpha[-2]) if width > 1 else alpha[-1]
    return -total


def _log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def _problem(seed=0, steps=8, batch=3, classes=5):
    rng = np.random.default_rng(seed)
    log_probs = _log_softmax(rng.standard_normal((steps, batch, classes)))
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 0]])
    target_lengths = [4, 2, 3]
    input_lengths = [8, 6, 7]
    return log_probs, targets, input_lengths, target_lengths


def test_ctc_loss_matches_numpy_recursion(device):
    log_probs, targets, input_lengths, target_lengths = _problem()
    expected = np.array([_numpy_ctc(log_probs[:, i], targets[i, : target_lengths[i]], input_lengths[i]) for i in range(3)])
    lp = anygrad.tensor(log_probs.astype(np.float32), device=device)
    tg = anygrad.tensor(targets, device=device)
    il, tl = anygrad.tensor(input_lengths), anygrad.tensor(target_lengths)
    assert_close(F.ctc_loss(lp, tg, il, tl, reduction="none"), expected, rtol=1e-5, atol=1e-5)
    assert_close(F.ctc_loss(lp, tg, il, tl, reduction="sum"), expected.sum(), rtol=1e-5, atol=1e-5)
    assert_close(F.ctc_loss(lp, tg, il, tl), (expected / np.array(target_lengths)).mean(), rtol=1e-5, atol=1e-5)
    # The same targets concatenated in 1-D, and the module with tuples of lengths.
    flat = anygrad.tensor(np.concatenate([targets[i, : target_lengths[i]] for i in range(3)]), device=device)
    assert_close(nn.CTCLoss(reduction="none")(lp, flat, tuple(input_lengths), tuple(target_lengths)), expected, rtol=1e-5, atol=1e-5)


def test_ctc_loss_gradient_matches_finite_differences(device):
    log_probs, targets, input_lengths, target_lengths = _problem(seed=1)
    lp = anygrad.tensor(log_probs.astype(np.float32), device=device, requires_grad=True)
    loss = F.ctc_loss(lp, anygrad.tensor(targets, device=device), input_lengths, target_lengths, reduction="sum")
    loss.backward()

    def total(values):
        return sum(_numpy_ctc(values[:, i], targets[i, : target_lengths[i]], input_lengths[i]) for i in range(3))

    numeric = np.zeros_like(log_probs)
    step = 1e-6
    for index in np.ndindex(*log_probs.shape):
        up, down = log_probs.copy(), log_probs.copy()
        up[index] += step
        down[index] -= step
        numeric[index] = (total(up) - total(down)) / (2 * step)
    assert_close(lp.grad, numeric, rtol=1e-3, atol=1e-4)


def test_ctc_loss_blank_unbatched_and_empty_target(device):
    rng = np.random.default_rng(2)
    log_probs = _log_softmax(rng.standard_normal((6, 4)))
    target = np.array([0, 1, 1])
    expected = _numpy_ctc(log_probs, target, 6, blank=3)
    lp = anygrad.tensor(log_probs.astype(np.float32), device=device)
    loss = nn.CTCLoss(blank=3, reduction="none")(lp, anygrad.tensor(target, device=device), anygrad.tensor([6]), anygrad.tensor([3]))
    assert tuple(loss.shape) == ()
    assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    empty = F.ctc_loss(lp.unsqueeze(1), anygrad.tensor([[1]], device=device), [5], [0], blank=3, reduction="none")
    assert_close(empty, [_numpy_ctc(log_probs, [], 5, blank=3)], rtol=1e-5, atol=1e-5)


def test_ctc_loss_impossible_alignment_and_zero_infinity(device):
    rng = np.random.default_rng(3)
    log_probs = _log_softmax(rng.standard_normal((3, 2, 4))).astype(np.float32)
    # Three repeated labels need five steps (blanks between them); three are not enough.
    targets = anygrad.tensor([[2, 2, 2], [1, 2, 0]], device=device)
    lp = anygrad.tensor(log_probs, device=device, requires_grad=True)
    losses = F.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="none").detach().cpu().numpy()
    assert np.isinf(losses[0]) and losses[0] > 0
    assert losses[1] == pytest.approx(_numpy_ctc(log_probs[:, 1].astype(np.float64), [1, 2], 3), rel=1e-5)
    zeroed = F.ctc_loss(lp, targets, [3, 3], [3, 2], reduction="sum", zero_infinity=True)
    assert_close(zeroed, losses[1], rtol=1e-5)
    zeroed.backward()
    grad = lp.grad.cpu().numpy()
    assert np.all(grad[:, 0] == 0) and np.all(np.isfinite(grad))
