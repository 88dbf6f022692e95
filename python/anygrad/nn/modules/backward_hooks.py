"""Module backward hooks (``register_full_backward_hook`` and
``register_full_backward_pre_hook``): the gradients with respect to one call's outputs and
inputs, joined from tensor hooks.

A hooked call passes each input tensor that requires grad through two views that cancel out
(a view to the same shape would be the tensor itself), so that the gradient reaching them is
this call's own gradient for the input (not the input's total over every use). Hooks on the outputs collect ``grad_output``; once every output's
gradient is in, the pre-hooks run (a non-None result replaces ``grad_output``, as in
PyTorch); once every tracked input's gradient is in (or at once, when no input requires
grad) the full hooks run with ``(module, grad_input, grad_output)``. A full hook's non-None
result replaces ``grad_input``: the replacement of the input whose gradient arrives last is
passed on by its view; with several tracked inputs the earlier ones have already gone on, so
a replacement is applied only to a module called with one tracked input (the common case)
and is otherwise an error rather than a silently ignored value."""


def hooked_call(module, args, run):
    """``run(args)`` with ``module``'s backward hooks attached to this call's gradients."""
    import anygrad

    inputs = list(args)
    tracked = []
    for position, value in enumerate(inputs):
        if isinstance(value, anygrad.Tensor) and value.requires_grad:
            inputs[position] = value.unsqueeze(0).squeeze(0)  # a view of its own node
            tracked.append(position)
    output = run(tuple(inputs))
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    output_positions = [i for i, value in enumerate(outputs) if isinstance(value, anygrad.Tensor) and value.requires_grad]
    if not output_positions:
        return output

    state = {
        "grad_output": [None] * len(outputs),
        "outputs_waiting": len(output_positions),
        "grad_input": [None] * len(inputs),
        "inputs_waiting": len(tracked),
    }

    def run_full_hooks():
        grad_input = tuple(state["grad_input"])
        grad_output = tuple(state["grad_output"])
        replaced = None
        for hook in list(module._backward_hooks.values()):
            result = hook(module, grad_input, grad_output)
            if result is not None:
                replaced = grad_input = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return replaced

    def on_output(position):
        def hook(gradient):
            state["grad_output"][position] = gradient
            state["outputs_waiting"] -= 1
            if state["outputs_waiting"] > 0:
                return None
            grad_output = tuple(state["grad_output"])
            for pre_hook in list(module._backward_pre_hooks.values()):
                result = pre_hook(module, grad_output)
                if result is not None:
                    grad_output = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            state["grad_output"] = list(grad_output)
            if not tracked:
                run_full_hooks()
            return grad_output[position]

        return hook

    def on_input(position):
        def hook(gradient):
            state["grad_input"][position] = gradient
            state["inputs_waiting"] -= 1
            if state["inputs_waiting"] > 0:
                return None
            replaced = run_full_hooks()
            if replaced is None:
                return None
            if len(tracked) != 1:
                raise RuntimeError(
                    f"{type(module).__name__} backward hook: replacing grad_input is supported for a call with one "
                    f"input that requires grad, this call has {len(tracked)}")
            if len(replaced) != len(inputs):
                raise RuntimeError(
                    f"{type(module).__name__} backward hook returned {len(replaced)} gradients for {len(inputs)} inputs")
            return replaced[position]

        return hook

    for position in output_positions:
        outputs[position].register_hook(on_output(position))
    for position in tracked:
        inputs[position].register_hook(on_input(position))
    return output
