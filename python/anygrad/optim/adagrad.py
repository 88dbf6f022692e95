"""``optim.Adagrad`` (lr decay, weight decay, initial accumulator), PyTorch's update."""

from .optimizer import Optimizer


class Adagrad(Optimizer):
    """Adagrad."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                if not state:
                    state["step"] = 0
                    state["sum"] = anygrad.full_like(p, group["initial_accumulator_value"])
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad + p * group["weight_decay"]
                clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
                state["sum"].add_(grad * grad)
                p.sub_(grad / (state["sum"].sqrt() + group["eps"]), alpha=clr)
        return loss
