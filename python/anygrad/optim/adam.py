"""``optim.Adam`` (L2 weight decay added to the gradient, ``amsgrad``) and ``optim.AdamW``
(decoupled weight decay), with PyTorch's bias-corrected update."""

from .. import _native
from .._grad_mode import no_grad
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adam."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient: one fused native step each, which
        writes the parameter and its state in place (as PyTorch's fused Adam)."""
        loss = self._closure_loss(closure)
        step = _native.adam_step
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, decay, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if group["maximize"]:
                        grad = -grad
                    state = self.state.get(p)
                    if not state:
                        from .. import zeros_like

                        state = self.state[p] = {
                            "step": 0,
                            "exp_avg": zeros_like(p),
                            "exp_avg_sq": zeros_like(p),
                        }
                    if amsgrad and "max_exp_avg_sq" not in state:
                        from .. import zeros_like

                        state["max_exp_avg_sq"] = zeros_like(p)
                    state["step"] += 1
                    step(
                        p, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"),
                        state["step"], lr, beta1, beta2, eps, decay, self._decoupled, amsgrad,
                    )
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, **kwargs):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)
