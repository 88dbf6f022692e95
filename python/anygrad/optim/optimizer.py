"""``optim.Optimizer``: parameter groups (dicts of parameters and settings that schedulers
and scripts change), per-parameter state, ``zero_grad``, ``state_dict`` and
``load_state_dict``, as in PyTorch."""

import copy


class _Required:
    """The marker of a setting without a default."""

    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """The base class: subclasses define ``step`` over ``self.param_groups`` and keep
    per-parameter tensors in ``self.state[param]``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        if hasattr(params, "grad") and not isinstance(params, (list, tuple)):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own settings (the defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if hasattr(params, "grad") and not isinstance(params, (list, tuple)) else list(params)
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        for p in params:
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        group.setdefault("initial_lr", group.get("lr"))
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad = p.grad.detach() * 0

    def step(self, closure=None):
        """One update; subclasses define it."""
        raise NotImplementedError

    def _gradients(self):
        """Each ``(group, parameter, gradient, state)`` of a parameter that has a gradient: the
        gradient negated under ``maximize``, ``state`` the parameter's state (empty at its
        first step)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                yield group, p, grad, self.state.setdefault(p, {})

    def _closure_loss(self, closure):
        if closure is None:
            return None
        import anygrad

        with anygrad.enable_grad():
            return closure()

    def state_dict(self):
        """Settings per group (parameters as indices) and the state per parameter index."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: (v.clone() if hasattr(v, "clone") else v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned (same groups, same parameter counts)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        by_index = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = p
            for key, value in theirs.items():
                if key != "params":
                    mine[key] = copy.deepcopy(value)
        self.state = {}
        for i, values in state_dict["state"].items():
            p = by_index[int(i)]
            self.state[p] = {
                k: (v.to(device=p.device) if hasattr(v, "to") and hasattr(v, "shape") and tuple(v.shape) == tuple(p.shape) else v)
                for k, v in values.items()
            }

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)
