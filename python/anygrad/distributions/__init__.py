"""``anygrad.distributions`` (``torch.distributions``): probability distributions with
sampling and log-probabilities, written over anygrad's tensor ops (so they run on every device
and carry gradients) and drawing from anygrad's random stream (``anygrad.manual_seed``
repeats their samples).

``Categorical``, ``Normal``, ``Bernoulli`` and ``Uniform``, each in its own file; the
``Distribution`` base class; ``kl_divergence`` with ``register_kl`` for Normal–Normal,
Categorical–Categorical, Bernoulli–Bernoulli and Uniform–Uniform."""

from .distribution import Distribution
from .categorical import Categorical
from .normal import Normal
from .bernoulli import Bernoulli
from .uniform import Uniform
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Categorical", "Normal", "Bernoulli", "Uniform", "kl_divergence", "register_kl"]
