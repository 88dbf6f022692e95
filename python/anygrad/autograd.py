"""``torch.autograd``: gradient switches, ``backward`` and ``grad``, custom differentiable
operations (``Function``, with ``ctx.save_for_backward``), the legacy ``Variable``, and
``detect_anomaly``/``set_detect_anomaly`` (accepted).

A ``Function``'s ``forward`` runs without recording (as PyTorch's); its outputs are joined to
the graph through a term of value zero that depends on every input needing a gradient. Hooks
on the outputs catch the incoming gradients, and hooks on the inputs' side of that term
replace what flows back with what ``backward`` returns, so autograd carries the custom
gradient on to the inputs. ``anygrad.autograd.function`` names this module (PyTorch's
``torch.autograd.function``: ``Function``, ``FunctionCtx``, ``once_differentiable``)."""

import sys as _sys

from ._grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Backward from ``tensors`` (one or a list), with ``grad_tensors`` for non-scalars."""
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
        grad_tensors = [grad_tensors]
    grad_tensors = grad_tensors or [None] * len(tensors)
    if create_graph:
        raise RuntimeError("autograd.backward: create_graph=True is not supported")
    for tensor, gradient in zip(tensors, grad_tensors):
        if retain_graph:
            tensor.backward(gradient, retain_graph=True)
        else:
            tensor.backward(gradient)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (computed by a backward pass;
    the inputs' ``.grad`` are left as they were)."""
    if create_graph:
        raise RuntimeError("autograd.grad: create_graph=True is not supported")
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    saved = [tensor.grad for tensor in inputs]
    for tensor in inputs:
        tensor.grad = None
    backward(outputs, grad_outputs, retain_graph=retain_graph)
    result = []
    for tensor, old in zip(inputs, saved):
        gradient = tensor.grad
        if gradient is None and not allow_unused:
            raise RuntimeError("autograd.grad: one of the inputs was not used in the graph")
        result.append(gradient)
        tensor.grad = old
    return tuple(result)


class FunctionCtx:
    """The ``ctx`` of a ``Function``: ``save_for_backward`` / ``saved_tensors``,
    ``needs_input_grad``, ``mark_non_differentiable``, ``set_materialize_grads``, and any
    attribute ``forward`` sets for ``backward``."""

    def __init__(self):
        self.needs_input_grad = ()
        self._saved = ()
        self._non_differentiable = set()
        self._materialize_grads = True
        self._dirty = ()

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for ``backward``."""
        self._saved = tensors

    @property
    def saved_tensors(self):
        """What ``save_for_backward`` kept, as a tuple."""
        return tuple(self._saved)

    def save_for_forward(self, *tensors):
        """Accepted (forward-mode differentiation does not exist here)."""
        self._saved_for_forward = tensors

    def mark_non_differentiable(self, *outputs):
        """These outputs get no gradient (``backward`` receives zeros for them)."""
        self._non_differentiable.update(id(output) for output in outputs)

    def mark_dirty(self, *tensors):
        """Accepted: the inputs ``forward`` changed in place."""
        self._dirty = tensors

    def set_materialize_grads(self, value):
        """Whether ``backward`` receives zeros (True, the default) or None for outputs that
        got no gradient."""
        self._materialize_grads = bool(value)


class Function:
    """A differentiable operation written by hand: subclass it with static methods
    ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` (one gradient per input, None
    for inputs without one), and call ``YourFunction.apply(*args)``. ``forward`` may instead
    take only the arguments, with ``setup_context(ctx, inputs, output)`` filling ``ctx``
    (PyTorch's newer form)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The values (override it)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradients of the inputs from those of the outputs (override it)."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` when ``forward`` does not take it (override it for that form)."""
        raise NotImplementedError

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """``backward``."""
        raise NotImplementedError


def _apply(cls, *args, **kwargs):
    """``Function.apply``: run ``forward`` without recording and join its outputs to the
    graph so that ``backward`` gives the inputs' gradients."""
    import anygrad

    ctx = FunctionCtx()
    tensor_type = anygrad.Tensor
    ctx.needs_input_grad = tuple(isinstance(arg, tensor_type) and arg.requires_grad for arg in args)
    uses_setup = cls.setup_context is not Function.setup_context
    with no_grad():
        if uses_setup:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    tracked = [index for index, needed in enumerate(ctx.needs_input_grad) if needed]
    if not tracked or not anygrad.is_grad_enabled():
        return output
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    differentiable = [
        isinstance(value, tensor_type) and value.is_floating_point() and id(value) not in ctx._non_differentiable
        for value in outputs
    ]
    if not any(differentiable):
        return output
    backward_function = cls.backward if cls.backward is not Function.backward else cls.vjp
    state = {"grads": [None] * len(outputs), "results": None}

    # The inputs' side: an identity per input whose gradient hook hands out backward's result.
    links = []
    for index in tracked:
        link = args[index] * 1
        link.register_hook(_input_hook(state, index, args, ctx, outputs, differentiable, backward_function))
        links.append(link)
    # A term of value zero that depends on every link (``where`` keeps it zero and finite).
    zero = None
    for link in links:
        first = link.reshape(-1)[:1]
        term = anygrad.where(anygrad.zeros_like(first, dtype=anygrad.bool), first, 0.0).sum()
        zero = term if zero is None else zero + term
    joined = []
    for position, (value, join) in enumerate(zip(outputs, differentiable)):
        if not join:
            joined.append(value)
            continue
        result = value.detach() + zero.to(value.dtype).to(value.device)
        result.register_hook(_output_hook(state, position))
        joined.append(result)
    return joined[0] if single else tuple(joined)


Function.apply = classmethod(_apply)


def _output_hook(state, position):
    def hook(gradient):
        state["grads"][position] = gradient
        state["results"] = None

    return hook


def _input_hook(state, index, args, ctx, outputs, differentiable, backward_function):
    import anygrad

    def hook(gradient):
        if state["results"] is None:
            grads = []
            for position, value in enumerate(outputs):
                received = state["grads"][position]
                if received is None and differentiable[position] and ctx._materialize_grads:
                    received = anygrad.zeros_like(value)
                grads.append(received)
            state["grads"] = [None] * len(outputs)
            with no_grad():
                results = backward_function(ctx, *grads)
            results = results if isinstance(results, tuple) else (results,)
            if len(results) < len(args):
                raise RuntimeError(
                    f"function backward returned an incorrect number of gradients (expected {len(args)}, got {len(results)})"
                )
            state["results"] = results
        result = state["results"][index]
        if result is None:
            return anygrad.zeros_like(gradient)
        if not isinstance(result, anygrad.Tensor):
            result = anygrad.full(tuple(gradient.shape), float(result), dtype=gradient.dtype, device=gradient.device)
        if tuple(result.shape) != tuple(gradient.shape):
            try:
                result = result.expand(*gradient.shape) if result.dim() <= gradient.dim() else result.sum_to_size(*gradient.shape)
            except RuntimeError as error:
                raise RuntimeError(
                    f"Function backward returned an invalid gradient at index {index} - got {list(result.shape)} but expected shape compatible with {list(gradient.shape)}"
                ) from error
        return result.to(gradient.dtype)

    return hook


class detect_anomaly:
    """Accepted as a context manager (and by ``set_detect_anomaly``): anygrad's errors name the
    failing op already; NaNs in gradients are not searched for."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class set_detect_anomaly(detect_anomaly):
    """``torch.autograd.set_detect_anomaly(mode)``: accepted (see ``detect_anomaly``), as a
    call or a context manager."""

    def __init__(self, mode, check_nan=True):
        super().__init__(check_nan)
        self.mode = mode


def once_differentiable(function):
    """Marks a ``backward`` that is not itself differentiable: the function unchanged
    (anygrad's backward never records a graph)."""
    return function


class _VariableMeta(type):
    def __instancecheck__(cls, instance):
        import anygrad

        return isinstance(instance, anygrad.Tensor)

    def __call__(cls, data, requires_grad=False, volatile=False):
        if requires_grad:
            data.requires_grad_(True)
        return data


class Variable(metaclass=_VariableMeta):
    """The legacy ``Variable(tensor, requires_grad=...)``: the tensor itself (with
    ``requires_grad`` set when asked), as in PyTorch since 0.4; every tensor is an instance."""


# ``torch.autograd.function`` and ``torch.autograd.variable`` are submodules in PyTorch.
for _submodule in ("function", "variable"):
    _sys.modules[f"{__name__}.{_submodule}"] = _sys.modules[__name__]
    globals()[_submodule] = _sys.modules[__name__]
del _submodule
