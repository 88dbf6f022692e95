"""``Normal``: the Gaussian distribution with mean ``loc`` and standard deviation ``scale``,
with reparameterized samples (``rsample``: ``loc + scale * noise``, so gradients reach both
parameters)."""

import math

import anygrad

from .distribution import Distribution, as_float_tensor, broadcast_all


class Normal(Distribution):
    """``torch.distributions.Normal(loc, scale, validate_args=None)``: tensors or numbers,
    broadcast together into the batch shape."""

    arg_constraints = {"loc": None, "scale": None}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        if validate_args and bool((self.scale <= 0).any()):
            raise ValueError("Normal: scale must be positive")
        super().__init__(tuple(self.loc.shape), (), validate_args)

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale ** 2``."""
        return self.scale.square()

    def rsample(self, sample_shape=()):
        """``loc + scale * noise`` of shape ``sample_shape + batch_shape`` (standard normal
        noise from anygrad's stream); differentiable in ``loc`` and ``scale``."""
        shape = self._extended_shape(sample_shape)
        noise = anygrad.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + noise * self.scale

    def log_prob(self, value):
        """``-(value - loc)² / (2 scale²) - log(scale) - log(sqrt(2π))``."""
        value = as_float_tensor(value, self.loc)
        return -(value - self.loc).square() / (2 * self.variance) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        """``(1 + erf((value - loc) / (scale sqrt 2))) / 2``."""
        value = as_float_tensor(value, self.loc)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def entropy(self):
        """``1/2 + log(sqrt(2π)) + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
