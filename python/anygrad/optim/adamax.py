"""``optim.Adamax``: Adam with the infinity norm of the gradients (Kingma and Ba, section 7),
PyTorch's update."""

from .optimizer import Optimizer


class Adamax(Optimizer):
    """Adamax: the first moment over a running maximum of the gradients' magnitudes."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *, maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                beta1, beta2 = group["betas"]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = anygrad.zeros_like(p)
                    state["exp_inf"] = anygrad.zeros_like(p)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad + p * group["weight_decay"]
                state["exp_avg"] = state["exp_avg"] * beta1 + grad * (1 - beta1)
                state["exp_inf"] = anygrad.maximum(state["exp_inf"] * beta2, grad.abs() + group["eps"])
                clr = group["lr"] / (1 - beta1 ** state["step"])
                p.sub_(state["exp_avg"] / state["exp_inf"], alpha=clr)
        return loss
