"""``anygrad.distributions``: ``Categorical``, ``Normal``, ``Bernoulli``, ``Uniform`` and
``kl_divergence`` against numpy written from the textbook formulas (log-probabilities,
entropies, divergences), sample statistics, shapes, reparameterized gradients, and
``manual_seed`` repeating the samples, on every device."""

import math

import numpy as np
import pytest

import anygrad as torch
from anygrad.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence, register_kl
from conftest import assert_close

PROBS = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]], dtype=np.float32)


def test_categorical(device):
    dist = Categorical(probs=torch.tensor(PROBS * 2, device=device))  # normalized by the class
    assert dist.batch_shape == (2,) and dist.event_shape == ()
    assert_close(dist.probs, PROBS)
    value = torch.tensor([2, 1], device=device)
    assert_close(dist.log_prob(value), np.log([0.7, 0.5]), rtol=1e-5)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(PROBS > 0, PROBS * np.log(PROBS), 0.0), axis=-1)
    assert_close(dist.entropy(), entropy, rtol=1e-5)
    torch.manual_seed(0)
    samples = dist.sample((4000,))
    assert samples.shape == (4000, 2) and samples.dtype == torch.int64
    counts = np.stack([np.bincount(samples[:, b].cpu().numpy(), minlength=3) / 4000 for b in range(2)])
    assert np.abs(counts - PROBS).max() < 0.04
    assert counts[1, 2] == 0
    torch.manual_seed(0)
    assert dist.sample((4000,)).tolist() == samples.tolist()
    assert dist.sample().shape == (2,)
    # log_prob broadcasts the values against the batch.
    assert dist.log_prob(torch.tensor([[0], [1]], device=device)).shape == (2, 2)
    logits = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    from_logits = Categorical(logits=torch.tensor(logits, device=device))
    expected = np.exp(logits) / np.exp(logits).sum()
    assert_close(from_logits.probs, expected, rtol=1e-5)
    assert_close(from_logits.logits, np.log(expected), rtol=1e-5, atol=1e-6)
    assert from_logits.batch_shape == () and from_logits.sample((3, 5)).shape == (3, 5)
    assert from_logits.enumerate_support().tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="not both"):
        Categorical(probs=torch.tensor(PROBS), logits=torch.tensor(PROBS))


def test_categorical_policy_gradient(device):
    logits = torch.zeros(3, device=device, requires_grad=True)
    dist = Categorical(logits=logits)
    loss = -dist.log_prob(torch.tensor(2, device=device))
    loss.backward()
    # d(-log softmax_2)/d logits = softmax - onehot
    assert_close(logits.grad, np.array([1 / 3, 1 / 3, -2 / 3]), rtol=1e-5)


def test_normal(device):
    loc = torch.tensor([0.0, 1.0], device=device, requires_grad=True)
    scale = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    dist = Normal(loc, scale)
    assert dist.batch_shape == (2,)
    x = np.array([0.5, -1.0], dtype=np.float32)
    expected = -((x - [0.0, 1.0]) ** 2) / (2 * np.array([1.0, 4.0])) - np.log([1.0, 2.0]) - 0.5 * math.log(2 * math.pi)
    assert_close(dist.log_prob(torch.tensor(x, device=device)), expected, rtol=1e-5)
    assert_close(dist.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log([1.0, 2.0]), rtol=1e-5)
    assert_close(dist.mean, [0.0, 1.0])
    assert_close(dist.stddev, [1.0, 2.0])
    assert_close(dist.variance, [1.0, 4.0])
    assert_close(dist.cdf(torch.tensor([0.0, 1.0], device=device)), [0.5, 0.5], rtol=1e-5)
    torch.manual_seed(3)
    drawn = dist.rsample((20000,))
    assert drawn.shape == (20000, 2)
    values = drawn.detach().cpu().numpy()
    assert np.abs(values.mean(0) - [0.0, 1.0]).max() < 0.05
    assert np.abs(values.std(0) - [1.0, 2.0]).max() < 0.05
    drawn.sum().backward()
    assert_close(loc.grad, [20000.0, 20000.0])
    noise = (values - [0.0, 1.0]) / [1.0, 2.0]
    assert_close(scale.grad, noise.sum(0), rtol=1e-3, atol=1e-1)
    torch.manual_seed(3)
    again = dist.sample((20000,))
    assert not again.requires_grad
    assert_close(again, values)
    scalar = Normal(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.sample((5,)).shape == (5,)
    assert Normal(torch.zeros(3, 1, device=device), torch.ones(4, device=device)).batch_shape == (3, 4)


def test_bernoulli(device):
    p = np.array([0.2, 0.9, 0.5], dtype=np.float32)
    dist = Bernoulli(probs=torch.tensor(p, device=device))
    value = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    assert_close(dist.log_prob(torch.tensor(value, device=device)), value * np.log(p) + (1 - value) * np.log(1 - p), rtol=1e-5)
    assert_close(dist.entropy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-5)
    assert_close(dist.mean, p)
    assert_close(dist.variance, p * (1 - p))
    torch.manual_seed(1)
    samples = dist.sample((5000,))
    assert samples.shape == (5000, 3) and samples.dtype == torch.float32
    assert set(np.unique(samples.cpu().numpy()).tolist()) <= {0.0, 1.0}
    assert np.abs(samples.cpu().numpy().mean(0) - p).max() < 0.03
    logits = np.array([-1.0, 2.0], dtype=np.float32)
    from_logits = Bernoulli(logits=torch.tensor(logits, device=device))
    assert_close(from_logits.probs, 1 / (1 + np.exp(-logits)), rtol=1e-5)
    assert_close(from_logits.log_prob(torch.tensor([1.0, 1.0], device=device)), -np.log1p(np.exp(-logits)), rtol=1e-5)


def test_uniform(device):
    low = torch.tensor([0.0, -2.0], device=device, requires_grad=True)
    high = torch.tensor([1.0, 2.0], device=device, requires_grad=True)
    dist = Uniform(low, high)
    assert_close(dist.log_prob(torch.tensor([0.5, 3.0], device=device)), [0.0, -np.inf])
    assert_close(dist.entropy(), np.log([1.0, 4.0]), rtol=1e-6)
    assert_close(dist.mean, [0.5, 0.0])
    assert_close(dist.variance, [1 / 12, 16 / 12], rtol=1e-6)
    assert_close(dist.cdf(torch.tensor([0.25, 4.0], device=device)), [0.25, 1.0])
    torch.manual_seed(2)
    drawn = dist.rsample((10000,))
    values = drawn.detach().cpu().numpy()
    assert (values[:, 0] >= 0).all() and (values[:, 0] < 1).all()
    assert (values[:, 1] >= -2).all() and (values[:, 1] < 2).all()
    assert abs(values[:, 1].mean()) < 0.06
    drawn.sum().backward()
    u = (values - [0.0, -2.0]) / [1.0, 4.0]
    assert_close(high.grad, u.sum(0), rtol=1e-3)
    assert_close(low.grad, (1 - u).sum(0), rtol=1e-3)


def test_kl_divergence(device):
    p = Normal(torch.tensor([0.0, 1.0], device=device), torch.tensor([1.0, 0.5], device=device))
    q = Normal(torch.tensor([1.0, 1.0], device=device), torch.tensor([2.0, 0.5], device=device))
    s1, s2, m1, m2 = np.array([1.0, 0.5]), np.array([2.0, 0.5]), np.array([0.0, 1.0]), np.array([1.0, 1.0])
    expected = np.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    assert_close(kl_divergence(p, q), expected, rtol=1e-5, atol=1e-6)
    a = np.array([0.1, 0.2, 0.7], dtype=np.float32)
    b = np.array([0.3, 0.3, 0.4], dtype=np.float32)
    cp, cq = Categorical(probs=torch.tensor(a, device=device)), Categorical(probs=torch.tensor(b, device=device))
    assert_close(kl_divergence(cp, cq), (a * np.log(a / b)).sum(), rtol=1e-5)
    assert_close(kl_divergence(cp, cp), 0.0, atol=1e-6)
    zero = Categorical(probs=torch.tensor([0.5, 0.5, 0.0], device=device))
    assert kl_divergence(zero, cq).item() == pytest.approx(float((0.5 * np.log(0.5 / b[:2])).sum()), rel=1e-5)
    assert kl_divergence(cq, zero).item() == float("inf")
    bp, bq = Bernoulli(probs=torch.tensor([0.3], device=device)), Bernoulli(probs=torch.tensor([0.6], device=device))
    assert_close(kl_divergence(bp, bq), [0.3 * np.log(0.3 / 0.6) + 0.7 * np.log(0.7 / 0.4)], rtol=1e-4)
    inner, outer = Uniform(0.0, 1.0), Uniform(-1.0, 3.0)
    assert kl_divergence(inner, outer).item() == pytest.approx(math.log(4.0), rel=1e-6)
    assert kl_divergence(outer, inner).item() == float("inf")
    with pytest.raises(NotImplementedError, match="register_kl"):
        kl_divergence(p, cq)

    class Shifted(Normal):
        pass

    assert_close(kl_divergence(Shifted(0.0, 1.0), Normal(0.0, 1.0)), 0.0, atol=1e-7)

    @register_kl(Uniform, Normal)
    def _uniform_normal(p, q):
        return torch.tensor(1.25)

    try:
        assert kl_divergence(inner, Normal(0.0, 1.0)).item() == 1.25
    finally:
        from anygrad.distributions import kl

        del kl._REGISTRY[(Uniform, Normal)]
