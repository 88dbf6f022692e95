"""``kl_divergence(p, q)``: the Kullback-Leibler divergence ``KL(p ‖ q)`` between two
distributions, looked up by their types in a registry that ``register_kl`` extends. Closed
forms for Normal–Normal, Categorical–Categorical, Bernoulli–Bernoulli and Uniform–Uniform."""

import anygrad

from .bernoulli import Bernoulli, _softplus
from .categorical import Categorical
from .normal import Normal
from .uniform import Uniform

_REGISTRY = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal)`` registers ``function(p, q)`` as the
    divergence between those types (subclasses use the closest registered pair)."""

    def decorator(function):
        _REGISTRY[(type_p, type_q)] = function
        return function

    return decorator


def _lookup(type_p, type_q):
    best, best_rank = None, None
    for (registered_p, registered_q), function in _REGISTRY.items():
        if issubclass(type_p, registered_p) and issubclass(type_q, registered_q):
            rank = (type_p.__mro__.index(registered_p), type_q.__mro__.index(registered_q))
            if best_rank is None or rank < best_rank:
                best, best_rank = function, rank
    return best


def kl_divergence(p, q):
    """``KL(p ‖ q)``, one value per distribution of the batch."""
    function = _lookup(type(p), type(q))
    if function is None:
        raise NotImplementedError(
            f"kl_divergence: no formula is registered for {type(p).__name__} and {type(q).__name__} "
            "(register one with anygrad.distributions.register_kl)"
        )
    return function(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    variance_ratio = (p.scale / q.scale).square()
    mean_term = ((p.loc - q.loc) / q.scale).square()
    return 0.5 * (variance_ratio + mean_term - 1 - variance_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    terms = p.probs * (p.logits - q.logits)
    terms = anygrad.where(q.probs == 0, float("inf"), terms)
    terms = anygrad.where(p.probs == 0, 0.0, terms)
    return terms.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log sigmoid(l) = -softplus(-l), log(1 - sigmoid(l)) = -softplus(l)
    ones = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    zeros = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    return ones + zeros


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    ratio = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return anygrad.where(outside, float("inf"), ratio)
