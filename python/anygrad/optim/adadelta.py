"""``optim.Adadelta`` (rho, eps, weight decay, lr), PyTorch's update."""

from .optimizer import Optimizer


class Adadelta(Optimizer):
    """Adadelta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient (one native step each)."""
        import anygrad
        from .. import _native

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                if not state:
                    state["step"] = 0
                    state["square_avg"] = anygrad.zeros_like(p)
                    state["acc_delta"] = anygrad.zeros_like(p)
                state["step"] += 1
                state["square_avg"], state["acc_delta"] = _native.adadelta_step(
                    p, grad, state["square_avg"], state["acc_delta"], group["lr"], group["rho"],
                    group["eps"], group["weight_decay"],
                )
        return loss
