"""``optim.SGD``: momentum, dampening, Nesterov and weight decay, with PyTorch's update;
each parameter updates in one fused step of the library (one GPU kernel)."""

from .. import _native
from .optimizer import Optimizer, required


class SGD(Optimizer):
    """Stochastic gradient descent."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False, foreach=None, differentiable=False, fused=None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = -p.grad if group["maximize"] else p.grad
                    momentum = group["momentum"]
                    state = self.state.setdefault(p, {})
                    buffer = None
                    first = False
                    if momentum != 0:
                        buffer = state.get("momentum_buffer")
                        if buffer is None:
                            buffer = anygrad.zeros_like(p)
                            state["momentum_buffer"] = buffer
                            first = True
                    _native.sgd_step(p, grad, buffer, group["lr"], momentum, group["dampening"], group["weight_decay"], group["nesterov"], first)
        return loss
