"""``Categorical``: a distribution over the classes ``0 .. K-1`` given by ``probs`` (any
non-negative weights, normalized along the last dim) or ``logits`` (unnormalized log
probabilities). Samples are int64 class indices drawn by ``anygrad.multinomial``."""

import anygrad

from .distribution import Distribution


class Categorical(Distribution):
    """``torch.distributions.Categorical(probs=None, logits=None, validate_args=None)``: the
    last dim of ``probs``/``logits`` holds the K classes, the dims before it are the batch."""

    arg_constraints = {"probs": None, "logits": None}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            eps = anygrad.finfo(self.probs.dtype).eps
            self.logits = self.probs.clamp(min=eps, max=1 - eps).log()
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), (), validate_args)

    @property
    def param_shape(self):
        """The shape of ``probs``/``logits``."""
        return anygrad.Size(self._param.shape)

    @property
    def mean(self):
        """Undefined for classes: NaN, as in PyTorch."""
        return anygrad.full(tuple(self.batch_shape), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def variance(self):
        """Undefined for classes: NaN, as in PyTorch."""
        return self.mean

    @property
    def mode(self):
        """The most probable class."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        """Class indices (int64) of shape ``sample_shape + batch_shape``."""
        shape = self._extended_shape(sample_shape)
        count = 1
        for size in tuple(shape)[: len(shape) - len(self.batch_shape)]:
            count *= size
        with anygrad.no_grad():
            rows = self.probs.detach().reshape(-1, self._num_events)
            drawn = anygrad.multinomial(rows, count, replacement=True)
            return drawn.t().reshape(*shape).long()

    def log_prob(self, value):
        """The log probability of the classes ``value`` (broadcast against the batch)."""
        value = value.long().unsqueeze(-1)
        value, log_pmf = anygrad.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        """``-sum(p log p)`` over the classes (classes of probability zero add nothing)."""
        logits = self.logits.clamp(min=anygrad.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        """The classes ``0 .. K-1`` along a new first dim (expanded over the batch unless
        ``expand`` is False)."""
        values = anygrad.arange(self._num_events, dtype=anygrad.int64, device=self.probs.device)
        values = values.reshape(-1, *([1] * len(self.batch_shape)))
        if expand:
            values = values.expand(-1, *self.batch_shape)
        return values
