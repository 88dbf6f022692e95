"""Activation layers: ``ReLU``, ``GELU``, ``SiLU``, ``Tanh``, ``Sigmoid``, ``Softmax``,
``LogSoftmax``, ``Softmax2d``, ``Softmin``, ``LeakyReLU``, ``PReLU``, ``RReLU``, ``ELU``,
``SELU``, ``CELU``, ``GLU``, ``ReLU6``, ``Hardswish``, ``Softplus``, ``Mish``, ``LogSigmoid``,
``Softsign``, ``Tanhshrink``, ``Threshold``, ``Hardshrink``, ``Softshrink``."""

from .module import Module
from ..parameter import Parameter
from .. import functional as F


class _Elementwise(Module):
    """An activation without parameters."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return "inplace=True" if self.inplace else ""


class ReLU(_Elementwise):
    """max(x, 0)."""

    def forward(self, input):
        """max(x, 0)."""
        return F.relu(input)


class ReLU6(_Elementwise):
    """min(max(x, 0), 6)."""

    def forward(self, input):
        """min(max(x, 0), 6)."""
        return F.relu6(input)


class SiLU(_Elementwise):
    """x * sigmoid(x)."""

    def forward(self, input):
        """x * sigmoid(x)."""
        return F.silu(input)


class Hardswish(_Elementwise):
    """x * relu6(x + 3) / 6."""

    def forward(self, input):
        """x * relu6(x + 3) / 6."""
        return F.hardswish(input)


class Hardsigmoid(_Elementwise):
    """relu6(x + 3) / 6."""

    def forward(self, input):
        """relu6(x + 3) / 6."""
        return F.hardsigmoid(input)


class Mish(_Elementwise):
    """x * tanh(softplus(x))."""

    def forward(self, input):
        """x * tanh(softplus(x))."""
        return F.mish(input)


class GELU(Module):
    """Gaussian error linear unit (``approximate="tanh"`` for the tanh formula)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """GELU."""
        return F.gelu(input, self.approximate)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, input):
        """tanh(x)."""
        return input.tanh()


class Sigmoid(Module):
    """The logistic function."""

    def forward(self, input):
        """sigmoid(x)."""
        return input.sigmoid()


class LeakyReLU(Module):
    """x where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input):
        """Leaky ReLU."""
        return F.leaky_relu(input, self.negative_slope)


class ELU(Module):
    """x where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, input):
        """ELU."""
        return F.elu(input, self.alpha)


class Softplus(Module):
    """log(1 + exp(beta x)) / beta."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        """Softplus."""
        return F.softplus(input, self.beta, self.threshold)


class Hardtanh(Module):
    """Clamp to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input):
        """Clamp."""
        return F.hardtanh(input, self.min_val, self.max_val)


class Softmax(Module):
    """Softmax along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """Softmax."""
        return F.softmax(input, self.dim)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Log-softmax along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """Log-softmax."""
        return F.log_softmax(input, self.dim)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels at each spatial position (``[N, C, H, W]`` or
    ``[C, H, W]``: dim -3)."""

    def forward(self, input):
        """Softmax over dim -3."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class PReLU(Module):
    """``max(0, x) + a · min(0, x)`` with a learned slope ``a``: one shared
    (``num_parameters=1``) or one per channel, each starting at ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(anygrad.full((num_parameters,), init, device=device, dtype=dtype))

    def reset_parameters(self):
        """Every slope back to ``init``."""
        from .. import init as initialisers

        initialisers.constant_(self.weight, self.init)

    def forward(self, input):
        """PReLU."""
        return F.prelu(input, self.weight)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"num_parameters={self.num_parameters}"


class SELU(_Elementwise):
    """``scale * elu(x, alpha)`` (the self-normalising constants)."""

    def forward(self, input):
        """SELU."""
        return F.selu(input)


class CELU(Module):
    """x where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, input):
        """CELU."""
        return F.celu(input, self.alpha)


class GLU(Module):
    """The first half of ``dim`` times the sigmoid of the second."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """GLU."""
        return F.glu(input, self.dim)


class LogSigmoid(Module):
    """log(sigmoid(x)), stably."""

    def forward(self, input):
        """log(sigmoid(x))."""
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        """x / (1 + |x|)."""
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        """x - tanh(x)."""
        return F.tanhshrink(input)


class Softmin(Module):
    """Softmax of -x along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """Softmin."""
        return F.softmin(input, self.dim)


class Threshold(Module):
    """x where ``x > threshold``, ``value`` elsewhere."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, input):
        """Thresholding."""
        return F.threshold(input, self.threshold, self.value)


class Hardshrink(Module):
    """x where ``|x| > lambd``, 0 elsewhere."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Hard shrinkage."""
        return F.hardshrink(input, self.lambd)


class Softshrink(Module):
    """x moved ``lambd`` towards 0, 0 within ``lambd`` of it."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Soft shrinkage."""
        return F.softshrink(input, self.lambd)


class RReLU(Module):
    """Leaky ReLU with a random slope in ``[lower, upper]`` in training, their mean in
    evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper = lower, upper

    def forward(self, input):
        """Randomized leaky ReLU."""
        return F.rrelu(input, self.lower, self.upper, self.training)
