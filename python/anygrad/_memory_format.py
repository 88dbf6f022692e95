"""Memory formats (``torch.memory_format``): ``contiguous_format``, ``channels_last``,
``channels_last_3d`` and ``preserve_format``.

anygrad chooses its layouts itself: tensors are dense in row-major order as their shape reads
(``[N, C, H, W]`` stays NCHW), and the GPU convolutions reorder to channels-last internally
where that is faster. So ``Tensor.to(memory_format=)``, ``Tensor.contiguous(memory_format=)``
and ``Module.to(memory_format=)`` accept these values and return the same values as without
them; ``Tensor.is_contiguous(memory_format=)`` answers for the row-major layout anygrad keeps.
"""


class memory_format:
    """A memory format (``torch.memory_format``); compare with ``==`` or ``is``."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"anygrad.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

_FORMATS = (contiguous_format, channels_last, channels_last_3d, preserve_format)


def check(op, value):
    """``value`` when it is a memory format (or None); a ``TypeError`` naming ``op``
    otherwise."""
    if value is not None and not any(value is known for known in _FORMATS):
        raise TypeError(
            f"{op}: memory_format must be one of anygrad.contiguous_format, channels_last, "
            f"channels_last_3d or preserve_format, got {value!r}"
        )
    return value
