"""Gradient clipping: ``clip_grad_norm_`` (the total norm over every gradient, scaled in
place when above ``max_norm``) and ``clip_grad_value_``."""

import math


def _with_grads(parameters):
    if hasattr(parameters, "grad") and not isinstance(parameters, (list, tuple)):
        parameters = [parameters]
    return [p for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale every gradient by ``max_norm / total_norm`` when the total norm is above
    ``max_norm``; returns the total norm (a tensor)."""
    import anygrad

    params = _with_grads(parameters)
    if not params:
        return anygrad.tensor(0.0)
    norm_type = float(norm_type)
    device = params[0].grad.device
    with anygrad.no_grad():
        if norm_type == math.inf:
            norms = [p.grad.abs().max().to(device) for p in params]
            total = anygrad.stack(norms).max()
        else:
            norms = [p.grad.norm(norm_type).to(device) for p in params]
            total = anygrad.stack(norms).norm(norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients is non-finite")
        coefficient = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for p in params:
            p.grad = p.grad * coefficient.to(p.grad.device)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient to [-clip_value, clip_value]."""
    import anygrad

    with anygrad.no_grad():
        for p in _with_grads(parameters):
            p.grad = p.grad.clamp(-clip_value, clip_value)
