"""How tensors print (``repr``), after PyTorch's look: ``tensor([1., 2.], device='gpu:0')``,
and how they pickle."""


def _float_formatter(values):
    """A numpy formatter for float elements in PyTorch's style."""
    import numpy as np

    finite = values[np.isfinite(values)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda x: f"{x:.0f}." if np.isfinite(x) else str(x)
    nonzero = np.abs(finite[finite != 0])
    if nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4):
        return lambda x: f"{x:.4e}"
    return lambda x: f"{x:.4f}" if np.isfinite(x) else str(x)


def tensor_repr(tensor):
    """PyTorch's ``repr`` of a tensor."""
    import numpy as np

    values = tensor.numpy(force=True)
    suffix = []
    name = tensor.dtype.name
    if values.dtype.kind == "f":
        formatter = {"float_kind": _float_formatter(values.astype(np.float64))}
    elif values.dtype.kind == "b":
        formatter = {"bool": lambda x: "True" if x else "False"}
    else:
        formatter = {"int": lambda x: str(x)}
    if values.size == 0:
        body = "[]"
        if values.shape != (0,):
            suffix.append(f"size={tuple(values.shape)}")
    else:
        body = np.array2string(
            values,
            separator=", ",
            prefix="tensor(",
            formatter=formatter,
            threshold=1000,
            edgeitems=3,
            max_line_width=80,
        )
    if tensor.device.type != "cpu":
        suffix.insert(0, f"device='{tensor.device}'")
    if name not in ("float32", "int64", "bool"):
        suffix.append(f"dtype=anygrad.{name}")
    if tensor.requires_grad:
        suffix.append("grad_fn=<Backward>" if not tensor.is_leaf else "requires_grad=True")
    text = "tensor(" + body
    for part in suffix:
        text += ", " + part
    return text + ")"


def _rebuild(values, dtype_name, device_text, requires_grad):
    """Rebuild a pickled tensor."""
    import anygrad

    result = anygrad.from_numpy(values).to(getattr(anygrad, dtype_name))
    if device_text != "cpu":
        result = result.to(device_text)
    if requires_grad:
        result.requires_grad_(True)
    return result


def tensor_reduce(tensor):
    """``__reduce__`` of a tensor: its values as numpy, its dtype, device and flag."""
    return (_rebuild, (tensor.numpy(), tensor.dtype.name, str(tensor.device), tensor.requires_grad))
