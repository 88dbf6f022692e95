"""The ``Distribution`` base class of ``anygrad.distributions``: batch and event shapes,
``sample`` drawn without gradients from ``rsample`` where a distribution has one, and the
helpers its subclasses share (numbers made tensors, parameters broadcast, shapes of
samples)."""

import anygrad


class Distribution:
    """A probability distribution over tensors of ``event_shape``, ``batch_shape`` of them
    side by side (``torch.distributions.Distribution``)."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    support = None

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = anygrad.Size(batch_shape)
        self._event_shape = anygrad.Size(event_shape)
        self._validate_args = bool(validate_args)

    @property
    def batch_shape(self):
        """The shape of the batch of independent distributions."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one sample of one distribution."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        """``sample_shape + batch_shape + event_shape``."""
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return anygrad.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        """Samples of shape ``sample_shape + batch_shape + event_shape``, without gradients."""
        with anygrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Reparameterized samples (gradients flow to the parameters)."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampling (rsample)")

    def sample_n(self, n):
        """``n`` samples (``sample((n,))``)."""
        return self.sample((n,))

    def log_prob(self, value):
        """The log of the probability (density or mass) of ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def entropy(self):
        """The entropy of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.cdf is not implemented")

    def perplexity(self):
        """``exp(entropy())``."""
        return self.entropy().exp()

    @property
    def mean(self):
        """The mean."""
        raise NotImplementedError(f"{type(self).__name__}.mean is not implemented")

    @property
    def variance(self):
        """The variance."""
        raise NotImplementedError(f"{type(self).__name__}.variance is not implemented")

    @property
    def stddev(self):
        """The standard deviation (the square root of ``variance``)."""
        return self.variance.sqrt()

    def __repr__(self):
        names = [name for name in self.arg_constraints if name in self.__dict__]
        parts = []
        for name in names:
            value = self.__dict__[name]
            parts.append(f"{name}: {value if value.numel() == 1 else tuple(value.shape)}")
        return f"{type(self).__name__}({', '.join(parts)})"


def as_float_tensor(value, reference=None):
    """``value`` as a float tensor (numbers on ``reference``'s device, in its dtype when it is
    a float tensor)."""
    if isinstance(value, anygrad.Tensor):
        return value if value.is_floating_point() else value.float()
    device = reference.device if isinstance(reference, anygrad.Tensor) else None
    dtype = reference.dtype if isinstance(reference, anygrad.Tensor) and reference.is_floating_point() else None
    return anygrad.tensor(float(value), dtype=dtype, device=device)


def broadcast_all(*values):
    """The values (tensors or numbers) as float tensors of one broadcast shape, on the first
    tensor's device."""
    reference = next((v for v in values if isinstance(v, anygrad.Tensor)), None)
    tensors = [as_float_tensor(v, reference) for v in values]
    return anygrad.broadcast_tensors(*tensors)
