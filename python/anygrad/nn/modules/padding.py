"""Padding layers: ``ZeroPad1d/2d/3d``, ``ConstantPad1d/2d/3d``, ``ReflectionPad1d/2d/3d``,
``ReplicationPad1d/2d/3d`` and ``CircularPad1d/2d/3d``, each ``F.pad`` in one mode as a module.
``padding`` is an int (the same amount on every side) or a tuple (left, right[, top, bottom[,
front, back]])."""

from .module import Module
from .. import functional as F


class _PadNd(Module):
    """``F.pad`` of the last ``_dims`` dims in ``_mode``."""

    _dims = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * (2 * self._dims)
        padding = tuple(padding)
        if len(padding) != 2 * self._dims:
            raise ValueError(f"{type(self).__name__}: expected an int or {2 * self._dims} amounts, got {padding}")
        self.padding = padding
        self.value = value

    def forward(self, input):
        """The padded input."""
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with ``value``."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dims with ``value``."""

    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last dim with zeros."""

    _dims = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads the last two dims with zeros."""

    _dims = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last three dims with zeros."""

    _dims = 3


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its mirror image (the edge not repeated)."""

    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two dims with their mirror image (the edge not repeated)."""

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last three dims with their mirror image (the edge not repeated)."""

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two dims by repeating their edge values."""

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last three dims by repeating their edge values."""

    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pads the last dim by wrapping around."""

    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pads the last two dims by wrapping around."""

    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Pads the last three dims by wrapping around."""

    _dims, _mode = 3, "circular"
