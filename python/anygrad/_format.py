"""How tensors print (``repr``), after PyTorch's look: ``tensor([1., 2.], device='gpu:0')``,
with ``set_printoptions``, and how they pickle."""


#: ``set_printoptions``' settings: digits after the point, elements before summarising, edge
#: items kept when summarising, characters per line, scientific notation (None: automatic).
PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": float("inf"), "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as PyTorch's: ``precision`` (digits after the point), ``threshold``
    (elements shown before summarising with ``...``), ``edgeitems``, ``linewidth``, ``profile``
    (``"default"``, ``"short"``, ``"full"``) and ``sci_mode`` (True, False or None)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}")
        PRINT_OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTIONS[name] = value
    PRINT_OPTIONS["sci_mode"] = sci_mode


def _float_formatter(values):
    """A numpy formatter for float elements in PyTorch's style."""
    import numpy as np

    digits = PRINT_OPTIONS["precision"]
    sci_mode = PRINT_OPTIONS["sci_mode"]
    finite = values[np.isfinite(values)]
    if sci_mode is None and finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda x: f"{x:.0f}." if np.isfinite(x) else str(x)
    nonzero = np.abs(finite[finite != 0])
    scientific = nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4) if sci_mode is None else sci_mode
    if scientific:
        return lambda x: f"{x:.{digits}e}"
    return lambda x: f"{x:.{digits}f}" if np.isfinite(x) else str(x)


def tensor_repr(tensor):
    """PyTorch's ``repr`` of a tensor."""
    import numpy as np

    values = tensor.numpy(force=True)
    suffix = []
    name = tensor.dtype.name
    if values.dtype.kind == "f":
        element = _float_formatter(values.astype(np.float64))
        kind = "float_kind"
    elif values.dtype.kind == "b":
        element = lambda x: "True" if x else "False"  # noqa: E731
        kind = "bool"
    else:
        element = str
        kind = "int"
    # PyTorch right-aligns every element to the widest one.
    width = max((len(element(v)) for v in values.reshape(-1)[:2000]), default=0)
    formatter = {kind: lambda x: element(x).rjust(width)}
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
            threshold=PRINT_OPTIONS["threshold"] if PRINT_OPTIONS["threshold"] != float("inf") else values.size,
            edgeitems=PRINT_OPTIONS["edgeitems"],
            max_line_width=PRINT_OPTIONS["linewidth"],
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
