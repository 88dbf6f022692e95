"""``Conv2d`` (and ``Conv1d`` over a height of one), ``Conv3d`` (a composite of 2-D
convolutions), ``ConvTranspose2d``, ``ConvTranspose1d`` (over a height of one) and
``ConvTranspose3d`` (a composite of 2-D transposed convolutions), initialised as PyTorch
does."""

import math

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init


def _reset_convolution(module):
    """PyTorch's initialisation of a convolution: Kaiming-uniform weight (a = sqrt(5)), bias
    uniform within 1/sqrt(fan_in) of the weight's layout."""
    init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(module.weight)
        if fan_in != 0:
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(module.bias, -bound, bound)


def _tuple(value, count):
    """``value`` as a ``count``-tuple (a number repeated, a sequence as it is)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * count


class _ConvNd(Module):
    """What ``Conv2d`` and ``Conv3d`` share (PyTorch's ``_ConvNd``): the arguments checked and
    kept as ``_dims``-tuples, the weight ``[out, in / groups, *kernel_size]`` and bias,
    PyTorch's initialisation and ``repr``. Subclasses set ``_dims`` and ``_convolution`` (the
    functional form) and may resolve string paddings (``_padding``)."""

    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype):
        super().__init__()
        import anygrad

        name = type(self).__name__
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} is not supported (zeros only)")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, self._dims)
        self.stride = _tuple(stride, self._dims)
        self.dilation = _tuple(dilation, self._dims)
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.padding = self._padding(padding)
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = Parameter(anygrad.empty(out_channels, in_channels // groups, *self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(anygrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _padding(self, padding):
        """``padding`` as kept: a string (``"same"``, ``"valid"``) as given, else a tuple."""
        return padding if isinstance(padding, str) else _tuple(padding, self._dims)

    def reset_parameters(self):
        """PyTorch's default initialisation."""
        _reset_convolution(self)

    def forward(self, input):
        """The convolution."""
        return type(self)._convolution(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv2d(_ConvNd):
    """2-D convolution with weight ``[out, in / groups, kh, kw]``."""

    _dims = 2
    _convolution = staticmethod(F.conv2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype)

    def _padding(self, padding):
        """``"same"`` and ``"valid"`` resolved to numbers (the native convolution takes those)."""
        if padding == "same":
            return tuple(d * (k - 1) // 2 for d, k in zip(self.dilation, self.kernel_size))
        if padding == "valid":
            return (0, 0)
        return _tuple(padding, 2)


class Conv1d(Module):
    """1-D convolution (run as a 2-D one over a height of one), weight ``[out, in / groups, k]``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation, self.groups = kernel_size, stride, padding, dilation, groups
        self.weight = Parameter(anygrad.empty(out_channels, in_channels // groups, kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(anygrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt((in_channels // groups) * kernel_size)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """The convolution."""
        out = F.conv2d(input.unsqueeze(2), self.weight.unsqueeze(2), self.bias, (1, self.stride), (0, self.padding), (1, self.dilation), self.groups)
        return out.squeeze(2)


class Conv3d(_ConvNd):
    """3-D convolution of ``[N, C_in, D, H, W]`` with weight ``[out, in / groups, kD, kH, kW]``
    (``nn.functional.conv3d``: 2-D convolutions summed over the kernel's depth taps)."""

    _dims = 3
    _convolution = staticmethod(F.conv3d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype)


class _ConvTransposeNd(Module):
    """What the transposed convolutions share: the arguments kept as ``_dims``-tuples, the
    weight ``[in, out / groups, *kernel_size]`` and bias with PyTorch's initialisation (the
    fan-in of the weight's layout), ``forward(input, output_size=None)`` picking the
    ``output_padding`` that gives ``output_size``, and ``repr``. Subclasses set ``_dims`` and
    ``_convolution`` (the functional form)."""

    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        import anygrad

        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}, got {padding_mode!r}')
        dims = self._dims
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, dims), _tuple(stride, dims)
        self.padding, self.output_padding = _tuple(padding, dims), _tuple(output_padding, dims)
        self.dilation, self.groups, self.padding_mode = _tuple(dilation, dims), groups, padding_mode
        self.weight = Parameter(anygrad.empty(in_channels, out_channels // groups, *self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(anygrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (the fan-in of the weight's layout)."""
        _reset_convolution(self)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        dims = self._dims
        wanted = [int(size) for size in list(output_size)[-dims:]]
        padding = []
        for d in range(dims):
            smallest = (input.shape[d - dims] - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            extra = wanted[d] - smallest
            if not 0 <= extra < max(self.stride[d], self.dilation[d]):
                raise ValueError(
                    f"requested an output size of {list(output_size)}, but valid sizes range from "
                    f"{smallest} to {smallest + max(self.stride[d], self.dilation[d]) - 1} in dim {d}"
                )
            padding.append(extra)
        return tuple(padding)

    def forward(self, input, output_size=None):
        """The transposed convolution."""
        output_padding = self._output_padding(input, output_size)
        return type(self)._convolution(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups, self.dilation)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        zeros = (0,) * self._dims
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != zeros:
            text += f", padding={self.padding}"
        if self.output_padding != zeros:
            text += f", output_padding={self.output_padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution of ``[N, C_in, L]``, weight ``[in, out / groups, k]``
    (``nn.functional.conv_transpose1d``)."""

    _dims = 1
    _convolution = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (the gradient of a convolution with respect to its input),
    weight ``[in, out / groups, kh, kw]``."""

    _dims = 2
    _convolution = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution of ``[N, C_in, D, H, W]``, weight
    ``[in, out / groups, kD, kH, kW]`` (``nn.functional.conv_transpose3d``: 2-D transposed
    convolutions, one per kernel depth tap)."""

    _dims = 3
    _convolution = staticmethod(F.conv_transpose3d)
