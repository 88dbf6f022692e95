"""``nn.init``: in-place initialisers of parameters, with PyTorch's formulas (gains, fans,
Kaiming and Xavier)."""

import math

from .. import no_grad


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity``."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """``(fan_in, fan_out)`` of a weight: ``[out, in, *kernel]``."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for size in tuple(tensor.shape)[2:]:
        receptive *= size
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"mode {mode} not supported, please use one of fan_in, fan_out")


def uniform_(tensor, a=0.0, b=1.0):
    """Uniform samples in [a, b)."""
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0):
    """Normal samples."""
    with no_grad():
        return tensor.normal_(mean, std)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Samples of the normal distribution ``N(mean, std²)`` truncated to ``[a, b]``: drawn,
    and the samples outside redrawn until every one lies inside (a rare bound far in a tail
    ends, after 64 rounds, with the few left clamped)."""
    import anygrad

    with no_grad(), anygrad.drawing_from(generator):
        tensor.normal_(mean, std)
        for _ in range(64):
            outside = (tensor < a) | (tensor > b)
            if not bool(outside.any()):
                break
            fresh = anygrad.randn(*tensor.shape, dtype=tensor.dtype, device=tensor.device) * std + mean
            tensor.copy_(anygrad.where(outside, fresh, tensor))
        return tensor.clamp_(a, b)


def constant_(tensor, val):
    """``val`` everywhere."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor):
    """The identity matrix."""
    import anygrad

    with no_grad():
        rows, cols = tensor.shape
        return tensor.copy_(anygrad.eye(rows, cols, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor, gain=1.0):
    """Glorot uniform: bound ``gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    """Glorot normal: std ``gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """He uniform: bound ``gain * sqrt(3 / fan)``."""
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """He normal: std ``gain / sqrt(fan)``."""
    gain = calculate_gain(nonlinearity, a)
    return normal_(tensor, 0.0, gain / math.sqrt(_fan(tensor, mode)))


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, as PyTorch's: standard normal samples (from anygrad's
    generator) reshaped to ``[rows, numel / rows]``, their QR decomposition's ``Q`` with the
    signs of ``R``'s diagonal, times ``gain`` (the QR is computed by numpy, in float64)."""
    import numpy as np
    import anygrad

    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with anygrad.drawing_from(generator):
        flattened = anygrad.randn(rows, cols, dtype=anygrad.float32).numpy().astype(np.float64)
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = anygrad.tensor(q.reshape(tuple(tensor.shape)) * gain, dtype=tensor.dtype, device=tensor.device)
    with no_grad():
        return tensor.copy_(values)
