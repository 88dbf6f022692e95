"""Functions of the ``torch`` namespace written over anygrad's tensor ops (so they run on every
device and carry gradients where PyTorch's do): shape helpers (``meshgrid``,
``broadcast_tensors``, ``movedim``, ``swapaxes``, ``tile``, ``hstack``, ``vstack``,
``column_stack``), arithmetic (``diff``, ``trace``, ``addcmul``, ``addcdiv``, ``fmod``,
``isclose``, ``count_nonzero``, ``take_along_dim``, ``cumprod``), search (``searchsorted``,
``bucketize``), distances (``cdist``), sampling (``multinomial``, ``normal``, ``bernoulli``),
index and matrix helpers (``tril_indices``, ``triu_indices``, ``cartesian_prod``,
``combinations``, ``tensordot``, ``kron``, ``block_diag``, ``rot90``, ``diag_embed``),
dtype facts (``finfo``, ``iinfo``), and the settings scripts set (``compile``,
``set_float32_matmul_precision``)."""

import anygrad as _ag


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, disable=False):
    """``torch.compile``: anygrad runs eagerly (its elementwise chains are fused without a
    compile step), so the model (or function) comes back unchanged and computes the same
    (``anygrad.jit.script`` and ``jit.trace`` do the same)."""
    if model is None:
        return lambda function: function
    return model


_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision):
    """Accepts PyTorch's settings; anygrad's f32 matmuls always compute in f32, which every
    setting allows."""
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _MATMUL_PRECISION[0] = precision


def get_num_threads():
    """The CPU threads anygrad's kernels use: ``RAYON_NUM_THREADS`` when set, otherwise every
    core this process may run on."""
    import os

    configured = os.environ.get("RAYON_NUM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def set_num_threads(count):
    """anygrad's CPU thread pool is sized once, before first use, from ``RAYON_NUM_THREADS``:
    a different count here is reported with a warning and the pool stays as it is."""
    import warnings

    if not isinstance(count, int) or count < 1:
        raise ValueError(f"set_num_threads: expected a positive int, got {count!r}")
    if count != get_num_threads():
        warnings.warn(
            f"set_num_threads({count}): anygrad's CPU threads are fixed when the process starts; "
            f"set RAYON_NUM_THREADS={count} in the environment instead", RuntimeWarning, stacklevel=2)


def get_float32_matmul_precision():
    """The last setting of ``set_float32_matmul_precision``."""
    return _MATMUL_PRECISION[0]


class finfo:
    """Facts of a float dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny``, ``resolution``."""

    def __init__(self, type=None):
        import numpy as np

        type = type or _ag.float32
        if not type.is_floating_point:
            raise TypeError(f"finfo: {type} is not a floating point dtype")
        info = np.finfo(type.name)
        self.dtype = type.name
        self.bits, self.eps, self.max, self.min = info.bits, float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = float(info.resolution)

    def __repr__(self):
        return f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, tiny={self.tiny}, dtype={self.dtype})"


class iinfo:
    """Facts of an integer dtype: ``bits``, ``max``, ``min``."""

    def __init__(self, type):
        import numpy as np

        if type.is_floating_point or type == _ag.bool:
            raise TypeError(f"iinfo: {type} is not an integer dtype")
        info = np.iinfo(type.name)
        self.dtype, self.bits, self.max, self.min = type.name, info.bits, int(info.max), int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape."""
    shape = []
    for tensor in tensors:
        dims = list(tensor.shape)
        for i in range(1, len(dims) + 1):
            if i > len(shape):
                shape.insert(0, dims[-i])
            elif shape[-i] == 1:
                shape[-i] = dims[-i]
            elif dims[-i] not in (1, shape[-i]):
                raise RuntimeError(f"broadcast_tensors: shapes {[tuple(t.shape) for t in tensors]} do not broadcast")
    return tuple(tensor.expand(*shape) for tensor in tensors)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D tensors (``indexing`` ``"ij"``, or ``"xy"`` swapping the first
    two dims)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = list(tensors)
    if swap:
        ordered[0], ordered[1] = ordered[1], ordered[0]
    sizes = [t.numel() for t in ordered]
    grids = []
    for i, tensor in enumerate(ordered):
        view = [1] * len(ordered)
        view[i] = sizes[i]
        grids.append(tensor.reshape(*view).expand(*sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def movedim(input, source, destination):
    """``input`` with the dims ``source`` moved to positions ``destination``."""
    sources = [source] if isinstance(source, int) else list(source)
    destinations = [destination] if isinstance(destination, int) else list(destination)
    if len(sources) != len(destinations):
        raise RuntimeError("movedim: source and destination must have the same number of dims")
    rank = input.dim()
    sources = [s % rank for s in sources]
    destinations = [d % rank for d in destinations]
    order = [None] * rank
    for s, d in zip(sources, destinations):
        order[d] = s
    rest = iter(i for i in range(rank) if i not in sources)
    order = [next(rest) if o is None else o for o in order]
    return input.permute(*order)


def swapaxes(input, axis0, axis1):
    """``input.transpose(axis0, axis1)`` (``swapdims`` too)."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def tile(input, dims):
    """``input`` repeated ``dims`` times along each dim (dims prepended when shorter)."""
    dims = list(dims)
    if len(dims) < input.dim():
        dims = [1] * (input.dim() - len(dims)) + dims
    return input.repeat(*dims)


def hstack(tensors):
    """Concatenated along dim 1 (dim 0 for 1-D tensors)."""
    return _ag.cat(list(tensors), dim=0 if tensors[0].dim() == 1 else 1)


def vstack(tensors):
    """1-D tensors as rows, then concatenated along dim 0."""
    return _ag.cat([t.reshape(1, -1) if t.dim() == 1 else t for t in tensors], dim=0)


row_stack = vstack


def column_stack(tensors):
    """1-D tensors as columns, then concatenated along dim 1."""
    return _ag.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors], dim=1)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th difference along ``dim`` (``prepend``/``append`` joined first)."""
    if prepend is not None or append is not None:
        input = _ag.cat([t for t in (prepend, input, append) if t is not None], dim=dim)
    for _ in range(n):
        length = input.shape[dim]
        input = input.narrow(dim, 1, length - 1) - input.narrow(dim, 0, length - 1)
    return input


def trace(input):
    """The sum of a matrix's diagonal."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, got {input.dim()}-D")
    return input.diagonal().sum()


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    return input + tensor1 / tensor2 * value


def fmod(input, other):
    """The remainder of truncated division (the sign of ``input``, as C's ``fmod``)."""
    quotient = input / other
    return input - quotient.trunc() * other


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (NaNs equal with
    ``equal_nan``; infinities equal to themselves)."""
    other = _ag.as_tensor(other, device=input.device) if not isinstance(other, _ag.Tensor) else other
    close = (input - other).abs() <= atol + rtol * other.abs()
    close = close | (input == other)
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def count_nonzero(input, dim=None):
    """The number of nonzero elements (over ``dim``, an int or a tuple)."""
    nonzero = (input != 0).long()
    return nonzero.sum() if dim is None else nonzero.sum(dim)


def take_along_dim(input, indices, dim=None):
    """``input`` picked at ``indices`` along ``dim`` (flattened when ``dim`` is None), the two
    broadcast against each other except along ``dim``."""
    if dim is None:
        return input.flatten().gather(0, indices.flatten())
    dim = dim % input.dim()
    shape_in, shape_idx = list(input.shape), list(indices.shape)
    target_in, target_idx = [], []
    for d, (a, b) in enumerate(zip(shape_in, shape_idx)):
        common = max(a, b) if d != dim else None
        target_in.append(a if d == dim else common)
        target_idx.append(b if d == dim else common)
    return input.expand(*target_in).gather(dim, indices.expand(*target_idx))


def cumprod(input, dim, *, dtype=None):
    """The running product along ``dim``."""
    return input.cumprod(dim, dtype=dtype)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the position in the sorted last dim of ``sorted_sequence`` where it
    would be inserted (before equal values, or after them with ``right``/``side="right"``)."""
    if sorter is not None:
        raise NotImplementedError("searchsorted: sorter is not supported")
    right = right or side == "right"
    values = input if isinstance(input, _ag.Tensor) else _ag.tensor(input, device=sorted_sequence.device)
    scalar = values.dim() == 0
    if scalar:
        values = values.reshape(1)
    if sorted_sequence.dim() == 1:
        below = sorted_sequence <= values.unsqueeze(-1) if right else sorted_sequence < values.unsqueeze(-1)
    else:
        below = sorted_sequence.unsqueeze(-2) <= values.unsqueeze(-1) if right else sorted_sequence.unsqueeze(-2) < values.unsqueeze(-1)
    positions = below.long().sum(-1)
    if out_int32:
        positions = positions.int()
    return positions.reshape(()) if scalar else positions


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value among the sorted 1-D ``boundaries`` (``searchsorted`` with the
    boundaries as the sequence)."""
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bernoulli(input, p=None, *, generator=None):
    """Ones with probability ``input`` (or ``p``), zeros otherwise, drawn on the device."""
    probabilities = input if p is None else _ag.full_like(input, p)
    with _ag.drawing_from(generator):
        return probabilities.bernoulli()


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples: tensors ``mean``/``std`` elementwise (broadcast), or numbers with
    ``size``."""
    if isinstance(mean, _ag.Tensor) or isinstance(std, _ag.Tensor):
        reference = mean if isinstance(mean, _ag.Tensor) else std
        shape = broadcast_tensors(*(t for t in (mean, std) if isinstance(t, _ag.Tensor)))[0].shape
        noise = _ag.randn(*shape, dtype=reference.dtype, device=reference.device, generator=generator)
        return noise * std + mean
    if size is None:
        raise TypeError("normal: give tensors for mean or std, or a size")
    return _ag.randn(*size, dtype=dtype, device=device, generator=generator) * std + mean


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """``num_samples`` category indices per row of the (unnormalized, non-negative) weights
    ``input``: with replacement by inverting the cumulative distribution, without by the
    Gumbel top-k (each draw excludes the ones before, as PyTorch's)."""
    weights = input.float() if not input.is_floating_point() else input
    single = weights.dim() == 1
    if single:
        weights = weights.unsqueeze(0)
    if weights.dim() != 2:
        raise RuntimeError(f"multinomial: expected 1-D or 2-D weights, got {input.dim()}-D")
    categories = weights.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial: cannot take {num_samples} samples from {categories} categories without replacement")
    if bool((weights < 0).any()) or bool((~weights.isfinite()).any()):
        raise RuntimeError("multinomial: the weights must be finite and non-negative")
    if bool((weights.sum(-1) <= 0).any()):
        raise RuntimeError("multinomial: every row needs a positive total weight")
    if replacement:
        cdf = weights.cumsum(-1)
        cdf = cdf / cdf[:, -1:]
        u = _ag.rand(weights.shape[0], num_samples, device=weights.device, generator=generator)
        picks = (cdf.unsqueeze(1) <= u.unsqueeze(-1)).long().sum(-1).clamp(max=categories - 1)
    else:
        u = _ag.rand(*weights.shape, device=weights.device, generator=generator).clamp(min=1e-20)
        keys = weights.log() - (-u.log()).log()
        picks = keys.topk(num_samples, dim=-1)[1]
    return picks.squeeze(0) if single else picks


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of ``x1`` ``[*, P, M]`` and each row of ``x2``
    ``[*, R, M]``: ``[*, P, R]`` (``p`` may be 0, inf or any positive number). The gradient
    at a zero distance is zero, as PyTorch's; ``compute_mode`` is accepted (the differences
    are always formed directly, which is exact)."""
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    difference = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (difference != 0).to(difference.dtype).sum(-1)
    if p == float("inf"):
        return difference.amax(-1)
    if p == 1:
        return difference.sum(-1)
    powered = difference.square() if p == 2 else difference ** p
    total = powered.sum(-1)
    positive = total > 0
    safe = _ag.where(positive, total, _ag.ones_like(total))
    root = safe.sqrt() if p == 2 else safe ** (1.0 / p)
    return _ag.where(positive, root, _ag.zeros_like(total))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``[2, N]`` row and column indices of the lower triangle (on and below diagonal
    ``offset``) of a ``row`` x ``col`` matrix, in row-major order."""
    pairs = [(i, j) for i in range(row) for j in range(col) if j - i <= offset]
    return _pair_indices(pairs, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``[2, N]`` row and column indices of the upper triangle (on and above diagonal
    ``offset``) of a ``row`` x ``col`` matrix, in row-major order."""
    pairs = [(i, j) for i in range(row) for j in range(col) if j - i >= offset]
    return _pair_indices(pairs, dtype, device)


def _pair_indices(pairs, dtype, device):
    rows = [i for i, _ in pairs]
    cols = [j for _, j in pairs]
    return _ag.tensor([rows, cols], dtype=dtype or _ag.int64, device=device).reshape(2, len(pairs))


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (a 1-D tensor for one
    input)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _ag.stack([grid.reshape(-1) for grid in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The ``r``-element combinations of a 1-D tensor's elements, as rows (picked by index, so
    gradients flow)."""
    import itertools

    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    chosen = list(pick(range(input.shape[0]), r))
    if not chosen:
        return input.new_zeros(0, r) if r else input.new_zeros(0)
    index = _ag.tensor([i for combo in chosen for i in combo], dtype=_ag.int64, device=input.device)
    return input.index_select(0, index).reshape(len(chosen), r)


def tensordot(a, b, dims=2):
    """Sums of products over the last ``dims`` dims of ``a`` and the first of ``b`` (or the dim
    lists ``dims = ([a dims], [b dims])``), by one matrix product."""
    if isinstance(dims, int):
        dims_a = list(range(a.dim() - dims, a.dim()))
        dims_b = list(range(dims))
    else:
        dims_a, dims_b = [list(d) if isinstance(d, (list, tuple)) else [d] for d in dims]
    dims_a = [d % a.dim() for d in dims_a]
    dims_b = [d % b.dim() for d in dims_b]
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    contracted = 1
    for d in dims_a:
        contracted *= a.shape[d]
    left = a.permute(*free_a, *dims_a).reshape(-1, contracted)
    right = b.permute(*dims_b, *free_b).reshape(contracted, -1)
    return (left @ right).reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def kron(input, other):
    """The Kronecker product: every element of ``input`` times the whole of ``other``."""
    rank = max(input.dim(), other.dim())
    a = input.reshape(*([1] * (rank - input.dim())), *input.shape)
    b = other.reshape(*([1] * (rank - other.dim())), *other.shape)
    interleaved_a = a.reshape(*[v for size in a.shape for v in (size, 1)])
    interleaved_b = b.reshape(*[v for size in b.shape for v in (1, size)])
    return (interleaved_a * interleaved_b).reshape(*[x * y for x, y in zip(a.shape, b.shape)])


def block_diag(*tensors):
    """The matrices (0-, 1- or 2-D) along the diagonal of one matrix, zeros elsewhere."""
    matrices = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    columns = sum(m.shape[1] for m in matrices)
    rows, start = [], 0
    for m in matrices:
        parts = [m.new_zeros(m.shape[0], start)] if start else []
        parts.append(m)
        rest = columns - start - m.shape[1]
        if rest:
            parts.append(m.new_zeros(m.shape[0], rest))
        rows.append(_ag.cat(parts, 1) if len(parts) > 1 else m)
        start += m.shape[1]
    return _ag.cat(rows, 0)


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    towards the second)."""
    first, second = dims
    k %= 4
    if k == 1:
        return input.flip(second).transpose(first, second)
    if k == 2:
        return input.flip(first).flip(second)
    if k == 3:
        return input.flip(first).transpose(first, second)
    return input.clone()


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices whose diagonal (``offset`` above or below) holds the last dim of ``input``
    (the two new dims last, as with PyTorch's defaults)."""
    if (dim1, dim2) not in ((-2, -1), (input.dim() - 1, input.dim())):
        raise NotImplementedError("diag_embed: only the default dim1=-2, dim2=-1 are supported")
    size = input.shape[-1] + abs(offset)
    index = _ag.arange(input.shape[-1], device=input.device)
    rows, cols = index + max(-offset, 0), index + max(offset, 0)
    flat = input.new_zeros(*input.shape[:-1], size * size)
    positions = (rows * size + cols).expand(*input.shape).contiguous()
    return flat.scatter(-1, positions, input).reshape(*input.shape[:-1], size, size)


__all__ = [
    "tril_indices", "triu_indices", "cartesian_prod", "combinations", "tensordot", "kron",
    "block_diag", "rot90", "diag_embed",
    "cdist",
    "compile", "get_num_threads", "set_num_threads", "set_float32_matmul_precision", "get_float32_matmul_precision", "finfo", "iinfo",
    "broadcast_tensors", "meshgrid", "movedim", "swapaxes", "swapdims", "tile", "hstack",
    "vstack", "row_stack", "column_stack", "diff", "trace", "addcmul", "addcdiv", "fmod",
    "isclose", "count_nonzero", "take_along_dim", "cumprod", "searchsorted", "bucketize",
    "bernoulli", "normal", "multinomial",
]
