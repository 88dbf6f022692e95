"""Pooling layers: ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``,
``AdaptiveMaxPool2d``, ``MaxUnpool2d`` and their 1-D and 3-D forms."""

from .module import Module
from .. import functional as F


class MaxPool2d(Module):
    """2-D max pooling (``stride`` defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, input):
        """Max pooling."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool2d(Module):
    """2-D average pooling (``stride`` defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, input):
        """Average pooling."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        """Adaptive average pooling."""
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"output_size={self.output_size}"


class MaxPool1d(Module):
    """1-D max pooling (``stride`` defaults to the kernel size); with ``return_indices`` the
    forward returns ``(values, indices)`` for ``MaxUnpool1d``."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, input):
        """Max pooling."""
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class MaxUnpool2d(Module):
    """The partial inverse of ``MaxPool2d``: ``forward(input, indices, output_size=None)`` puts
    each value at the in-plane position ``MaxPool2d(return_indices=True)`` gave, zeros
    elsewhere (``stride`` defaults to the kernel size)."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding

    def forward(self, input, indices, output_size=None):
        """Max unpooling."""
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(MaxUnpool2d):
    """The partial inverse of ``MaxPool1d``: ``forward(input, indices, output_size=None)``."""

    def forward(self, input, indices, output_size=None):
        """Max unpooling."""
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class AvgPool1d(Module):
    """1-D average pooling."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, input):
        """Average pooling."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool1d(Module):
    """Average pooling to a fixed length."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        """Adaptive average pooling."""
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed output size (an int, a pair, None in a pair keeping that
    size), with PyTorch's windows."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        """Adaptive max pooling."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max pooling to a fixed length, with PyTorch's windows."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        """Adaptive max pooling."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"output_size={self.output_size}"


class MaxPool3d(MaxPool2d):
    """3-D max pooling of ``[N, C, D, H, W]`` (``stride`` defaults to the kernel size); with
    ``return_indices`` the forward returns ``(values, indices)`` for ``MaxUnpool3d``."""

    def forward(self, input):
        """Max pooling."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    """3-D average pooling of ``[N, C, D, H, W]`` (``stride`` defaults to the kernel size)."""

    def forward(self, input):
        """Average pooling."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Average pooling of ``[N, C, D, H, W]`` to a fixed output size."""

    def forward(self, input):
        """Adaptive average pooling."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """Max pooling of ``[N, C, D, H, W]`` to a fixed output size, with PyTorch's windows."""

    def forward(self, input):
        """Adaptive max pooling."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class MaxUnpool3d(MaxUnpool2d):
    """The partial inverse of ``MaxPool3d``: ``forward(input, indices, output_size=None)``."""

    def forward(self, input, indices, output_size=None):
        """Max unpooling."""
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)
