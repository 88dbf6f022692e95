"""``torch.utils.checkpoint``: ``checkpoint`` and ``checkpoint_sequential`` compute what they
wrap directly, keeping its activations (PyTorch recomputes them in the backward pass to save
memory; the values and gradients are the same)."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)``."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """The modules (a ``Sequential`` or a list) applied in order to ``input``."""
    modules = list(functions.children()) if hasattr(functions, "children") else list(functions)
    for module in modules:
        input = module(input)
    return input
