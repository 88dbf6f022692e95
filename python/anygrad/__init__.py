"""anygrad: deep learning on any vendor's GPU (Vulkan, DX12, Metal) or the CPU, with PyTorch's API.

A PyTorch script ports by changing its imports::

    import anygrad as torch
    import anygrad.nn as nn
    import anygrad.nn.functional as F
    import anygrad.optim as optim
    from anygrad.utils.data import DataLoader, TensorDataset

Device strings are ``"cpu"``, ``"gpu"``/``"gpu:N"`` and ``"cuda"``/``"cuda:N"`` (the N-th GPU of
any vendor). ``anygrad.cuda`` is an alias of ``anygrad.gpu``. Integers are stored in 32 bits:
``int64`` tensors hold values up to 2**31 - 1 (larger values are an error where they enter).
"""

try:
    from . import _native
except ImportError as _error:  # pragma: no cover - depends on how the package was obtained
    raise ImportError(
        "anygrad's native extension (anygrad._native) is not built beside this copy of the "
        f"package ({__file__}): install it with `pip install ./python` from the repository root, "
        "or see docs/PYTHON.md for a development build"
    ) from _error
from ._native import Tensor, device, dtype
from ._native import (
    float32,
    float16,
    bfloat16,
    float64,
    int32,
    int64,
    uint32,
    uint8,
    bool,  # noqa: A004 - torch.bool
)
from ._native import (
    zeros as _zeros,
    ones,
    empty,
    full,
    arange,
    linspace,
    randn as _randn,
    rand as _rand,
    randint as _randint,
    randperm as _randperm,
    eye,
    cat,
    stack,
    manual_seed,
    is_grad_enabled,
    get_default_dtype,
    set_default_dtype,
)

__version__ = "0.1.0"

#: Aliases of the dtypes, as in PyTorch.
float = float32  # noqa: A001
half = float16
double = float64
long = int64
int = int32  # noqa: A001

zeros = _zeros
concat = cat
concatenate = cat


class Size(tuple):
    """A shape (``torch.Size``): a tuple of ints."""

    def __repr__(self):
        return f"anygrad.Size({list(self)})"

    def numel(self):
        """The number of elements of a tensor of this shape."""
        count = 1
        for size in self:
            count *= size
        return count


def is_tensor(value):
    """Whether ``value`` is a tensor."""
    return isinstance(value, Tensor)


def is_floating_point(tensor):
    """Whether ``tensor`` holds floats."""
    return tensor.is_floating_point()


def numel(tensor):
    """The number of elements of ``tensor``."""
    return tensor.numel()


def _is_numpy(value):
    """Whether ``value`` is a numpy array (without importing numpy)."""
    return type(value).__module__ == "numpy" and hasattr(value, "__array_interface__")


_SHAREABLE_NUMPY_DTYPES = ("float32", "float16", "float64", "int32", "uint8", "uint32")


def from_numpy(array):
    """A CPU tensor over the numpy array's memory, as PyTorch's: no copy, and writes through
    either show in the other. Arrays that cannot be shared that way give a copy: int64 (held
    in 32 bits), bool and the widened types, read-only, unaligned, non-contiguous or
    big-endian arrays."""
    import numpy as np

    if isinstance(array, np.ndarray):
        flags = array.flags
        if (
            array.dtype.name in _SHAREABLE_NUMPY_DTYPES
            and array.dtype.byteorder in ("=", "<", "|")
            and flags.c_contiguous
            and flags.aligned
            and flags.writeable
        ):
            return _native.from_numpy_shared(array, array.dtype.name, list(array.shape))
    return _from_numpy_copy(array)


def _from_numpy_copy(array):
    """A tensor with a copy of a numpy array's values (anygrad owns the memory)."""
    import numpy as np

    array = np.asarray(array)
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)  # (keeps 0-d arrays 0-d only when contiguous)
    name = array.dtype.name
    if name not in (
        "float32", "float64", "float16", "int32", "int64", "uint8", "bool",
        "int16", "int8", "uint16", "uint32", "uint64",
    ):
        raise TypeError(
            f"from_numpy: numpy dtype {name} is not supported; convert with .astype(np.float32)"
        )
    return _native.from_bytes(array.astype(array.dtype.newbyteorder("<")).tobytes(), name, list(array.shape))


def from_dlpack(ext_tensor):
    """A tensor with the values of any CPU tensor that speaks DLPack (a numpy array, a torch
    tensor, ...): read through numpy's DLPack import, then copied (anygrad owns its memory)."""
    import numpy as np

    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    try:
        array = np.from_dlpack(ext_tensor)
    except (AttributeError, BufferError, RuntimeError, TypeError, ValueError) as error:
        raise BufferError(
            f"from_dlpack: {error} (anygrad exchanges DLPack tensors on the CPU, in the dtypes "
            "numpy has: move the tensor to the CPU and convert bfloat16 first)"
        ) from error
    return from_numpy(array)


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor from ``data``: a number, nested lists/tuples, a numpy array or a tensor."""
    if _is_numpy(data):
        result = _from_numpy_copy(data)
        if dtype is not None or device is not None:
            result = result.to(device=device, dtype=dtype)
        if requires_grad:
            result.requires_grad_(True)
        return result
    return Tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor: tensors pass through (converted if asked), a numpy array shares
    its memory where ``from_numpy`` can (and no conversion is asked), the rest is copied."""
    if isinstance(data, Tensor):
        if dtype is None and device is None:
            return data
        return data.to(device=device, dtype=dtype)
    if _is_numpy(data):
        return from_numpy(data).to(device=device, dtype=dtype)
    return tensor(data, dtype=dtype, device=device)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    """Zeros shaped like ``input``."""
    return _native.full_like(input, 0.0, dtype=dtype, device=device, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    """Ones shaped like ``input``."""
    return _native.full_like(input, 1.0, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    """Zeros shaped like ``input`` (PyTorch leaves them uninitialised)."""
    return _native.full_like(input, 0.0, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` everywhere, shaped like ``input``."""
    return _native.full_like(input, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def randn(*size, generator=None, **options):
    """Standard normal samples of shape ``size`` (from ``generator`` when given)."""
    with drawing_from(generator):
        return _randn(*size, **options)


def rand(*size, generator=None, **options):
    """Uniform samples in [0, 1) of shape ``size`` (from ``generator`` when given)."""
    with drawing_from(generator):
        return _rand(*size, **options)


def randint(*arguments, generator=None, **options):
    """Random integers: ``randint(high, size)`` or ``randint(low, high, size)`` (from
    ``generator`` when given)."""
    with drawing_from(generator):
        return _randint(*arguments, **options)


def randperm(n, *, generator=None, **options):
    """A random permutation of ``0..n`` (int64; from ``generator`` when given)."""
    with drawing_from(generator):
        return _randperm(n, **options)


def rand_like(input, *, dtype=None, device=None):
    """Uniform samples in [0, 1), shaped like ``input``."""
    return _native.random_like(input, "rand", dtype=dtype, device=device)


def randn_like(input, *, dtype=None, device=None):
    """Standard normal samples, shaped like ``input``."""
    return _native.random_like(input, "randn", dtype=dtype, device=device)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):
    """Random integers in [low, high), shaped like ``input``."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds and ``other`` elsewhere; with one argument, the
    positions where ``condition`` is nonzero (a tuple of index tensors)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    return _native.where_(condition, input, other)


def _method(name):
    """The module function ``anygrad.name(input, ...)`` that calls ``input.name(...)``."""

    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"``input.{name}(...)`` as a function (``torch.{name}``)."
    return function


for _name in (
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow",
    "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "logical_not",
    "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "erf",
    "relu", "abs", "neg", "sign", "square", "clamp", "clip", "matmul", "mm", "bmm",
    "softmax", "log_softmax", "masked_fill", "tril", "triu", "cumsum", "sort", "argsort",
    "topk", "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "var",
    "std", "all", "any", "norm", "logsumexp", "reshape", "permute", "transpose", "t",
    "unsqueeze", "squeeze", "flatten", "unflatten", "chunk", "split", "unbind", "flip",
    "roll", "narrow", "gather", "index_select", "scatter_add", "index_add", "masked_select",
    "nonzero", "detach", "clone", "floor", "ceil", "round", "trunc", "log2", "log10",
    "log1p", "expm1", "exp2", "isnan", "isinf", "isfinite", "allclose", "equal",
    "dist", "outer", "dot", "diag", "repeat_interleave", "std_mean", "var_mean",
    "numel", "tan", "atan", "asin", "acos", "sinh", "cosh", "silu", "gelu",
    "lerp", "kthvalue", "median", "mode", "unique", "index_put", "index_put_",
    "bincount", "scatter", "index_copy", "masked_scatter", "fill_diagonal_",
    "nan_to_num", "argwhere", "addmm", "baddbmm", "diagonal", "mv", "broadcast_to", "logaddexp",
    "atan2", "arctan", "arcsin", "arccos", "arctan2", "rad2deg", "deg2rad", "heaviside",
    "nansum", "nanmean", "unique_consecutive", "quantile", "histc", "frac", "logical_and",
    "logical_or", "logical_xor", "float_power", "clamp_min", "clamp_max",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift",
):
    if _name not in globals() or _name in ("max", "min", "sum", "abs", "round", "all", "any", "pow"):
        globals()[_name] = _method(_name)
del _name


def max(input, *args, **kwargs):  # noqa: A001 - torch.max
    """``input.max(...)``; ``max(a, b)`` of two tensors is the elementwise maximum."""
    return input.max(*args, **kwargs)


def min(input, *args, **kwargs):  # noqa: A001 - torch.min
    """``input.min(...)``; ``min(a, b)`` of two tensors is the elementwise minimum."""
    return input.min(*args, **kwargs)


def einsum(equation, *operands):
    """Einstein summation (``torch.einsum("bij,bjk->bik", a, b)``; the operands may also come as
    one list): letters name dims, ``...`` any number of broadcast dims, ``->`` the output's;
    repeated letters in one term take a diagonal, letters missing from the output are summed."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return _native.einsum(equation, list(operands))


from . import _return_types  # noqa: E402
from . import _return_types as return_types  # noqa: E402
from . import _tensor_overrides  # noqa: E402,F401
from ._tensor_types import cpu_types as _cpu_types  # noqa: E402

globals().update(_cpu_types)  # FloatTensor, LongTensor, ... (PyTorch's legacy types)
from ._memory_format import (  # noqa: E402
    memory_format,
    contiguous_format,
    channels_last,
    channels_last_3d,
    preserve_format,
)
from ._generator import (  # noqa: E402
    Generator,
    drawing_from,
    get_rng_state,
    set_rng_state,
    initial_seed,
    seed,
)
from ._grad_mode import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402
from . import gpu  # noqa: E402
from . import gpu as cuda  # noqa: E402
from . import backends  # noqa: E402
from . import version  # noqa: E402
from . import accelerator  # noqa: E402
from . import onnx  # noqa: E402
from ._serialization import save, load  # noqa: E402
from ._format import set_printoptions  # noqa: E402
from . import nn  # noqa: E402
from . import optim  # noqa: E402
from . import utils  # noqa: E402
from . import autograd  # noqa: E402
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402
from . import safetensors  # noqa: E402
from . import models  # noqa: E402
from ._functions import *  # noqa: E402,F401,F403
from . import profiler  # noqa: E402
from . import jit  # noqa: E402
from . import distributions  # noqa: E402
from . import linalg  # noqa: E402
from .linalg import det, slogdet, logdet, matrix_power  # noqa: E402
from .linalg import inv as inverse  # noqa: E402

__all__ = [name for name in globals() if not name.startswith("_")]
