"""``Uniform``: the continuous uniform distribution on ``[low, high)``, with reparameterized
samples (``low + (high - low) * u``)."""

import anygrad

from .distribution import Distribution, as_float_tensor, broadcast_all


class Uniform(Distribution):
    """``torch.distributions.Uniform(low, high, validate_args=None)``: tensors or numbers,
    broadcast together into the batch shape."""

    arg_constraints = {"low": None, "high": None}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        if validate_args and bool((self.low >= self.high).any()):
            raise ValueError("Uniform: low must be below high")
        super().__init__(tuple(self.low.shape), (), validate_args)

    @property
    def mean(self):
        """``(low + high) / 2``."""
        return (self.low + self.high) / 2

    @property
    def mode(self):
        """Every point is a mode: NaN, as PyTorch."""
        return self.low * float("nan")

    @property
    def stddev(self):
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        """``(high - low)² / 12``."""
        return (self.high - self.low).square() / 12

    def rsample(self, sample_shape=()):
        """``low + (high - low) * u`` with ``u`` uniform in [0, 1) from anygrad's stream;
        differentiable in ``low`` and ``high``."""
        shape = self._extended_shape(sample_shape)
        u = anygrad.rand(*shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        """``-log(high - low)`` inside ``[low, high)``, ``-inf`` outside."""
        value = as_float_tensor(value, self.low)
        inside = (value >= self.low) & (value < self.high)
        return anygrad.where(inside, -(self.high - self.low).log(), float("-inf"))

    def cdf(self, value):
        """``(value - low) / (high - low)``, clamped to [0, 1]."""
        value = as_float_tensor(value, self.low)
        return ((value - self.low) / (self.high - self.low)).clamp(0.0, 1.0)

    def entropy(self):
        """``log(high - low)``."""
        return (self.high - self.low).log()
