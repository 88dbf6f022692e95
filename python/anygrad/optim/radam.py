"""``optim.RAdam``: Adam with the variance of its adaptive rate rectified (Liu et al., 2019),
plain momentum SGD while too few steps have been seen; ``decoupled_weight_decay`` for the
AdamW-style decay. PyTorch's update."""

import math

from .optimizer import Optimizer


class RAdam(Optimizer):
    """Rectified Adam."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                beta1, beta2 = group["betas"]
                lr = group["lr"]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = anygrad.zeros_like(p)
                    state["exp_avg_sq"] = anygrad.zeros_like(p)
                state["step"] += 1
                step = state["step"]
                if group["weight_decay"] != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * group["weight_decay"])
                    else:
                        grad = grad + p * group["weight_decay"]
                state["exp_avg"] = state["exp_avg"] * beta1 + grad * (1 - beta1)
                state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + grad * grad * (1 - beta2)
                correction1 = 1 - beta1 ** step
                correction2 = 1 - beta2 ** step
                corrected = state["exp_avg"] / correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho = rho_inf - 2 * step * beta2 ** step / correction2
                if rho > 5.0:
                    rect = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
                    adaptive = math.sqrt(correction2) / (state["exp_avg_sq"].sqrt() + group["eps"])
                    p.sub_(corrected * adaptive, alpha=lr * rect)
                else:
                    p.sub_(corrected, alpha=lr)
        return loss
