"""``Bernoulli``: ones with probability ``probs`` (or ``sigmoid(logits)``), zeros otherwise.
Samples are floats 0.0/1.0 in the parameter's dtype, as PyTorch's."""

import anygrad

from .distribution import Distribution, as_float_tensor, broadcast_all


def _softplus(x):
    """``log(1 + exp(x))``, stably."""
    return (-x.abs()).exp().log1p() + x.relu()


class Bernoulli(Distribution):
    """``torch.distributions.Bernoulli(probs=None, logits=None, validate_args=None)``."""

    arg_constraints = {"probs": None, "logits": None}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            eps = anygrad.finfo(self.probs.dtype).eps
            clamped = self.probs.clamp(min=eps, max=1 - eps)
            self.logits = clamped.log() - (1 - clamped).log()
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self.probs = self.logits.sigmoid()
            self._param = self.logits
        super().__init__(tuple(self._param.shape), (), validate_args)

    @property
    def param_shape(self):
        """The shape of ``probs``/``logits``."""
        return anygrad.Size(self._param.shape)

    @property
    def mean(self):
        """``probs``."""
        return self.probs

    @property
    def mode(self):
        """1 where ``probs`` is above one half, 0 below (NaN at exactly one half, as PyTorch)."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return anygrad.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self):
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """0.0/1.0 samples of shape ``sample_shape + batch_shape``."""
        shape = self._extended_shape(sample_shape)
        with anygrad.no_grad():
            probs = self.probs.detach().expand(*shape)
            return (anygrad.rand(*shape, dtype=probs.dtype, device=probs.device) < probs).to(probs.dtype)

    def log_prob(self, value):
        """``value log(p) + (1 - value) log(1 - p)``, computed from the logits stably."""
        value = as_float_tensor(value, self.logits)
        logits, value = anygrad.broadcast_tensors(self.logits, value)
        return -(_softplus(logits) - value * logits)

    def entropy(self):
        """``-p log(p) - (1 - p) log(1 - p)``."""
        return _softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        """0.0 and 1.0 along a new first dim (expanded over the batch unless ``expand`` is
        False)."""
        values = anygrad.tensor([0.0, 1.0], dtype=self._param.dtype, device=self._param.device)
        values = values.reshape(-1, *([1] * len(self.batch_shape)))
        if expand:
            values = values.expand(-1, *self.batch_shape)
        return values
