"""PyTorch's legacy tensor types: ``FloatTensor``, ``DoubleTensor``, ``HalfTensor``,
``LongTensor``, ``IntTensor``, ``ByteTensor``, ``BoolTensor`` (and their ``cuda.`` forms on the
GPU). Older scripts call them to make tensors (``torch.LongTensor(array)``,
``torch.FloatTensor(2, 3)``), pass them to ``Tensor.type`` and test ``isinstance`` with them;
here each is a class whose call makes an ``anygrad.Tensor`` of its dtype and device, and whose
``isinstance`` check compares the dtype and the device kind."""

from . import _native


class _TensorType(type):
    """The metaclass of the legacy types: calling one makes a tensor, ``isinstance`` compares
    the dtype and whether the tensor is on a GPU."""

    def __instancecheck__(cls, instance):
        return (
            isinstance(instance, _native.Tensor)
            and instance.dtype == cls.dtype
            and (instance.device.type != "cpu") == cls.is_cuda
        )

    def __call__(cls, *args, device=None):
        """``Type()`` (empty), ``Type(*sizes)`` / ``Type(torch.Size)`` (zeros: PyTorch leaves
        them uninitialised), ``Type(data)`` (a list, tuple, numpy array or tensor)."""
        import anygrad

        target = device if device is not None else ("cuda" if cls.is_cuda else "cpu")
        if not args:
            return anygrad.zeros(0, dtype=cls.dtype, device=target)
        sizes = args[0] if len(args) == 1 and isinstance(args[0], anygrad.Size) else args
        if all(isinstance(size, int) and not isinstance(size, bool) for size in sizes):
            return anygrad.zeros(*sizes, dtype=cls.dtype, device=target)
        if len(args) != 1:
            raise TypeError(f"{cls.__name__}: expected sizes (ints) or one sequence of data, got {args!r}")
        data = args[0]
        if isinstance(data, _native.Tensor):
            return data.to(device=target, dtype=cls.dtype)
        return anygrad.tensor(data, dtype=cls.dtype, device=target)

    def __repr__(cls):
        return f"<class 'anygrad.{'cuda.' if cls.is_cuda else ''}{cls.__name__}'>"


def _make(name, dtype, is_cuda):
    return _TensorType(name, (), {"dtype": dtype, "is_cuda": is_cuda, "__doc__": f"Tensors of {dtype.name} on the {'GPU' if is_cuda else 'CPU'} (PyTorch's legacy type)."})


_DTYPES = {
    "FloatTensor": _native.float32,
    "DoubleTensor": _native.float64,
    "HalfTensor": _native.float16,
    "BFloat16Tensor": _native.bfloat16,
    "LongTensor": _native.int64,
    "IntTensor": _native.int32,
    "ByteTensor": _native.uint8,
    "BoolTensor": _native.bool,
}

#: The CPU types, by name.
cpu_types = {name: _make(name, dtype, False) for name, dtype in _DTYPES.items()}
#: The GPU types (``anygrad.cuda.FloatTensor`` ...), by name.
gpu_types = {name: _make(name, dtype, True) for name, dtype in _DTYPES.items()}


def resolve(type_or_name):
    """``(dtype, device or None)`` of a legacy type, its name (``"torch.cuda.LongTensor"``,
    ``"anygrad.FloatTensor"``) or a dtype; None when it is none of those."""
    if isinstance(type_or_name, _TensorType):
        return type_or_name.dtype, ("cuda" if type_or_name.is_cuda else "cpu")
    if isinstance(type_or_name, str):
        parts = type_or_name.split(".")
        if parts[-1] in _DTYPES and parts[0] in ("torch", "anygrad"):
            return _DTYPES[parts[-1]], ("cuda" if "cuda" in parts[1:-1] else "cpu")
    return None
