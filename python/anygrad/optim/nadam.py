"""``optim.NAdam``: Adam with Nesterov momentum (Dozat, 2016) and PyTorch's momentum decay
schedule; ``decoupled_weight_decay`` for the AdamW-style decay."""

from .optimizer import Optimizer


class NAdam(Optimizer):
    """NAdam, PyTorch's update."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= betas[0] < 1.0 or not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameters: {betas}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient."""
        import anygrad

        loss = self._closure_loss(closure)
        with anygrad.no_grad():
            for group, p, grad, state in self._gradients():
                beta1, beta2 = group["betas"]
                lr, decay = group["lr"], group["momentum_decay"]
                if not state:
                    state["step"] = 0
                    state["mu_product"] = 1.0
                    state["exp_avg"] = anygrad.zeros_like(p)
                    state["exp_avg_sq"] = anygrad.zeros_like(p)
                state["step"] += 1
                step = state["step"]
                if group["weight_decay"] != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * group["weight_decay"])
                    else:
                        grad = grad + p * group["weight_decay"]
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
                state["mu_product"] *= mu
                mu_product_next = state["mu_product"] * mu_next
                state["exp_avg"] = state["exp_avg"] * beta1 + grad * (1 - beta1)
                state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + grad * grad * (1 - beta2)
                denominator = (state["exp_avg_sq"] / (1 - beta2 ** step)).sqrt() + group["eps"]
                p.sub_(grad / denominator, alpha=lr * (1 - mu) / (1 - state["mu_product"]))
                p.sub_(state["exp_avg"] / denominator, alpha=lr * mu_next / (1 - mu_product_next))
        return loss
