"""``optim.RMSprop`` (alpha, eps, weight decay, momentum, centered), PyTorch's update."""

from .optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                if not state:
                    state["step"] = 0
                    state["square_avg"] = anygrad.zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = anygrad.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = anygrad.zeros_like(p)
                state["step"] += 1
                if group["weight_decay"] != 0:
                    grad = grad + p * group["weight_decay"]
                alpha = group["alpha"]
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
                else:
                    avg = square_avg.sqrt() + group["eps"]
                if group["momentum"] > 0:
                    buffer = state["momentum_buffer"]
                    buffer.mul_(group["momentum"]).add_(grad / avg)
                    p.sub_(buffer, alpha=group["lr"])
                else:
                    p.sub_(grad / avg, alpha=group["lr"])
        return loss
