"""``torch.autograd``: gradient switches and ``grad``."""

from ._grad_mode import no_grad, enable_grad, set_grad_enabled  # noqa: F401


def backward(tensors, grad_tensors=None):
    """Backward from ``tensors`` (one or a list)."""
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
        grad_tensors = [grad_tensors]
    grad_tensors = grad_tensors or [None] * len(tensors)
    for tensor, gradient in zip(tensors, grad_tensors):
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
    backward(outputs, grad_outputs)
    result = []
    for tensor, old in zip(inputs, saved):
        gradient = tensor.grad
        if gradient is None and not allow_unused:
            raise RuntimeError("autograd.grad: one of the inputs was not used in the graph")
        result.append(gradient)
        tensor.grad = old
    return tuple(result)
