"""``nn.functional``: activations, convolution, pooling, resampling, normalization, dropout,
embedding and losses as functions, with PyTorch's names, arguments and reductions."""

import math

from .. import _native

conv2d = _native.conv2d
conv_transpose2d = _native.conv_transpose2d
linear = _native.linear
layer_norm = _native.layer_norm
rms_norm = _native.rms_norm
embedding_native = _native.embedding


def _reduce(loss, reduction, op):
    """Apply ``reduction`` ("mean", "sum" or "none") to elementwise losses."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


# Activations ---------------------------------------------------------------------------------


def relu(input, inplace=False):
    """max(x, 0) (``inplace`` is accepted; the result is a new tensor, which keeps autograd
    right)."""
    return input.relu()


def relu6(input, inplace=False):
    """min(max(x, 0), 6)."""
    return input.clamp(0.0, 6.0)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where positive, ``negative_slope * x`` elsewhere."""
    return input.relu() - (-input).relu() * negative_slope


def elu(input, alpha=1.0, inplace=False):
    """x where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return input.relu() + ((input.clamp(max=0.0)).exp() - 1) * alpha


def gelu(input, approximate="none"):
    """Gaussian error linear unit."""
    return input.gelu(approximate)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    return input.silu()


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return input * softplus(input).tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val]."""
    return input.clamp(min_val, max_val)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return (input + 3).clamp(0.0, 6.0) / 6


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return input * hardsigmoid(input)


def sigmoid(input):
    """The logistic function."""
    return input.sigmoid()


def tanh(input):
    """Hyperbolic tangent."""
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    return input.softplus(beta, threshold)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax along ``dim``."""
    return input.softmax(-1 if dim is None else dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Log-softmax along ``dim``."""
    return input.log_softmax(-1 if dim is None else dim, dtype)


def softmin(input, dim=None, dtype=None):
    """Softmax of -x."""
    return (-input).softmax(-1 if dim is None else dim, dtype)


def logsigmoid(input):
    """log(sigmoid(x)), stably."""
    return -softplus(-input)


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    return elu(input, 1.6732632423543772) * 1.0507009873554805


def celu(input, alpha=1.0, inplace=False):
    """x where positive, ``alpha * (exp(x / alpha) - 1)`` elsewhere."""
    return input.relu() + ((input / alpha).clamp(max=0.0).exp() - 1) * alpha


def glu(input, dim=-1):
    """The gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    if input.shape[dim] % 2:
        raise RuntimeError(f"glu: halving dimension must be even, but dimension {dim} is size {input.shape[dim]}")
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    """x where ``x > threshold``, ``value`` elsewhere."""
    import anygrad

    return anygrad.where(input > threshold, input, value)


def hardshrink(input, lambd=0.5):
    """x where ``|x| > lambd``, 0 elsewhere."""
    import anygrad

    return anygrad.where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """x - lambd above ``lambd``, x + lambd below ``-lambd``, 0 between."""
    return (input - lambd).relu() - (-input - lambd).relu()


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from ``U(lower, upper)`` per element in
    training and is ``(lower + upper) / 2`` in evaluation."""
    import anygrad

    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    slopes = anygrad.rand_like(input) * (upper - lower) + lower
    return anygrad.where(input >= 0, input, input * slopes)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with
    Gumbel noise ``g``; with ``hard`` the one-hot of the largest, with the soft sample's
    gradient (the straight-through estimator)."""
    import anygrad

    uniform = anygrad.rand_like(logits).clamp(min=1e-20)
    gumbels = -(-uniform.log()).log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.detach().argmax(dim, keepdim=True)
    hard_sample = anygrad.zeros_like(soft).scatter(dim, index, 1.0)
    return hard_sample - soft.detach() + soft


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``input`` divided by its p-norm along ``dim``."""
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    dot = (x1 * x2).sum(dim)
    return dot / (x1.norm(2, dim) * x2.norm(2, dim)).clamp(min=eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` along the last dim."""
    return (x1 - x2 + eps).norm(p, -1, keepdim)


def one_hot(tensor, num_classes=-1):
    """One-hot rows (int64)."""
    return tensor._one_hot(num_classes)


# Layers --------------------------------------------------------------------------------------


def _ceil_extra(size, kernel, stride, padding, dilation):
    """The rows (or columns) ``ceil_mode`` adds after the input: PyTorch's rounded-up output
    count, less one where the last window would start in the right padding."""
    span = dilation * (kernel - 1) + 1
    count = -(-(size + 2 * padding - span) // stride) + 1
    if (count - 1) * stride >= size + padding:
        count -= 1
    return max((count - 1) * stride + span - (size + 2 * padding), 0)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling of ``[N, C, H, W]`` (or ``[C, H, W]``); ``ceil_mode`` keeps the partial
    windows at the bottom and right edges (the input is extended with ``-inf`` there, which
    never wins); a ``dilation`` other than 1 is a composite over the kernel's taps. With
    ``return_indices=True`` it returns ``(values, indices)``: ``indices``
    (int64, the shape of ``values``) holds each maximum's flat position ``h * W + w`` within its
    input plane, the first in the window's row-major order on ties, as PyTorch's; it is what
    ``max_unpool2d`` takes. Gradients flow through the values."""
    dilated = (tuple(dilation) if isinstance(dilation, (tuple, list)) else (dilation, dilation)) != (1, 1)
    if return_indices or dilated:
        # Without dilation the native pooling gives the values; the taps give only the indices.
        values, indices = _max_pool2d_taps(input if dilated else input.detach(), kernel_size, stride, padding, dilation, ceil_mode)
        if not dilated:
            values = max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, False)
        return (values, indices) if return_indices else values
    if ceil_mode:
        def pair(value):
            return tuple(value) if isinstance(value, (tuple, list)) else (value, value)

        k, d, p = pair(kernel_size), pair(dilation), pair(padding)
        s = pair(stride) if stride is not None and stride != [] else k
        extra_h = _ceil_extra(input.shape[-2], k[0], s[0], p[0], d[0])
        extra_w = _ceil_extra(input.shape[-1], k[1], s[1], p[1], d[1])
        if extra_h or extra_w:
            input = pad(input, (0, extra_w, 0, extra_h), value=float("-inf"))
        return _native.max_pool2d(input, k, s, p, d, False)
    return _native.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """2-D average pooling; with ``ceil_mode`` or ``divisor_override`` written as window sums
    over the zero-padded input divided by each window's count (PyTorch's: with
    ``count_include_pad`` the window clipped to the padded input, else to the input)."""
    if not ceil_mode and divisor_override is None:
        return _native.avg_pool2d(input, kernel_size, stride, padding, False, count_include_pad)
    import anygrad

    def pair(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value, value)

    k, p = pair(kernel_size), pair(padding)
    s = pair(stride) if stride is not None and stride != [] else k
    height, width = input.shape[-2], input.shape[-1]
    extra_h = _ceil_extra(height, k[0], s[0], p[0], 1) if ceil_mode else 0
    extra_w = _ceil_extra(width, k[1], s[1], p[1], 1) if ceil_mode else 0
    padded = pad(input, (p[1], p[1] + extra_w, p[0], p[0] + extra_h))
    sums = _native.avg_pool2d(padded, k, s, 0, False, True) * (k[0] * k[1])
    if divisor_override is not None:
        return sums / divisor_override
    if count_include_pad:
        ones = anygrad.ones(1, 1, height + 2 * p[0], width + 2 * p[1], dtype=input.dtype, device=input.device)
        counted = pad(ones, (0, extra_w, 0, extra_h))
    else:
        ones = anygrad.ones(1, 1, height, width, dtype=input.dtype, device=input.device)
        counted = pad(ones, (p[1], p[1] + extra_w, p[0], p[0] + extra_h))
    counts = _native.avg_pool2d(counted, k, s, 0, False, True) * (k[0] * k[1])
    return sums / counts


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to ``output_size``."""
    return _native.adaptive_avg_pool2d(input, output_size)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling of ``[N, C, L]`` (or ``[C, L]``), as 2-D pooling over a height of one;
    with ``return_indices=True`` it returns ``(values, indices)``, the indices being positions
    along ``L`` (what ``max_unpool1d`` takes)."""
    kernel_size, stride, padding, dilation = (_single(v) for v in (kernel_size, kernel_size if stride is None or stride == [] else stride, padding, dilation))
    out = max_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), (1, dilation), ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def _single(value):
    """An int from an int or a one-element tuple or list."""
    return value[0] if isinstance(value, (tuple, list)) else value


def _max_pool2d_taps(input, kernel_size, stride, padding, dilation, ceil_mode):
    """``_max_pool_taps`` over the last two dims."""
    return _max_pool_taps(input, kernel_size, stride, padding, dilation, ceil_mode, 2)


def _max_pool_taps(input, kernel_size, stride, padding, dilation, ceil_mode, dims):
    """Max pooling's values and the flat positions of the maxima within each plane (or
    volume) over the last ``dims`` dims: every kernel tap's strided view of the
    ``-inf``-padded input is stacked, ``argmax`` over the taps (the first on ties, in the
    window's row-major order) picks one, which gives the value (gradients flow to it) and, from
    the same views of a grid of positions, its index."""
    import itertools
    import numpy as np
    import anygrad

    def tup(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims

    k, d, p = tup(kernel_size), tup(dilation), tup(padding)
    s = tup(stride) if stride is not None and stride != [] else k
    spatial = tuple(input.shape[input.dim() - dims:])
    extras = [_ceil_extra(spatial[i], k[i], s[i], p[i], d[i]) if ceil_mode else 0 for i in range(dims)]
    widths = []
    for i in reversed(range(dims)):
        widths += [p[i], p[i] + extras[i]]
    padded = pad(input, tuple(widths), value=float("-inf"))
    grid = np.arange(int(np.prod(spatial)), dtype=np.int64).reshape(spatial)
    grid = np.pad(grid, [(p[i], p[i] + extras[i]) for i in range(dims)], constant_values=-1)
    positions = anygrad.tensor(grid, device=input.device)
    outs = [(padded.shape[padded.dim() - dims + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(dims)]
    value_taps, position_taps = [], []
    for tap in itertools.product(*(range(size) for size in k)):
        window = tuple(slice(tap[i] * d[i], tap[i] * d[i] + (outs[i] - 1) * s[i] + 1, s[i]) for i in range(dims))
        value_taps.append(padded[(Ellipsis,) + window])
        position_taps.append(positions[window])
    values = anygrad.stack(value_taps, -1)
    choice = values.detach().argmax(-1, keepdim=True)
    candidates = anygrad.stack(position_taps, -1).expand(*values.shape).contiguous()
    return values.gather(-1, choice).squeeze(-1), candidates.gather(-1, choice).squeeze(-1)


def _unpool_sizes(op, input, kernel_size, stride, padding, output_size, dims):
    """The output's trailing sizes of a max unpooling: ``output_size`` (its last ``dims``
    entries) or ``(in - 1) * stride - 2 * padding + kernel``."""
    def tup(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims

    k, p = tup(kernel_size), tup(padding)
    s = tup(stride) if stride is not None and stride != [] else k
    default = tuple((input.shape[input.dim() - dims + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(dims))
    if output_size is None:
        return default
    sizes = tuple(int(v) for v in output_size)[-dims:]
    if len(sizes) != dims:
        raise ValueError(f"{op}: output_size must have {dims} or {input.dim()} elements, got {list(output_size)}")
    for i in range(dims):
        low, high = default[i] - s[i], default[i] + s[i]
        if not low < sizes[i] < high:
            raise ValueError(f"{op}: invalid output_size {list(output_size)} (dim {i} must be between {low + 1} and {high - 1})")
    return sizes


def _max_unpool(op, input, indices, sizes, dims):
    """Scatter ``input``'s values to their ``indices`` in zero planes of ``sizes`` (flat
    positions within each plane); gradients flow to the values."""
    import anygrad

    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: expected indices of the input's shape {list(input.shape)}, got {list(indices.shape)}")
    lead = tuple(input.shape[: input.dim() - dims])
    planes = 1
    for size in lead:
        planes *= size
    plane_size = 1
    for size in sizes:
        plane_size *= size
    per_plane = input.numel() // max(planes, 1)
    values = input.reshape(planes, per_plane)
    where = indices.reshape(planes, per_plane).to(anygrad.int64)
    rows = anygrad.arange(planes, device=input.device).reshape(planes, 1).expand(planes, per_plane).contiguous()
    out = anygrad.zeros(planes, plane_size, dtype=input.dtype, device=input.device)
    out = out.index_put((rows.reshape(-1), where.reshape(-1)), values.reshape(-1))
    return out.reshape(*lead, *sizes)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each value of ``input`` (``[N, C, H, W]`` or
    ``[C, H, W]``) goes to the flat position ``indices`` gives within its output plane, every
    other element is zero. The output's size is ``output_size`` (its last two entries) or
    ``(H - 1) * stride - 2 * padding + kernel_size`` per dim."""
    if input.dim() not in (3, 4):
        raise ValueError(f"max_unpool2d: expected a 3-D or 4-D input, got {input.dim()}-D")
    sizes = _unpool_sizes("max_unpool2d", input, kernel_size, stride, padding, output_size, 2)
    return _max_unpool("max_unpool2d", input, indices, sizes, 2)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each value of ``input`` (``[N, C, L]`` or
    ``[C, L]``) goes to the position ``indices`` gives, every other element is zero; the length
    is ``output_size`` (its last entry) or ``(L - 1) * stride - 2 * padding + kernel_size``."""
    if input.dim() not in (2, 3):
        raise ValueError(f"max_unpool1d: expected a 2-D or 3-D input, got {input.dim()}-D")
    sizes = _unpool_sizes("max_unpool1d", input, kernel_size, stride, padding, output_size, 1)
    return _max_unpool("max_unpool1d", input, indices, sizes, 1)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling."""
    stride = kernel_size if stride is None else stride
    out = _native.avg_pool2d(input.unsqueeze(-2), (1, kernel_size), (1, stride), (0, padding), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to ``output_size`` along the last dim."""
    return _native.adaptive_avg_pool2d(input.unsqueeze(-2), (1, output_size)).squeeze(-2)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability ``p``, scale the rest by 1/(1-p) (in training)."""
    return _native.dropout(input, p, training)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels with probability ``p`` (in training)."""
    return _native.dropout2d(input, p, training)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalization over dim 1."""
    return _native.batch_norm(input, running_mean, running_var, weight, bias, training, 0.1 if momentum is None else momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization over groups of channels."""
    n, c = input.shape[0], input.shape[1]
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, unbiased=False, keepdim=True)
    out = ((grouped - mean) / (var + eps).sqrt()).reshape(*input.shape)
    shape = [1, c] + [1] * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(*shape)
    if bias is not None:
        out = out + bias.reshape(*shape)
    return out


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``input``'s indices."""
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm is not supported")
    return _native.embedding(input, weight, padding_idx)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The ``mode`` (``"sum"``, ``"mean"`` or ``"max"``) of the rows of ``weight`` looked up by
    each bag of ``input``: the rows of a 2-D ``input``, or the runs of a 1-D ``input`` starting
    at ``offsets`` (with ``include_last_offset`` the last offset ends the last bag). Indices equal
    to ``padding_idx`` are left out; ``per_sample_weights`` scale the rows (``"sum"`` only); an
    empty bag gives zeros. Gradients flow to ``weight`` (and the sample weights)."""
    import anygrad

    if max_norm is not None:
        raise NotImplementedError("embedding_bag: max_norm is not supported")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}')")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None")
        bags, length = input.shape
        starts = [bag * length for bag in range(bags)]
        flat = input.reshape(-1)
        weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
        starts = [int(v) for v in (offsets.tolist() if hasattr(offsets, "tolist") else offsets)]
        if include_last_offset:
            starts = starts[:-1]
        bags, flat, weights = len(starts), input, per_sample_weights
    else:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    total = flat.shape[0]
    ends = starts[1:] + [total]
    bag_of = [bag for bag, (start, end) in enumerate(zip(starts, ends)) for _ in range(max(end - start, 0))]
    dim = weight.shape[1]
    if total == 0:
        return anygrad.zeros(bags, dim, dtype=weight.dtype, device=weight.device)
    rows = _native.embedding(flat, weight, None)
    keep = (flat != padding_idx).to(weight.dtype) if padding_idx is not None else None
    bag_index = anygrad.tensor(bag_of, dtype=anygrad.int64, device=weight.device)
    if mode == "max":
        longest = max(end - start for start, end in zip(starts, ends))
        slots = anygrad.tensor([bag * longest + position - starts[bag] for position, bag in enumerate(bag_of)], dtype=anygrad.int64, device=weight.device)
        if keep is not None:
            rows = anygrad.where(keep.unsqueeze(1) > 0, rows, float("-inf"))
        grid = anygrad.full((bags * longest, dim), float("-inf"), dtype=weight.dtype, device=weight.device)
        pooled = grid.index_put((slots,), rows).reshape(bags, longest, dim).amax(1)
        return anygrad.where(pooled == float("-inf"), 0.0, pooled)
    if weights is not None:
        rows = rows * weights.to(weight.dtype).unsqueeze(1)
    if keep is not None:
        rows = rows * keep.unsqueeze(1)
    sums = anygrad.zeros(bags, dim, dtype=weight.dtype, device=weight.device).index_add(0, bag_index, rows)
    if mode == "sum":
        return sums
    counted = keep if keep is not None else anygrad.ones(total, dtype=weight.dtype, device=weight.device)
    counts = anygrad.zeros(bags, dtype=weight.dtype, device=weight.device).index_add(0, bag_index, counted)
    return sums / counts.clamp(min=1.0).unsqueeze(1)


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad`` is (left, right[, top, bottom, ...])
    from the last dim; negative amounts crop. ``mode`` "constant" fills with ``value`` (0 when
    None); "reflect" mirrors the input without repeating its edge, "replicate" repeats the
    edge, "circular" wraps around (each amount below the dim's size; at most it for
    "circular"). The non-constant modes pick input elements with ``index_select``, so gradients
    flow back to them."""
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise ValueError(f"pad: padding length {len(pad)} must be even and at most twice the input's {input.dim()} dims")
    if mode in ("reflect", "replicate", "circular"):
        return _pad_indexed(input, tuple(int(amount) for amount in pad), mode)
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (constant, reflect, replicate, circular)")
    value = 0.0 if value is None else value
    import anygrad

    out = input
    for index in range(len(pad) // 2):
        dim = out.dim() - 1 - index
        before, after = pad[2 * index], pad[2 * index + 1]
        parts = []
        shape = list(out.shape)
        if before > 0:
            shape[dim] = before
            parts.append(anygrad.full(tuple(shape), value, dtype=out.dtype, device=out.device))
        parts.append(out if before >= 0 else out.narrow(dim, -before, out.shape[dim] + before))
        if after > 0:
            shape[dim] = after
            parts.append(anygrad.full(tuple(shape), value, dtype=out.dtype, device=out.device))
        elif after < 0:
            parts[-1] = parts[-1].narrow(dim, 0, parts[-1].shape[dim] + after)
        out = anygrad.cat(parts, dim) if len(parts) > 1 else parts[0]
    return out


def flatten(input, start_dim=0, end_dim=-1):
    """Dims merged into one."""
    return input.flatten(start_dim, end_dim)


def _antialias_weights(in_size, out_size, scale):
    """The ``[out_size, in_size]`` matrix of antialiased bilinear resampling along one axis (a
    triangle filter widened by the downscale factor, each row summing to one: PIL's and
    PyTorch's ``antialias=True``)."""
    import numpy as np

    support = scale if scale >= 1.0 else 1.0
    inverse = 1.0 / scale if scale >= 1.0 else 1.0
    weights = np.zeros((out_size, in_size), dtype=np.float64)
    for i in range(out_size):
        center = scale * (i + 0.5)
        low = max(int(center - support + 0.5), 0)
        high = min(int(center + support + 0.5), in_size)
        taps = np.arange(low, high)
        row = np.maximum(0.0, 1.0 - np.abs((taps - center + 0.5) * inverse))
        total = row.sum()
        if total > 0:
            weights[i, low:high] = row / total
    return weights


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False):
    """Resampling of ``[N, C, L]`` (modes ``nearest``, ``linear``), ``[N, C, H, W]``
    (``nearest``, ``bilinear``, ``area``) or ``[N, C, D, H, W]`` (``nearest``, ``trilinear``,
    ``area``) to ``size`` or by ``scale_factor``; ``antialias`` widens the bilinear filter when
    shrinking, as PyTorch and PIL do."""
    import anygrad

    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = input.dim() - 2
    if spatial == 3:
        return _interpolate3d(input, size, scale_factor, mode, align_corners, recompute_scale_factor)
    if spatial not in (1, 2):
        raise NotImplementedError(f"interpolate: {input.dim()}-D input is not supported (3-D, 4-D and 5-D are)")
    if mode in ("bicubic", "nearest-exact", "trilinear"):
        raise NotImplementedError(f"interpolate: mode={mode!r} is not supported (nearest, linear, bilinear, area)")
    if mode in ("linear", "bilinear") and mode != ("linear" if spatial == 1 else "bilinear"):
        raise ValueError(f"interpolate: mode={mode!r} expects a {3 if mode == 'linear' else 4}-D input, got {input.dim()}-D")
    if align_corners is not None and mode in ("nearest", "area"):
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear")
    x = input.unsqueeze(2) if spatial == 1 else input

    def pair(value, fill):
        if isinstance(value, (tuple, list)):
            return (fill, value[0]) if spatial == 1 else tuple(value)
        return (fill, value) if spatial == 1 else (value, value)

    in_h, in_w = x.shape[-2], x.shape[-1]
    if size is not None:
        out_h, out_w = pair(size, 1)
        scales = None
    else:
        scale_h, scale_w = pair(scale_factor, 1.0)
        out_h, out_w = int(in_h * scale_h), int(in_w * scale_w)
        scales = None if recompute_scale_factor else (scale_h, scale_w)
    if mode == "area":
        out = adaptive_avg_pool2d(x, (out_h, out_w))
    elif antialias and mode in ("linear", "bilinear"):
        if align_corners:
            raise NotImplementedError("interpolate: antialias with align_corners=True is not supported")
        h_scale = 1.0 / scales[0] if scales else in_h / out_h
        w_scale = 1.0 / scales[1] if scales else in_w / out_w
        rows = anygrad.tensor(_antialias_weights(in_h, out_h, h_scale), dtype=x.dtype, device=x.device)
        cols = anygrad.tensor(_antialias_weights(in_w, out_w, w_scale).T, dtype=x.dtype, device=x.device)
        out = rows @ (x @ cols)
    else:
        native_mode = "nearest" if mode == "nearest" else "bilinear"
        if scales is not None:
            out = _native.interpolate(x, None, scales, native_mode, bool(align_corners))
        else:
            out = _native.interpolate(x, (out_h, out_w), None, native_mode, bool(align_corners))
    return out.squeeze(2) if spatial == 1 else out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``interpolate`` (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples of ``[N, C, H, W]`` (or ``[N, C, D, H, W]``) at the normalized positions of
    ``grid`` ``[N, H_out, W_out, 2]`` (or ``[N, D_out, H_out, W_out, 3]``; x first, -1 and 1
    the ends): ``mode`` ``bilinear``, ``nearest`` or ``bicubic`` (4-D only), ``padding_mode``
    ``zeros``, ``border`` or ``reflection``; ``align_corners=None`` is ``False``, as in
    PyTorch. Differentiable in the input and the grid."""
    return _native.grid_sample(input, grid, mode, padding_mode, bool(align_corners))


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta`` ``[N, 2, 3]`` (or ``[N, 3, 4]``) over
    ``size`` ``[N, C, H, W]`` (or ``[N, C, D, H, W]``), for :func:`grid_sample`;
    ``align_corners=None`` is ``False``, as in PyTorch. Differentiable in ``theta``."""
    return _native.affine_grid(theta, [int(s) for s in size], bool(align_corners))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v: one fused kernel on a GPU without a mask or dropout.
    ``enable_gqa``: fewer key/value heads than query heads, each shared by a group of queries."""
    if enable_gqa and key.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, dim=-3)
        value = value.repeat_interleave(groups, dim=-3)
    return _native.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)


# Losses --------------------------------------------------------------------------------------


def _class_targets(op, input, target):
    """``input`` and class-index ``target`` checked with PyTorch's messages; a ``[C]`` input
    becomes one row."""
    if input.dim() < 1 or input.dim() > 1 and target.dim() != input.dim() - 1:
        raise ValueError(
            f"{op}: expected target of shape {tuple(input.shape[:1]) + tuple(input.shape[2:])}, got {tuple(target.shape)}"
        )
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.reshape(1)
    if target.is_floating_point():
        raise TypeError(f"{op}: expected integer class indices as the target, got floats")
    if target.shape[0] != input.shape[0]:
        raise ValueError(
            f"{op}: expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]})"
        )
    return input, target


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of the target classes, given log-probabilities (the library's
    ``NllLoss``: class weights, ``ignore_index``, classes in dim 1 of ``[N, C, d...]``)."""
    input, target = _class_targets("nll_loss", input, target)
    return _native.nll_loss(input, target, weight, int(ignore_index), reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of class scores (logits) against class indices or class
    probabilities (the library's ``CrossEntropyLoss``: one native call, the same definition as
    Rust's)."""
    if not target.is_floating_point():
        input, target = _class_targets("cross_entropy", input, target)
    return _native.cross_entropy(input, target, weight, int(ignore_index), reduction, float(label_smoothing))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))`` (targets 1 or -1), computed stably."""
    return _reduce(softplus(-target * input), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The mean over classes of the binary cross entropy of ``sigmoid(input)`` against the 0/1
    ``target`` (``[N, C]``), per sample."""
    target = target.to(input.dtype)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.mean(-1), reduction, "multilabel_soft_margin_loss")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """The multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C`` per
    sample (``p`` 1 or 2; ``weight`` per class, of the target's)."""
    import anygrad

    if p not in (1, 2):
        raise ValueError("multi_margin_loss: only p == 1 and p == 2 supported")
    rows = input if input.dim() == 2 else input.unsqueeze(0)
    labels = target.reshape(-1, 1)
    picked = rows.gather(1, labels)
    margins = (rows - picked + margin).clamp(min=0.0)
    if p == 2:
        margins = margins.square()
    if weight is not None:
        margins = margins * weight.index_select(0, labels.reshape(-1)).unsqueeze(1)
    others = anygrad.ones_like(rows).scatter(1, labels, 0.0)
    loss = (margins * others).sum(1) / rows.shape[1]
    return _reduce(loss if input.dim() == 2 else loss.squeeze(0), reduction, "multi_margin_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target`` is 1, ``max(0, margin - x)`` where it is -1."""
    import anygrad

    zeros = anygrad.zeros_like(input)
    loss = anygrad.where(target == 1, input, zeros) + anygrad.where(target == -1, (margin - input).clamp(min=0.0), zeros)
    return _reduce(loss, reduction, "hinge_embedding_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
    """The negative log likelihood of ``target`` under a Poisson distribution of rate
    ``exp(input)`` (``log_input``) or ``input``; ``full`` adds Stirling's term for targets
    above 1."""
    import anygrad

    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.clamp(min=1.0).log() - target + 0.5 * (2 * math.pi * target.clamp(min=1.0)).log()
        loss = loss + anygrad.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The negative log likelihood of ``target`` under normal distributions of mean ``input``
    and variance ``var`` (clamped to ``eps``; broadcast, one per sample allowed):
    ``0.5 * (log(var) + (input - target)² / var)``, plus ``0.5 * log(2π)`` with ``full``."""
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    if bool((var < 0).any()):
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    var = var.clamp(min=eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def _check_same_shape(op, input, target):
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(
            f"{op}: using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}); this will likely lead to incorrect results due to broadcasting.",
            stacklevel=3,
        )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error."""
    _check_same_shape("mse_loss", input, target)
    return _reduce((input - target).square(), reduction, "mse_loss")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean absolute error."""
    _check_same_shape("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction, "l1_loss")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Huber-like loss: quadratic below ``beta``, linear above."""
    import anygrad

    diff = (input - target).abs()
    if beta == 0:
        return _reduce(diff, reduction, "smooth_l1_loss")
    loss = anygrad.where(diff < beta, diff.square() * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):
    """Huber loss."""
    return smooth_l1_loss(input, target, reduction=reduction, beta=delta) * delta


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
    """Binary cross entropy of logits, computed stably."""
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size ({tuple(target.shape)}) must be the same as input size ({tuple(input.shape)})"
        )
    target = target.to(input.dtype)
    log_term = ((-input.abs()).exp() + 1).log() + (-input).relu()
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_term
    else:
        loss = (1 - target) * input + log_term
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy of probabilities (logs floored at -100, as PyTorch)."""
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"binary_cross_entropy: target size ({tuple(target.shape)}) must be the same as input size ({tuple(input.shape)})"
        )
    target = target.to(input.dtype)
    loss = -(target * input.log().clamp(min=-100.0) + (1 - target) * (1 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence (``input`` holds log-probabilities)."""
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target * (target.clamp(min=1e-38).log() - input)
        loss = loss * (target > 0).to(loss.dtype)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction, "kl_div")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is
    -1 (the cosine along the last dim, PyTorch's ``1e-12`` added to each squared norm)."""
    import anygrad

    dot = (input1 * input2).sum(-1)
    norms = ((input1.square().sum(-1) + 1e-12) * (input2.square().sum(-1) + 1e-12)).sqrt()
    cos = dot / norms
    zeros = anygrad.zeros_like(cos)
    loss = anygrad.where(target == 1, 1 - cos, zeros) + anygrad.where(target == -1, (cos - margin).clamp(min=0.0), zeros)
    return _reduce(loss, reduction, "cosine_embedding_loss")


# Padding modes, pixel shuffle, instance norm, adaptive max pooling, PReLU, bilinear, ranking
# losses -----------------------------------------------------------------------------------


def _pad_positions(size, before, after, mode):
    """The source positions along one dim of the output of ``pad`` in ``mode`` ("reflect",
    "replicate" or "circular"): ``before + size + after`` of them (fewer with negative
    padding, which crops)."""
    if mode == "reflect" and (before >= size or after >= size):
        raise RuntimeError(
            f"pad: padding ({before}, {after}) should be less than the corresponding input dimension ({size}) in reflect mode"
        )
    if mode == "circular" and (before > size or after > size):
        raise RuntimeError(
            f"pad: padding ({before}, {after}) should be at most the corresponding input dimension ({size}) in circular mode"
        )
    positions = []
    for i in range(-before, size + after):
        if mode == "reflect":
            j = -i if i < 0 else 2 * (size - 1) - i if i >= size else i
        elif mode == "replicate":
            j = 0 if i < 0 else size - 1 if i >= size else i
        else:
            j = i % size
        positions.append(j)
    return positions


def _pad_indexed(input, pad, mode):
    """``pad`` in the modes that repeat the input's own elements, as one ``index_select`` per
    padded dim (so gradients flow back to the elements each output copies)."""
    import anygrad

    out = input
    for index in range(len(pad) // 2):
        dim = out.dim() - 1 - index
        before, after = pad[2 * index], pad[2 * index + 1]
        if before == 0 and after == 0:
            continue
        size = out.shape[dim]
        if size == 0:
            raise RuntimeError(f"pad: cannot pad an empty dimension in {mode} mode")
        positions = anygrad.tensor(_pad_positions(size, before, after, mode), dtype=anygrad.int64, device=out.device)
        out = out.index_select(dim, positions)
    return out


def _patch_kernel(channels, kernel, dtype, device):
    """The one-hot ``[C * kh * kw, 1, kh, kw]`` weight whose grouped convolution copies each
    kernel position of each channel to its own output channel (PyTorch's ``(C, kh, kw)``
    order)."""
    import anygrad

    taps = kernel[0] * kernel[1]
    one_hot = anygrad.eye(taps, dtype=dtype, device=device).reshape(taps, 1, kernel[0], kernel[1])
    return one_hot.repeat(channels, 1, 1, 1)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of ``[N, C, H, W]`` (or ``[C, H, W]``) as columns: ``[N, C * kh * kw,
    L]`` (``im2col``), one grouped convolution with a one-hot kernel, so gradients flow."""
    def pair(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value, value)

    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    if x.dim() != 4:
        raise ValueError(f"unfold: expected a 3-D or 4-D input, got {input.dim()}-D")
    kernel = pair(kernel_size)
    channels = x.shape[1]
    weight = _patch_kernel(channels, kernel, x.dtype, x.device)
    columns = conv2d(x, weight, None, pair(stride), pair(padding), pair(dilation), channels)
    columns = columns.reshape(x.shape[0], columns.shape[1], -1)
    return columns.squeeze(0) if unbatched else columns


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The inverse arrangement of ``unfold``: the columns ``[N, C * kh * kw, L]`` (or
    ``[C * kh * kw, L]``) added back into ``[N, C, *output_size]`` (overlapping blocks sum),
    one grouped transposed convolution with a one-hot kernel."""
    def pair(value):
        return tuple(value) if isinstance(value, (tuple, list)) else (value, value)

    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    if x.dim() != 3:
        raise ValueError(f"fold: expected a 2-D or 3-D input, got {input.dim()}-D")
    kernel, size = pair(kernel_size), pair(output_size)
    d, p, s = pair(dilation), pair(padding), pair(stride)
    taps = kernel[0] * kernel[1]
    if x.shape[1] % taps:
        raise RuntimeError(f"fold: expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={kernel}")
    blocks = [(size[i] + 2 * p[i] - d[i] * (kernel[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"fold: expected input's dimension 2 to match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}")
    channels = x.shape[1] // taps
    weight = _patch_kernel(channels, kernel, x.dtype, x.device)
    extra = tuple(size[i] - ((blocks[i] - 1) * s[i] - 2 * p[i] + d[i] * (kernel[i] - 1) + 1) for i in range(2))
    out = conv_transpose2d(x.reshape(x.shape[0], x.shape[1], blocks[0], blocks[1]), weight, None, s, p, extra, channels, d)
    return out.squeeze(0) if unbatched else out


def channel_shuffle(input, groups):
    """The channels of ``[N, C, *]`` regrouped: ``C = groups x k`` read as ``k x groups``."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise ValueError(f"channel_shuffle: number of channels ({c}) must be divisible by groups ({groups})")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


def pixel_shuffle(input, upscale_factor):
    """``[*, C·r², H, W]`` rearranged to ``[*, C, H·r, W·r]`` (r = ``upscale_factor``)."""
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {input.dim()} dimension(s)")
    *batch, channels, height, width = tuple(input.shape)
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    lead = len(batch)
    out = input.reshape(*batch, channels // (r * r), r, r, height, width)
    order = list(range(lead)) + [lead, lead + 3, lead + 1, lead + 4, lead + 2]
    return out.permute(*order).reshape(*batch, channels // (r * r), height * r, width * r)


def pixel_unshuffle(input, downscale_factor):
    """``[*, C, H·r, W·r]`` rearranged to ``[*, C·r², H, W]`` (r = ``downscale_factor``): the
    inverse of ``pixel_shuffle``."""
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {input.dim()} dimension(s)")
    *batch, channels, height, width = tuple(input.shape)
    if height % r or width % r:
        raise RuntimeError(f"pixel_unshuffle expects height ({height}) and width ({width}) to be divisible by downscale_factor ({r})")
    lead = len(batch)
    out = input.reshape(*batch, channels, height // r, r, width // r, r)
    order = list(range(lead)) + [lead, lead + 2, lead + 4, lead + 1, lead + 3]
    return out.permute(*order).reshape(*batch, channels * r * r, height // r, width // r)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalization of each channel of each sample over its spatial dims (``[N, C, *]``).
    With ``use_input_stats`` the sample's own statistics are used, and given running buffers
    are updated in place with their mean over the batch (the variance unbiased, as PyTorch);
    otherwise the running statistics normalize."""
    import anygrad

    if input.dim() < 3:
        raise ValueError(f"instance_norm: expected an input of at least 3 dims [N, C, *], got {input.dim()}-D")
    channels = input.shape[1]
    dims = tuple(range(2, input.dim()))
    shape = [1, channels] + [1] * (input.dim() - 2)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None or running_var is not None:
            count = input.numel() // (input.shape[0] * channels)
            m = 0.1 if momentum is None else momentum
            with anygrad.no_grad():
                if running_mean is not None:
                    batch_mean = mean.detach().mean(0).reshape(channels).to(running_mean.dtype)
                    running_mean.copy_(running_mean * (1 - m) + batch_mean * m)
                if running_var is not None:
                    unbiased = var.detach() * (count / max(count - 1, 1))
                    batch_var = unbiased.mean(0).reshape(channels).to(running_var.dtype)
                    running_var.copy_(running_var * (1 - m) + batch_var * m)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: expected running_mean and running_var when use_input_stats=False")
        mean = running_mean.reshape(*shape)
        var = running_var.reshape(*shape)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(*shape)
    if bias is not None:
        out = out + bias.reshape(*shape)
    return out


def _adaptive_bounds(size, count):
    """PyTorch's adaptive pooling windows along one dim: ``[floor(i·size/count),
    ceil((i+1)·size/count))`` for each of the ``count`` outputs."""
    return [((i * size) // count, -(-((i + 1) * size) // count)) for i in range(count)]


def _adaptive_max_along(input, dim, count, positions=None):
    """Adaptive max pooling of ``input`` along one dim to ``count`` outputs (PyTorch's
    windows). With ``positions`` (int64, ``input``'s shape: each element's flat index in its
    plane) it returns ``(values, positions)``, the positions of the maxima picked (the first
    of equal values in the window)."""
    import anygrad

    size = input.shape[dim]
    if count == size:
        return input if positions is None else (input, positions)
    if positions is None and size % count == 0:
        step = size // count
        moved = anygrad.movedim(input, dim, -1)
        pooled = moved.reshape(*moved.shape[:-1], count, step).amax(-1)
        return anygrad.movedim(pooled, -1, dim)
    values, picked = [], []
    for start, end in _adaptive_bounds(size, count):
        window = input.narrow(dim, start, end - start)
        if positions is None:
            values.append(window.amax(dim, keepdim=True))
            continue
        choice = window.detach().argmax(dim, keepdim=True)
        values.append(window.gather(dim, choice))
        picked.append(positions.narrow(dim, start, end - start).gather(dim, choice))
    if positions is None:
        return anygrad.cat(values, dim)
    return anygrad.cat(values, dim), anygrad.cat(picked, dim)


def _adaptive_max_pool(op, input, sizes, return_indices):
    """Adaptive max pooling over the last ``len(sizes)`` dims (None keeps a dim's size), one
    dim at a time from the last, so that with ``return_indices`` the positions name the first
    maximum in the window's row-major order, as PyTorch's."""
    import anygrad

    dims = len(sizes)
    if input.dim() not in (dims + 1, dims + 2):
        raise ValueError(f"{op}: expected a {dims + 1}-D or {dims + 2}-D input, got {input.dim()}-D")
    spatial = tuple(input.shape[input.dim() - dims:])
    sizes = [spatial[i] if sizes[i] is None else int(sizes[i]) for i in range(dims)]
    positions = None
    if return_indices:
        plane = 1
        for size in spatial:
            plane *= size
        positions = anygrad.arange(plane, device=input.device).reshape(*spatial).expand(*input.shape).contiguous()
    out = input
    for i in reversed(range(dims)):
        dim = input.dim() - dims + i
        if return_indices:
            out, positions = _adaptive_max_along(out, dim, sizes[i], positions)
        else:
            out = _adaptive_max_along(out, dim, sizes[i])
    return (out, positions) if return_indices else out


def _sizes(output_size, dims):
    """``output_size`` as a ``dims``-tuple (an int repeated, a sequence as it is)."""
    return tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * dims


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling of ``[N, C, H, W]`` (or ``[C, H, W]``) to ``output_size`` (an int, a
    pair, None in a pair keeping that size), with PyTorch's windows; with ``return_indices``
    also each maximum's flat position ``h * W + w`` in its plane (int64, the first maximum in
    the window on ties), what ``max_unpool2d`` takes. Gradients flow through the values."""
    return _adaptive_max_pool("adaptive_max_pool2d", input, _sizes(output_size, 2), return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling of ``[N, C, L]`` (or ``[C, L]``) to ``output_size``, with PyTorch's
    windows; with ``return_indices`` also each maximum's position along ``L``."""
    return _adaptive_max_pool("adaptive_max_pool1d", input, _sizes(output_size, 1), return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) to ``output_size`` (an int or
    a triple, None keeping a size), with PyTorch's windows; with ``return_indices`` also each
    maximum's flat position ``(d * H + h) * W + w`` in its volume."""
    return _adaptive_max_pool("adaptive_max_pool3d", input, _sizes(output_size, 3), return_indices)


def prelu(input, weight):
    """``max(0, x) + weight · min(0, x)``, with one weight or one per channel (dim 1; dim 0 of
    a 1-D input)."""
    if weight.numel() != 1:
        channel_dim = 1 if input.dim() >= 2 else 0
        if input.shape[channel_dim] != weight.numel():
            raise RuntimeError(
                f"prelu: mismatch of parameter numbers ({weight.numel()}) and input channel size ({input.shape[channel_dim]})"
            )
        shape = [1] * input.dim()
        shape[channel_dim] = weight.numel()
        weight = weight.reshape(*shape)
    else:
        weight = weight.reshape(())
    return input.relu() - (-input).relu() * weight


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1ᵀ W_k x2 + b_k`` with ``weight`` of shape ``[out, in1, in2]``, over any
    leading dims."""
    out_features, in1, in2 = tuple(weight.shape)
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    mixed = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    out = (mixed * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*lead, out_features)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target · (input1 - input2) + margin)``: target 1 asks input1 to rank above
    input2, -1 below."""
    loss = (-target * (input1 - input2) + margin).clamp(min=0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``pairwise_distance`` of order
    ``p``; ``swap`` takes the smaller of d(a, n) and d(p, n)."""
    positive_distance = pairwise_distance(anchor, positive, p, eps)
    negative_distance = pairwise_distance(anchor, negative, p, eps)
    if swap:
        negative_distance = negative_distance.minimum(pairwise_distance(positive, negative, p, eps))
    loss = (positive_distance - negative_distance + margin).clamp(min=0.0)
    return _reduce(loss, reduction, "triplet_margin_loss")


# Convolutions written over the 2-D ones ------------------------------------------------------


def _triple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value, value)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of ``[N, C_in, L]`` (or ``[C_in, L]``) with weight
    ``[C_out, C_in / groups, k]``, run as a 2-D convolution over a height of one; ``padding``
    may be an int or ``"valid"``."""
    if padding == "valid":
        padding = 0
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)), (0, _single(padding)), (1, _single(dilation)), groups).squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of ``[N, C_in, D, H, W]`` (or ``[C_in, D, H, W]``) with weight
    ``[C_out, C_in / groups, kD, kH, kW]`` and an optional ``bias`` ``[C_out]``; ``stride``,
    ``padding`` (an int, a triple, ``"valid"`` or ``"same"``) and ``dilation`` per dim, as
    PyTorch's. Returns ``[N, C_out, D_out, H_out, W_out]`` with ``D_out = (D + 2 * padding -
    dilation * (kD - 1) - 1) // stride + 1`` (and so on).

    A composite over ``conv2d``: the depth positions the output needs are folded into the
    batch, and each kernel depth tap adds the 2-D convolution of the input depth slices it
    reads with that tap's ``[C_out, C_in / groups, kH, kW]`` weights; gradients flow to the
    input, the weight and the bias."""
    if input.dim() not in (4, 5):
        raise ValueError(f"conv3d: expected a 4-D or 5-D input, got {input.dim()}-D")
    if weight.dim() != 5:
        raise ValueError(f"conv3d: expected a 5-D weight, got {weight.dim()}-D")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    kernel = tuple(weight.shape[2:])
    s, d = _triple(stride), _triple(dilation)
    if padding == "valid":
        padding = 0
    if padding == "same":
        if any(v != 1 for v in s):
            raise ValueError("conv3d: padding='same' is not supported for strided convolutions")
        totals = [d[i] * (kernel[i] - 1) for i in range(3)]
        x = pad(x, (totals[2] // 2, totals[2] - totals[2] // 2, totals[1] // 2, totals[1] - totals[1] // 2, totals[0] // 2, totals[0] - totals[0] // 2))
        padding = 0
    p = _triple(padding)
    n, channels = x.shape[0], x.shape[1]
    if channels != weight.shape[1] * groups:
        raise RuntimeError(f"conv3d: expected input with {weight.shape[1] * groups} channels, got {channels}")
    if p[0]:
        x = pad(x, (0, 0, 0, 0, p[0], p[0]))
    depth, height, width = x.shape[2], x.shape[3], x.shape[4]
    out_d = (depth - d[0] * (kernel[0] - 1) - 1) // s[0] + 1
    if out_d < 1:
        raise RuntimeError(f"conv3d: the input's depth {depth} (padded) is smaller than the dilated kernel")
    out = None
    for tap in range(kernel[0]):
        start = tap * d[0]
        slices = x[:, :, start : start + (out_d - 1) * s[0] + 1 : s[0]]
        slices = slices.permute(0, 2, 1, 3, 4).reshape(n * out_d, channels, height, width)
        part = conv2d(slices, weight[:, :, tap], None, (s[1], s[2]), (p[1], p[2]), (d[1], d[2]), groups)
        out = part if out is None else out + part
    out = out.reshape(n, out_d, out.shape[1], out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = out.contiguous()
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution of ``[N, C_in, L]`` (or ``[C_in, L]``) with weight
    ``[C_in, C_out / groups, k]``: ``L_out = (L - 1) * stride - 2 * padding + dilation * (k - 1)
    + output_padding + 1``. Run as ``conv_transpose2d`` over a height of one."""
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    out = conv_transpose2d(
        x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)), (0, _single(padding)),
        (0, _single(output_padding)), groups, (1, _single(dilation)),
    ).squeeze(2)
    return out.squeeze(0) if unbatched else out


# Volumetric (3-D) pooling, transposed convolution and dropout over the 2-D ops -----------------


def _volume(op, input):
    """``input`` as ``[N, C, D, H, W]`` and whether it came without the batch dim."""
    if input.dim() not in (4, 5):
        raise ValueError(f"{op}: expected a 4-D or 5-D input, got {input.dim()}-D")
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


def _depth_taps(x, kernel, stride, dilation, count):
    """The ``kernel`` strided views along the depth (dim 2) of ``x`` that a window of
    ``kernel`` taps (``dilation`` apart) moving by ``stride`` reads, ``count`` windows."""
    return [x[:, :, tap * dilation : tap * dilation + (count - 1) * stride + 1 : stride] for tap in range(kernel)]


def _planes(x):
    """``[N, C, D, H, W]`` as ``[N, C * D, H, W]`` (every depth slice a channel), and back."""
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    return x.reshape(n, c * d, x.shape[3], x.shape[4]), lambda y: y.reshape(n, c, d, y.shape[-2], y.shape[-1])


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``; ``stride`` defaults to the
    kernel size): the input extended with ``-inf`` (padding, and the partial windows of
    ``ceil_mode``), 2-D max pooling of every depth slice, then the maximum over the kernel's
    depth taps. With ``return_indices=True`` it returns ``(values, indices)``, each maximum's
    flat position ``(d * H + h) * W + w`` in its input volume (the first in the window's
    row-major order on ties), as ``max_unpool3d`` takes. Gradients flow through the values."""
    import anygrad

    x, unbatched = _volume("max_pool3d", input)
    k, d, p = _triple(kernel_size), _triple(dilation), _triple(padding)
    s = _triple(stride) if stride is not None and stride != [] else k
    if return_indices:
        values, indices = _max_pool_taps(x, k, s, p, d, ceil_mode, 3)
        return (values.squeeze(0), indices.squeeze(0)) if unbatched else (values, indices)
    extras = [_ceil_extra(x.shape[2 + i], k[i], s[i], p[i], d[i]) if ceil_mode else 0 for i in range(3)]
    x = pad(x, (p[2], p[2] + extras[2], p[1], p[1] + extras[1], p[0], p[0] + extras[0]), value=float("-inf"))
    planes, back = _planes(x)
    pooled = back(max_pool2d(planes, k[1:], s[1:], 0, d[1:]))
    out_d = (x.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    out = None
    for tap in _depth_taps(pooled, k[0], s[0], d[0], out_d):
        out = tap if out is None else anygrad.maximum(out, tap)
    return out.squeeze(0) if unbatched else out


def _window_sums3d(x, k, s):
    """The sums of the ``k``-windows of ``[N, C, D, H, W]`` moving by ``s`` (no padding)."""
    planes, back = _planes(x)
    sums = back(_native.avg_pool2d(planes, k[1:], s[1:], 0, False, True) * (k[1] * k[2]))
    out_d = (x.shape[2] - k[0]) // s[0] + 1
    total = None
    for tap in _depth_taps(sums, k[0], s[0], 1, out_d):
        total = tap if total is None else total + tap
    return total


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """3-D average pooling of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``): window sums over the
    zero-padded input (2-D sums of every depth slice, added over the kernel's depth taps)
    divided by ``divisor_override`` or each window's count (PyTorch's: with
    ``count_include_pad`` the window clipped to the padded input, else to the input)."""
    import anygrad

    x, unbatched = _volume("avg_pool3d", input)
    k, p = _triple(kernel_size), _triple(padding)
    s = _triple(stride) if stride is not None and stride != [] else k
    sizes = tuple(x.shape[2:])
    extras = [_ceil_extra(sizes[i], k[i], s[i], p[i], 1) if ceil_mode else 0 for i in range(3)]
    widths = (p[2], p[2] + extras[2], p[1], p[1] + extras[1], p[0], p[0] + extras[0])
    sums = _window_sums3d(pad(x, widths), k, s)
    if divisor_override is not None:
        out = sums / divisor_override
    elif count_include_pad and not any(extras):
        out = sums / (k[0] * k[1] * k[2])
    else:
        if count_include_pad:
            ones = anygrad.ones(1, 1, *(sizes[i] + 2 * p[i] for i in range(3)), dtype=x.dtype, device=x.device)
            counted = pad(ones, (0, extras[2], 0, extras[1], 0, extras[0]))
        else:
            counted = pad(anygrad.ones(1, 1, *sizes, dtype=x.dtype, device=x.device), widths)
        out = sums / _window_sums3d(counted, k, s)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) to ``output_size`` (an
    int or a triple, None keeping a size), with PyTorch's windows: each depth slice pooled in
    2-D, then the depth windows averaged."""
    import anygrad

    x, unbatched = _volume("adaptive_avg_pool3d", input)
    sizes = _sizes(output_size, 3)
    out_d, out_h, out_w = (x.shape[2 + i] if sizes[i] is None else int(sizes[i]) for i in range(3))
    planes, back = _planes(x)
    pooled = back(_native.adaptive_avg_pool2d(planes, (out_h, out_w)))
    depth = x.shape[2]
    if depth % out_d == 0:
        out = pooled.reshape(pooled.shape[0], pooled.shape[1], out_d, depth // out_d, out_h, out_w).mean(3)
    else:
        out = anygrad.cat([pooled.narrow(2, start, end - start).mean(2, keepdim=True) for start, end in _adaptive_bounds(depth, out_d)], 2)
    return out.squeeze(0) if unbatched else out


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool3d``: each value of ``input`` (``[N, C, D, H, W]`` or
    ``[C, D, H, W]``) goes to the flat position ``indices`` gives within its output volume,
    every other element is zero; the size is ``output_size`` (its last three entries) or
    ``(D - 1) * stride - 2 * padding + kernel_size`` per dim."""
    if input.dim() not in (4, 5):
        raise ValueError(f"max_unpool3d: expected a 4-D or 5-D input, got {input.dim()}-D")
    sizes = _unpool_sizes("max_unpool3d", input, kernel_size, stride, padding, output_size, 3)
    return _max_unpool("max_unpool3d", input, indices, sizes, 3)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution of ``[N, C_in, D, H, W]`` (or ``[C_in, D, H, W]``) with
    weight ``[C_in, C_out / groups, kD, kH, kW]``: ``D_out = (D - 1) * stride - 2 * padding +
    dilation * (kD - 1) + output_padding + 1`` (and so on). A composite over
    ``conv_transpose2d``: each kernel depth tap's 2-D transposed convolution of every input
    depth slice lands ``stride`` apart, shifted by the tap, in the output's depth; gradients
    flow to the input, the weight and the bias."""
    import anygrad

    x, unbatched = _volume("conv_transpose3d", input)
    if weight.dim() != 5:
        raise ValueError(f"conv_transpose3d: expected a 5-D weight, got {weight.dim()}-D")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"conv_transpose3d: expected input with {weight.shape[0]} channels, got {x.shape[1]}")
    s, p, o, d = _triple(stride), _triple(padding), _triple(output_padding), _triple(dilation)
    n, depth = x.shape[0], x.shape[2]
    kernel_depth = weight.shape[2]
    slices = x.permute(0, 2, 1, 3, 4).reshape(n * depth, x.shape[1], x.shape[3], x.shape[4])
    full = (depth - 1) * s[0] + d[0] * (kernel_depth - 1) + 1 + o[0]
    out_depth = full - 2 * p[0]
    if out_depth < 1:
        raise RuntimeError(f"conv_transpose3d: the output's depth would be {out_depth}")
    out = None
    for tap in range(kernel_depth):
        part = conv_transpose2d(slices, weight[:, :, tap], None, s[1:], p[1:], o[1:], groups, d[1:])
        part = part.reshape(n, depth, part.shape[1], part.shape[2], part.shape[3]).permute(0, 2, 1, 3, 4)
        if s[0] > 1:
            gaps = anygrad.zeros(*part.shape[:3], s[0] - 1, *part.shape[3:], dtype=part.dtype, device=part.device)
            part = anygrad.cat([part.unsqueeze(3), gaps], 3).reshape(part.shape[0], part.shape[1], depth * s[0], part.shape[3], part.shape[4])
            part = part.narrow(2, 0, (depth - 1) * s[0] + 1)
        before = tap * d[0]
        part = pad(part, (0, 0, 0, 0, before, full - before - part.shape[2]))
        out = part if out is None else out + part
    out = out.narrow(2, p[0], out_depth)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    out = out.contiguous()
    return out.squeeze(0) if unbatched else out


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) with probability ``p``
    and scale the rest by 1/(1-p) (in training)."""
    x, unbatched = _volume("dropout3d", input)
    out = _native.dropout2d(x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3], x.shape[4]), p, training).reshape(*x.shape)
    return out.squeeze(0) if unbatched else out


def _interpolate3d(input, size, scale_factor, mode, align_corners, recompute_scale_factor):
    """``interpolate`` of ``[N, C, D, H, W]``: ``nearest`` by picking (PyTorch's source index
    ``floor(dst * scale)``), ``trilinear`` as a linear blend along the depth and the native
    bilinear resampling of every depth slice, ``area`` by adaptive average pooling."""
    import numpy as np
    import anygrad

    if mode not in ("nearest", "trilinear", "area"):
        raise NotImplementedError(f"interpolate: mode={mode!r} is not supported for 5-D input (nearest, trilinear, area)")
    if align_corners is not None and mode != "trilinear":
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    inputs = tuple(input.shape[2:])
    if size is not None:
        outputs = tuple(int(v) for v in _sizes(size, 3))
        scales = None
    else:
        factors = tuple(float(v) for v in _sizes(scale_factor, 3))
        outputs = tuple(int(math.floor(inputs[i] * factors[i])) for i in range(3))
        scales = None if recompute_scale_factor else factors
    if mode == "area":
        return adaptive_avg_pool3d(input, outputs)
    # The step from an output index to a source coordinate, per dim, as PyTorch computes it.
    steps = [1.0 / scales[i] if scales else inputs[i] / outputs[i] for i in range(3)]
    if mode == "nearest":
        out = input
        for i in range(3):
            source = np.minimum(np.floor(np.arange(outputs[i], dtype=np.float32) * np.float32(steps[i])).astype(np.int64), inputs[i] - 1)
            out = out.index_select(2 + i, anygrad.tensor(source, device=input.device))
        return out
    positions = np.arange(outputs[0], dtype=np.float64)
    if align_corners:
        source = positions * ((inputs[0] - 1) / (outputs[0] - 1) if outputs[0] > 1 else 0.0)
    else:
        source = np.maximum((positions + 0.5) * steps[0] - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), inputs[0] - 1)
    high = np.minimum(low + 1, inputs[0] - 1)
    weight = anygrad.tensor((source - low).astype(np.float32), dtype=input.dtype, device=input.device).reshape(1, 1, -1, 1, 1)
    blended = input.index_select(2, anygrad.tensor(low, device=input.device)) * (1 - weight)
    blended = blended + input.index_select(2, anygrad.tensor(high, device=input.device)) * weight
    planes, back = _planes(blended)
    if scales is not None:
        resized = _native.interpolate(planes, None, scales[1:], "bilinear", bool(align_corners))
    else:
        resized = _native.interpolate(planes, outputs[1:], None, "bilinear", bool(align_corners))
    return back(resized)


# Connectionist temporal classification ---------------------------------------------------------


def _lengths(value, count):
    if hasattr(value, "tolist"):
        value = value.reshape(-1).tolist()
    elif not isinstance(value, (tuple, list)):
        value = [value]
    value = [int(v) for v in value]
    if len(value) != count:
        raise ValueError(f"ctc_loss: expected {count} lengths, got {len(value)}")
    return value


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The connectionist temporal classification loss (Graves et al., 2006): the negative log
    probability of each target sequence summed over every alignment of it (blanks between and
    around the labels, labels repeated) to the input's time steps.

    ``log_probs`` is ``[T, N, C]`` (or ``[T, C]``) log-probabilities (``log_softmax`` of the
    outputs); ``targets`` is ``[N, S]`` (padded) or the targets concatenated in 1-D (their
    sum of lengths), never containing ``blank``; ``input_lengths`` and ``target_lengths`` are
    tensors, tuples or lists of ``N`` ints. ``reduction="mean"`` divides each loss by its target
    length and averages over the batch, ``"sum"`` adds them, ``"none"`` returns ``[N]``. An
    alignment that cannot exist (the input too short) gives ``inf``, or 0 (with a zero
    gradient) under ``zero_infinity``.

    Written as the forward (alpha) recursion in log space with tensor ops over the time steps,
    so autograd gives the gradient."""
    import numpy as np
    import anygrad

    if log_probs.dim() not in (2, 3):
        raise ValueError(f"ctc_loss: expected log_probs of 2 or 3 dims, got {log_probs.dim()}")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
    steps, batch, classes = log_probs.shape
    inputs = _lengths(input_lengths, batch)
    lengths = _lengths(target_lengths, batch)
    labels = np.asarray(targets.detach().cpu().numpy() if hasattr(targets, "numpy") else targets, dtype=np.int64)
    if unbatched:
        labels = labels.reshape(1, -1)
    if labels.ndim == 1:
        ends = np.cumsum([0] + lengths)
        rows = [labels[ends[i] : ends[i + 1]] for i in range(batch)]
    else:
        rows = [labels[i, : lengths[i]] for i in range(batch)]
    if any(length > steps or length < 0 for length in inputs):
        raise ValueError(f"ctc_loss: input lengths {inputs} must be between 0 and {steps}")
    width = 2 * max(lengths + [0]) + 1
    extended = np.full((batch, width), blank, dtype=np.int64)
    skip = np.zeros((batch, width), dtype=bool)
    start = np.zeros((batch, width), dtype=bool)
    for i, row in enumerate(rows):
        extended[i, 1 : 2 * len(row) : 2] = row
        for s in range(3, 2 * len(row), 2):
            skip[i, s] = extended[i, s] != extended[i, s - 2]
        start[i, 0] = True
        if len(row):
            start[i, 1] = True
    device = log_probs.device
    work = log_probs if log_probs.dtype in (anygrad.float32, anygrad.float64) else log_probs.float()
    floor = -1e30
    # Each time step's log-probability of each extended label: [T, N, width].
    emitted = work.gather(2, anygrad.tensor(extended, device=device).unsqueeze(0).expand(steps, batch, width).contiguous())
    emitted = emitted.clamp(min=floor)
    skip_mask = anygrad.tensor(skip, device=device)
    low = anygrad.full((batch, 2), floor, dtype=work.dtype, device=device)
    alpha = anygrad.where(anygrad.tensor(start, device=device), emitted[0], floor)
    active = anygrad.tensor(np.arange(steps)[:, None, None] < np.asarray(inputs)[None, :, None], device=device)
    for t in range(1, steps):
        stay = alpha
        advance = anygrad.cat([low[:, :1], alpha[:, :-1]], 1)
        jump = anygrad.where(skip_mask, anygrad.cat([low, alpha[:, :-2]], 1), floor) if width > 2 else advance * 0 + floor
        step = anygrad.stack([stay, advance, jump], 0).logsumexp(0) + emitted[t]
        alpha = anygrad.where(active[t], step.clamp(min=floor), alpha)
    last = anygrad.tensor([[2 * n] for n in lengths], device=device)
    before = anygrad.tensor([[max(2 * n - 1, 0)] for n in lengths], device=device)
    has_label = anygrad.tensor([[n > 0] for n in lengths], device=device)
    ending = anygrad.cat([alpha.gather(1, last), anygrad.where(has_label, alpha.gather(1, before), floor)], 1)
    loss = -ending.logsumexp(1)
    # No time steps at all: only the empty target has an alignment (probability one).
    if 0 in inputs:
        empty = anygrad.tensor([n == 0 for n in inputs], device=device)
        fixed = anygrad.tensor([0.0 if n == 0 else 2e30 for n in lengths], dtype=loss.dtype, device=device)
        loss = anygrad.where(empty, fixed, loss)
    impossible = (loss > 1e29).detach()
    loss = anygrad.where(impossible, 0.0 if zero_infinity else float("inf"), loss)
    if log_probs.dtype != work.dtype:
        loss = loss.to(log_probs.dtype)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        divisors = anygrad.tensor([max(n, 1) for n in lengths], dtype=loss.dtype, device=device)
        return (loss / divisors).mean()
    raise ValueError(f"ctc_loss: {reduction} is not a valid value for reduction")
