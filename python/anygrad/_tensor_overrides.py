"""Python wrappers around a few of the native ``Tensor`` methods, installed on the class at
import: they add PyTorch's arguments and return types that the compiled methods lack.

- ``topk`` and ``sort`` return PyTorch's named tuples (``.values``, ``.indices``);
  ``sort``/``argsort`` accept ``stable`` (anygrad's sort is always stable: equal values keep
  their order in both directions, so ``stable=True`` and ``stable=False`` give the same
  answer, the one PyTorch gives with ``stable=True``).
- ``roll(shifts, dims=None)`` takes tuples of shifts and dims, and rolls the flattened tensor
  when ``dims`` is None, as PyTorch does.
- ``to``, ``contiguous`` and ``is_contiguous`` accept ``memory_format``
  (see ``anygrad._memory_format``: anygrad chooses layouts itself, values never change).
- ``type`` also takes PyTorch's legacy types and their names (``x.type(torch.LongTensor)``,
  ``x.type("torch.cuda.FloatTensor")``; ``anygrad._tensor_types``).
- ``__format__`` formats a one-element (0-d) tensor as its Python number, as PyTorch does, so
  ``f"{loss:.4f}"`` and ``f"{correct}"`` print numbers; other tensors print as ``str``.
"""

from . import _native, _return_types
from . import _memory_format
from . import _tensor_types

_Tensor = _native.Tensor
_native_topk = _Tensor.topk
_native_sort = _Tensor.sort
_native_argsort = _Tensor.argsort
_native_roll = _Tensor.roll
_native_to = _Tensor.to
_native_contiguous = _Tensor.contiguous
_native_is_contiguous = _Tensor.is_contiguous
_native_type = _Tensor.type


def topk(self, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest, ``largest=False``) values along ``dim`` and their
    positions, as ``(values, indices)`` with ``.values`` and ``.indices``. The values always
    come in sorted order; among equal values the earlier position comes first."""
    values, indices = _native_topk(self, k, dim, largest, sorted)
    return _return_types.topk(values, indices)


def sort(self, dim=-1, descending=False, stable=False):
    """The values sorted along ``dim`` and the positions they came from, as
    ``(values, indices)`` with ``.values`` and ``.indices``. The sort is always stable (equal
    values keep their order), so ``stable`` changes nothing."""
    if not isinstance(stable, bool):
        raise TypeError(f"sort: stable must be a bool, got {type(stable).__name__}")
    values, indices = _native_sort(self, dim, descending)
    return _return_types.sort(values, indices)


def argsort(self, dim=-1, descending=False, stable=False):
    """The positions that sort along ``dim`` (always a stable sort, so ``stable`` changes
    nothing)."""
    if not isinstance(stable, bool):
        raise TypeError(f"argsort: stable must be a bool, got {type(stable).__name__}")
    return _native_argsort(self, dim, descending)


def roll(self, shifts, dims=None):
    """The elements shifted by ``shifts`` along ``dims`` (ints or tuples of the same length),
    wrapping around; with ``dims`` None the tensor is rolled flattened and reshaped back."""
    if dims is None:
        if not isinstance(shifts, int):
            shifts = tuple(shifts)
            if len(shifts) != 1:
                raise RuntimeError(f"roll: with dims=None, expected one shift, got {len(shifts)}")
            shifts = shifts[0]
        return _native_roll(self.flatten(), shifts, 0).reshape(*self.shape)
    shift_list = [shifts] if isinstance(shifts, int) else list(shifts)
    dim_list = [dims] if isinstance(dims, int) else list(dims)
    if len(shift_list) != len(dim_list):
        raise RuntimeError(
            f"roll: shifts and dimensions must align, got {len(shift_list)} shifts and {len(dim_list)} dims"
        )
    out = self
    for shift, dim in zip(shift_list, dim_list):
        out = _native_roll(out, shift, dim)
    return out


def to(self, *args, memory_format=None, **kwargs):
    """A copy on ``device`` and/or as ``dtype`` (``to("cuda")``, ``to(anygrad.float16)``,
    ``to(device, dtype)``, ``to(other)``, keywords ``dtype``, ``device``, ``non_blocking``,
    ``copy``). ``memory_format`` is accepted and keeps the values as they are (anygrad chooses
    layouts itself)."""
    _memory_format.check("Tensor.to", memory_format)
    return _native_to(self, *args, **kwargs)


def contiguous(self, memory_format=_memory_format.contiguous_format):
    """Dense in row-major order (a copy only when needed); ``memory_format`` is accepted and
    keeps the values as they are (anygrad chooses layouts itself)."""
    _memory_format.check("Tensor.contiguous", memory_format)
    return _native_contiguous(self)


def is_contiguous(self, memory_format=_memory_format.contiguous_format):
    """Whether the elements lie densely in the order ``memory_format`` names. anygrad keeps
    tensors row-major, so for ``channels_last`` (``channels_last_3d``) this holds only where
    the two orders coincide: a dense 4-D (5-D) tensor with one channel or one spatial
    position."""
    _memory_format.check("Tensor.is_contiguous", memory_format)
    dense = _native_is_contiguous(self)
    if memory_format in (None, _memory_format.contiguous_format, _memory_format.preserve_format):
        return dense
    rank = 4 if memory_format is _memory_format.channels_last else 5
    if self.dim() != rank:
        return False
    spatial = 1
    for size in tuple(self.shape)[2:]:
        spatial *= size
    return dense and (self.shape[1] == 1 or spatial == 1)


def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """Without ``dtype``: the type's name (``"anygrad.FloatTensor"``). With a dtype, a legacy
    type (``anygrad.LongTensor``, ``anygrad.cuda.FloatTensor``) or such a name
    (``"torch.cuda.FloatTensor"``): a copy of that dtype, on the GPU for the ``cuda`` types and
    on the CPU for the others (the tensor itself when nothing changes)."""
    if dtype is None:
        return _native_type(self)
    resolved = _tensor_types.resolve(dtype)
    if resolved is None:
        return _native_type(self, dtype)
    target_dtype, device = resolved
    on_gpu = self.device.type != "cpu"
    if target_dtype == self.dtype and on_gpu == (device != "cpu"):
        return self
    return _native_to(self, device=device if on_gpu != (device != "cpu") else None, dtype=target_dtype)


def __format__(self, format_spec):
    """A 0-d tensor formats as its number (``f"{loss:.3f}"``, ``"{}".format(t)``); any other
    tensor as ``str(tensor)`` with an empty spec, and a spec is a ``TypeError`` (PyTorch's
    rules)."""
    if self.dim() == 0:
        return self.item().__format__(format_spec)
    if format_spec:
        raise TypeError(f"unsupported format string passed to Tensor.__format__: {format_spec!r} (the tensor has {self.numel()} elements)")
    return str(self)


for _name, _function in (
    ("topk", topk), ("sort", sort), ("argsort", argsort), ("roll", roll), ("to", to),
    ("contiguous", contiguous), ("is_contiguous", is_contiguous), ("type", tensor_type),
    ("__format__", __format__),
):
    setattr(_Tensor, _name, _function)
del _name, _function
