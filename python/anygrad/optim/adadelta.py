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
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group in self.param_groups:
                rho, eps = group["rho"], group["eps"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = -p.grad if group["maximize"] else p.grad
                    state = self.state.setdefault(p, {})
                    if not state:
                        state["step"] = 0
                        state["square_avg"] = anygrad.zeros_like(p)
                        state["acc_delta"] = anygrad.zeros_like(p)
                    state["step"] += 1
                    if group["weight_decay"] != 0:
                        grad = grad + p * group["weight_decay"]
                    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                    square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
                    delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
                    acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
                    p.sub_(delta, alpha=group["lr"])
        return loss
