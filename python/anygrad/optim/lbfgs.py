"""``optim.LBFGS``: the limited-memory Broyden–Fletcher–Goldfarb–Shanno method, as PyTorch
documents it (one parameter group; every step re-evaluates the model through ``closure``),
with the two-loop recursion over the last ``history_size`` curvature pairs and, when asked,
a line search satisfying the strong Wolfe conditions (Nocedal & Wright, "Numerical
Optimization", algorithms 3.5 and 3.6, with cubic interpolation)."""

import math

from .optimizer import Optimizer


def _dot(a, b):
    return float((a * b).sum().item())


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser, clamped to ``bounds`` (the two points by default), of the cubic through
    ``(x1, f1)`` and ``(x2, f2)`` with slopes ``g1`` and ``g2``; the middle of the bounds when
    that cubic has no minimum."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    if x1 == x2:
        return min(max(x1, low), high)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    radicand = d1 * d1 - g1 * g2
    if radicand < 0 or math.isnan(radicand):
        return (low + high) / 2
    d2 = math.sqrt(radicand)
    if x1 <= x2:
        denominator = g2 - g1 + 2 * d2
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / denominator) if denominator != 0 else (low + high) / 2
    else:
        denominator = g1 - g2 + 2 * d2
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / denominator) if denominator != 0 else (low + high) / 2
    if math.isnan(position):
        return (low + high) / 2
    return min(max(position, low), high)


def _strong_wolfe(evaluate, step, direction, loss, grad, slope, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step length along ``direction`` meeting the strong Wolfe conditions (sufficient
    decrease with ``c1``, curvature ``|g·d| <= c2·|g0·d|``): first bracket an interval that
    holds one (growing the step by cubic extrapolation), then shrink it ("zoom") by cubic
    interpolation. ``evaluate(t)`` returns the loss and flat gradient at ``x + t·d``. Returns
    ``(loss, grad, t, evaluations)``."""
    scale = float(direction.abs().max().item())
    new_loss, new_grad = evaluate(step)
    evaluations = 1
    new_slope = _dot(new_grad, direction)
    prev_t, prev_loss, prev_grad, prev_slope = 0.0, loss, grad, slope
    done = False
    iteration = 0
    bracket = None
    while iteration < max_ls:
        if new_loss > loss + c1 * step * slope or (iteration > 1 and new_loss >= prev_loss):
            bracket = [[prev_t, prev_loss, prev_grad, prev_slope], [step, new_loss, new_grad, new_slope]]
            break
        if abs(new_slope) <= -c2 * slope:
            bracket = [[step, new_loss, new_grad, new_slope]]
            done = True
            break
        if new_slope >= 0:
            bracket = [[prev_t, prev_loss, prev_grad, prev_slope], [step, new_loss, new_grad, new_slope]]
            break
        shortest, longest = step + 0.01 * (step - prev_t), step * 10
        grown = _cubic_minimum(prev_t, prev_loss, prev_slope, step, new_loss, new_slope, (shortest, longest))
        prev_t, prev_loss, prev_grad, prev_slope = step, new_loss, new_grad, new_slope
        step = grown
        new_loss, new_grad = evaluate(step)
        evaluations += 1
        new_slope = _dot(new_grad, direction)
        iteration += 1
    if bracket is None:
        bracket = [[0.0, loss, grad, slope], [step, new_loss, new_grad, new_slope]]

    stuck = False
    low, high = (0, 1) if len(bracket) == 1 or bracket[0][1] <= bracket[1][1] else (1, 0)
    while not done and iteration < max_ls:
        left, right = bracket[0][0], bracket[1][0]
        if abs(right - left) * scale < tolerance_change:
            break
        step = _cubic_minimum(bracket[0][0], bracket[0][1], bracket[0][3], bracket[1][0], bracket[1][1], bracket[1][3])
        # Keep the trial away from the interval's ends, so the interval shrinks.
        top, bottom = max(left, right), min(left, right)
        margin = 0.1 * (top - bottom)
        if min(top - step, step - bottom) < margin:
            if stuck or step >= top or step <= bottom:
                step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        new_loss, new_grad = evaluate(step)
        evaluations += 1
        new_slope = _dot(new_grad, direction)
        iteration += 1
        if new_loss > loss + c1 * step * slope or new_loss >= bracket[low][1]:
            bracket[high] = [step, new_loss, new_grad, new_slope]
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(new_slope) <= -c2 * slope:
                done = True
            elif new_slope * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = [step, new_loss, new_grad, new_slope]
    step, new_loss, new_grad, _ = bracket[low]
    return new_loss, new_grad, step, evaluations


class LBFGS(Optimizer):
    """L-BFGS. ``step(closure)`` runs up to ``max_iter`` iterations (at most ``max_eval``
    evaluations of ``closure``, default ``max_iter * 5 // 4``): each takes the quasi-Newton
    direction from the last ``history_size`` pairs of parameter and gradient changes (the
    two-loop recursion, the initial Hessian scaled by ``s·y / y·y``) and moves ``lr`` along it
    (the first iteration ``min(1, 1 / |g|_1) · lr``), or as far as the strong Wolfe line search
    finds with ``line_search_fn="strong_wolfe"``. It stops early when the largest gradient
    entry is at most ``tolerance_grad`` or the step or the loss changes by less than
    ``tolerance_change``. ``closure`` clears the gradients, computes the loss, calls
    ``backward`` and returns the loss; ``step`` returns the first loss. The parameters are
    handled as one flat vector, so there is one parameter group."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError("only 'strong_wolfe' is supported")
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad, tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        import anygrad

        pieces = []
        for p in self._params:
            if p.grad is None:
                pieces.append(anygrad.zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                pieces.append(p.grad.detach().reshape(-1))
        return anygrad.cat(pieces, 0)

    def _move(self, step, direction):
        offset = 0
        for p in self._params:
            count = p.numel()
            p.add_(direction[offset : offset + count].reshape(*p.shape), alpha=step)
            offset += count

    def _snapshot(self):
        return [p.detach().clone() for p in self._params]

    def _restore(self, values):
        for p, value in zip(self._params, values):
            p.copy_(value)

    def step(self, closure):
        """Up to ``max_iter`` L-BFGS iterations; ``closure`` re-evaluates the model (it is
        required). Returns the loss of the first evaluation."""
        import anygrad

        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]

        def evaluate():
            with anygrad.enable_grad():
                return closure()

        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with anygrad.no_grad():
            first_loss = evaluate()
            loss = float(first_loss)
            evaluations = 1
            state["func_evals"] += 1
            grad = self._flat_grad()
            if float(grad.abs().max().item()) <= tolerance_grad:
                return first_loss

            direction = state.get("d")
            t = state.get("t")
            old_dirs = state.get("old_dirs", [])
            old_steps = state.get("old_stps", [])
            ro = state.get("ro", [])
            h_diag = state.get("H_diag", 1.0)
            prev_grad = state.get("prev_flat_grad")
            prev_loss = state.get("prev_loss")

            iteration = 0
            while iteration < max_iter:
                iteration += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    direction = -grad
                    old_dirs, old_steps, ro, h_diag = [], [], [], 1.0
                else:
                    y = grad - prev_grad
                    s = direction * t
                    ys = _dot(y, s)
                    if ys > 1e-10:
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_steps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_steps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / _dot(y, y)
                    # Two-loop recursion: direction = -H·g with the implicit inverse Hessian H.
                    q = -grad
                    alphas = [0.0] * len(old_dirs)
                    for i in range(len(old_dirs) - 1, -1, -1):
                        alphas[i] = _dot(old_steps[i], q) * ro[i]
                        q = q - old_dirs[i] * alphas[i]
                    r = q * h_diag
                    for i in range(len(old_dirs)):
                        beta = _dot(old_dirs[i], r) * ro[i]
                        r = r + old_steps[i] * (alphas[i] - beta)
                    direction = r
                prev_grad = grad.clone()
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / float(grad.abs().sum().item())) * lr
                else:
                    t = lr
                slope = _dot(grad, direction)
                if slope > -tolerance_change:
                    break

                used = 0
                if line_search_fn == "strong_wolfe":
                    start = self._snapshot()

                    def along(trial):
                        self._move(trial, direction)
                        value = float(evaluate())
                        gradient = self._flat_grad()
                        self._restore(start)
                        return value, gradient

                    loss, grad, t, used = _strong_wolfe(along, t, direction, loss, grad, slope, tolerance_change=tolerance_change)
                    self._move(t, direction)
                else:
                    self._move(t, direction)
                    if iteration != max_iter:
                        loss = float(evaluate())
                        grad = self._flat_grad()
                        used = 1
                evaluations += used
                state["func_evals"] += used
                converged = float(grad.abs().max().item()) <= tolerance_grad

                if iteration == max_iter or evaluations >= max_eval or converged:
                    break
                if float(direction.abs().max().item()) * abs(t) <= tolerance_change:
                    break
                if abs(loss - prev_loss) < tolerance_change:
                    break

            state.update(d=direction, t=t, old_dirs=old_dirs, old_stps=old_steps, ro=ro, H_diag=h_diag, prev_flat_grad=prev_grad, prev_loss=prev_loss)
        return first_loss
