"""``Linear``, ``Bilinear`` and ``Identity``, initialised as PyTorch does (``Linear``:
Kaiming-uniform weights with a=sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and biases
from the same bound; ``Bilinear``: weights and biases from U(-1/sqrt(in1_features),
1/sqrt(in1_features)))."""

import math

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        """The input itself."""
        return input


class Linear(Module):
    """``y = x Wᵀ + b`` with ``W`` of shape ``[out_features, in_features]``."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(anygrad.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(anygrad.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``input @ weight.T + bias``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y_k = x1ᵀ W_k x2 + b_k`` with ``W`` of shape ``[out_features, in1_features,
    in2_features]``."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(anygrad.empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(anygrad.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's initialisation: U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """The bilinear form of the two inputs."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
