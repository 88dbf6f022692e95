"""Tensor methods written in Python. ``Tensor.__getattr__`` finds them here when the native
class has no attribute of that name and binds them to the tensor, so ``x.numpy()`` calls
``numpy(x)`` below."""

import anygrad as _ag


def numpy(self, *, force=False):
    """The values as a numpy array. On the CPU the array shares the tensor's memory, as in
    PyTorch (a write through either shows in the other), except for bool and int64 tensors
    (int64 values are stored in 32 bits), which give a copy; a GPU tensor's values are copied.
    ``force=True`` gives a copy always (and allows tensors that require grad)."""
    import numpy as np

    if self.requires_grad and not force:
        raise RuntimeError(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        )
    if not force:
        shared = self._host_array()
        if shared is not None:
            return np.asarray(shared)
    raw, name, shape = self._raw()
    array = np.frombuffer(raw, dtype=np.dtype(name).newbyteorder("<")).reshape(shape)
    target = self.dtype.name
    if target == "float16":
        array = array.astype(np.float16)
    elif target == "int64":
        array = array.astype(np.int64)
    elif target == "bool":
        array = array.astype(np.bool_)
    else:
        array = array.astype(np.dtype(target), copy=True)
    return array


def __dlpack__(self, *, stream=None, **kwargs):
    """The tensor as a DLPack capsule (``numpy.from_dlpack``, ``torch.from_dlpack``): a CPU
    copy of its values that the capsule owns; a GPU tensor is a ``BufferError``."""
    if self.device.type != "cpu":
        raise BufferError(
            f"__dlpack__: the tensor is on {self.device}; anygrad exchanges DLPack tensors on the "
            "CPU (call .cpu() first)"
        )
    return self.detach().numpy().__dlpack__(stream=stream, **kwargs)


def __dlpack_device__(self):
    """``(kDLCPU, 0)``: exported tensors live on the CPU."""
    if self.device.type != "cpu":
        raise BufferError(f"__dlpack_device__: the tensor is on {self.device}; call .cpu() first")
    return (1, 0)


def array_of(self, dtype=None):
    """``numpy.asarray(tensor)``."""
    array = numpy(self.detach())
    return array if dtype is None else array.astype(dtype)


def get_device(self):
    """The GPU number, or -1 on the CPU."""
    index = self.device.index
    return -1 if index is None else index


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of ``size`` with this tensor's dtype and device."""
    return _ag.zeros(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    """Ones of ``size`` with this tensor's dtype and device."""
    return _ag.ones(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` everywhere, with this tensor's dtype and device."""
    return _ag.full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    """Zeros of ``size`` (PyTorch leaves them uninitialised)."""
    return new_zeros(self, *size, dtype=dtype, device=device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A tensor of ``data`` with this tensor's dtype and device."""
    return _ag.tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _float_op(self, function):
    """``function`` of the float version of this tensor."""
    return function(self if self.is_floating_point() else self.float())


def frac(self):
    """The fractional part."""
    return self - self.trunc()


def log2(self):
    """Base-2 logarithm."""
    return _float_op(self, lambda x: x.log() * 1.4426950408889634)


def log10(self):
    """Base-10 logarithm."""
    return _float_op(self, lambda x: x.log() * 0.4342944819032518)


def log1p(self):
    """log(1 + x)."""
    return _float_op(self, lambda x: (x + 1).log())


def expm1(self):
    """exp(x) - 1."""
    return _float_op(self, lambda x: x.exp() - 1)


def exp2(self):
    """2 ** x."""
    return _float_op(self, lambda x: (x * 0.6931471805599453).exp())


def tan(self):
    """Tangent."""
    return _float_op(self, lambda x: x.sin() / x.cos())


def sinh(self):
    """Hyperbolic sine."""
    return _float_op(self, lambda x: (x.exp() - (-x).exp()) * 0.5)


def cosh(self):
    """Hyperbolic cosine."""
    return _float_op(self, lambda x: (x.exp() + (-x).exp()) * 0.5)


def isnan(self):
    """Where the elements are NaN."""
    return self != self


def isinf(self):
    """Where the elements are infinite."""
    if not self.is_floating_point():
        return _ag.zeros_like(self, dtype=_ag.bool)
    return self.abs() == float("inf")


def isfinite(self):
    """Where the elements are finite."""
    return ~(isnan(self) | isinf(self))


def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is close to ``other``'s."""
    other = _ag.as_tensor(other, device=self.device)
    close = (self - other).abs() <= atol + rtol * other.abs()
    if equal_nan:
        close = close | (isnan(self) & isnan(other))
    return bool(close.all())


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where the elements are close to ``other``'s."""
    other = _ag.as_tensor(other, device=self.device)
    close = (self - other).abs() <= atol + rtol * other.abs()
    if equal_nan:
        close = close | (isnan(self) & isnan(other))
    return close


def equal(self, other):
    """Whether both tensors have the same shape and elements."""
    return tuple(self.shape) == tuple(other.shape) and bool((self == other).all())


def dot(self, other):
    """The inner product of two vectors."""
    return (self * other).sum()


def outer(self, other):
    """The outer product of two vectors."""
    return self.unsqueeze(1) * other.unsqueeze(0)


def dist(self, other, p=2):
    """The p-norm of the difference."""
    return (self - other).norm(p)


def diag(self, diagonal=0):
    """The diagonal of a matrix, or the matrix of a vector."""
    if self.dim() == 1:
        n = self.shape[0] + builtin_abs(diagonal)
        out = _ag.zeros(n, n, dtype=self.dtype, device=self.device)
        rows = _ag.arange(self.shape[0], device=self.device)
        out[rows + builtin_max(-diagonal, 0), rows + builtin_max(diagonal, 0)] = self
        return out
    return _ag.diagonal(self, diagonal)


import builtins as _builtins  # noqa: E402

builtin_abs = _builtins.abs
builtin_max = _builtins.max
builtin_min = _builtins.min


def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None): an int, or
    a tensor (or list) with one count per element along ``dim``. With ``repeats`` omitted the
    tensor itself holds the counts and the result repeats ``0, 1, 2, ...`` by them
    (``torch.repeat_interleave(counts)``). Gradients flow back through the copies."""
    if repeats is None:
        counts = self
        if counts.dim() > 1 or counts.is_floating_point():
            raise RuntimeError("repeat_interleave: the repeats must be a 0-d or 1-d tensor of integers")
        return repeat_interleave(_ag.arange(counts.numel(), device=self.device), counts.reshape(-1), 0)
    x = self.flatten() if dim is None else self
    dim = 0 if dim is None else dim
    if dim < 0:
        dim += x.dim()
    size = x.shape[dim]
    if isinstance(repeats, _ag.Tensor) and repeats.numel() == 1:
        repeats = int(repeats.item())
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        index = _ag.arange(size, device=x.device).unsqueeze(1).expand(size, repeats).reshape(-1)
        return x.index_select(dim, index)
    counts = repeats.reshape(-1).tolist() if isinstance(repeats, _ag.Tensor) else [int(c) for c in repeats]
    if len(counts) != size:
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got repeats.size(0) = {len(counts)} and input.size({dim}) = {size}")
    if any(count < 0 for count in counts):
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    picks = [position for position, count in enumerate(counts) for _ in range(int(count))]
    return x.index_select(dim, _ag.tensor(picks, dtype=_ag.int64, device=x.device))


def std_mean(self, dim=None, unbiased=True, keepdim=False):
    """``(std, mean)`` over ``dim``."""
    return self.std(dim, unbiased, keepdim), self.mean(dim, keepdim)


def var_mean(self, dim=None, unbiased=True, keepdim=False):
    """``(var, mean)`` over ``dim``."""
    return self.var(dim, unbiased, keepdim), self.mean(dim, keepdim)


def numel_of(self):
    """The number of elements."""
    return self.numel()


def zero_grad(self):
    """Clear the gradient."""
    self.grad = None


def apply_(self, function):
    """Apply a Python function to every element, in place (CPU work, like PyTorch's)."""
    values = [function(v) for v in self.flatten().tolist()]
    self.copy_(_ag.tensor(values, dtype=self.dtype).reshape(*self.shape))
    return self


def pin_memory(self):
    """Pinned memory does not apply: the tensor itself."""
    return self


def share_memory_(self):
    """Shared memory does not apply: the tensor itself."""
    return self


def one_hot(self, num_classes=-1):
    """One-hot rows (int64)."""
    return self._one_hot(num_classes)


def item_list(self):
    """The values as a flat Python list."""
    return self.flatten().tolist()


def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    """NaN and infinities replaced by finite numbers."""
    if not self.is_floating_point():
        return self.clone()
    big = 3.4028234663852886e38 if self.dtype != _ag.float16 else 65504.0
    out = _ag.where(isnan(self), nan, self)
    out = _ag.where(out == float("inf"), big if posinf is None else posinf, out)
    return _ag.where(out == float("-inf"), -big if neginf is None else neginf, out)


def lerp(self, end, weight):
    """``self + weight * (end - self)``: ``weight`` a number or a tensor (broadcast with
    ``self`` and ``end``); gradients flow to all three."""
    return self + (end - self) * weight


def addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """``beta * self + alpha * mat1 @ mat2``."""
    return self * beta + (mat1 @ mat2) * alpha


def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """``beta * self + alpha * batch1 @ batch2``."""
    return self * beta + (batch1 @ batch2) * alpha


def add_scaled_(self, other, alpha):
    """In place: ``self += alpha * other``."""
    return self.add_(other, alpha=alpha)


def addcmul_(self, tensor1, tensor2, value=1):
    """In place: ``self += value * tensor1 * tensor2``."""
    return self.add_(tensor1 * tensor2 * value)


def addcdiv_(self, tensor1, tensor2, value=1):
    """In place: ``self += value * tensor1 / tensor2``."""
    return self.add_(tensor1 / tensor2 * value)


def lerp_(self, end, weight):
    """In place: ``self += weight * (end - self)``."""
    return self.add_((end - self) * weight)


def sqrt_(self):
    """In place square root."""
    return self.copy_(self.sqrt())


def exp_(self):
    """In place exponential."""
    return self.copy_(self.exp())


def relu_(self):
    """In place ReLU."""
    return self.copy_(self.relu())


def neg_(self):
    """In place negation."""
    return self.copy_(-self)


def abs_(self):
    """In place absolute value."""
    return self.copy_(self.abs())


def sigmoid_(self):
    """In place logistic function."""
    return self.copy_(self.sigmoid())


def tanh_(self):
    """In place hyperbolic tangent."""
    return self.copy_(self.tanh())


def bernoulli(self):
    """0/1 samples with these probabilities."""
    return (_ag.rand_like(self.float()) < self).to(self.dtype)


def bernoulli_(self, p=0.5):
    """In place: 0/1 samples with probability ``p``."""
    return self.copy_((_ag.rand(*self.shape, device=self.device) < p).to(self.dtype))


def exponential_(self, lambd=1.0):
    """In place: exponential samples."""
    return self.copy_(-(1 - _ag.rand(*self.shape, device=self.device)).log() / lambd)


def random_(self, low=0, high=None):
    """In place: random integers in [low, high)."""
    if high is None:
        low, high = 0, low
    return self.copy_(_ag.randint(low, high, tuple(self.shape), device=self.device).to(self.dtype))


def masked_scatter(self, mask, source):
    """A copy with the positions where ``mask`` (broadcast to this shape) holds filled, in
    row-major order, with the first elements of ``source``; gradients flow to both."""
    mask = mask.bool().expand(*self.shape) if tuple(mask.shape) != tuple(self.shape) else mask.bool()
    count = int(mask.sum().item())
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} elements, got {source.numel()}")
    return index_put(self, (mask,), source.reshape(-1)[:count])


def masked_scatter_(self, mask, source):
    """In place ``masked_scatter``."""
    return self.copy_(masked_scatter(self, mask, source))


def index_fill(self, dim, index, value):
    """``value`` at ``index`` along ``dim``."""
    out = self.clone()
    key = [slice(None)] * self.dim()
    key[dim] = index
    out[tuple(key)] = value
    return out


def index_fill_(self, dim, index, value):
    """In place: ``value`` at ``index`` along ``dim``."""
    key = [slice(None)] * self.dim()
    key[dim] = index
    self[tuple(key)] = value
    return self


def _scatter_indices(self, dim, index):
    """The full index tuple of ``scatter`` along ``dim``: ``index`` itself there and, for
    every other dim, the position along it (an ``arange`` broadcast to ``index``'s shape)."""
    if index.dim() != self.dim():
        raise RuntimeError(f"scatter: index has {index.dim()} dims but the tensor has {self.dim()}")
    dim = dim % self.dim() if self.dim() else 0
    positions = []
    for d in range(self.dim()):
        if d == dim:
            positions.append(index)
        else:
            shape = [1] * self.dim()
            shape[d] = index.shape[d]
            positions.append(_ag.arange(index.shape[d], device=self.device).reshape(*shape).expand(*index.shape))
    return tuple(positions)


def scatter(self, dim, index, src=None, value=None, *, reduce=None):
    """A copy with ``src`` (a tensor, whose leading block of ``index``'s shape is read, or a
    number; ``value=`` too) written at ``index`` along ``dim``: ``out[i][index[i][j]] =
    src[i][j]`` for ``dim=1``. A position named more than once keeps one value (their mean
    here, which is that value when they agree). ``reduce="add"`` adds instead
    (``scatter_add``). Gradients flow to the tensor and ``src``."""
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter: expected src or value")
    if not isinstance(src, _ag.Tensor):
        src = _ag.full(tuple(index.shape), src, dtype=self.dtype, device=self.device)
    else:
        src = src[tuple(slice(0, size) for size in index.shape)].to(self.dtype)
    if reduce in ("add", "sum"):
        return self.scatter_add(dim, index, src)
    if reduce in ("multiply", "prod"):
        raise NotImplementedError("scatter: reduce='multiply' is not supported (reduce='add' is)")
    if reduce is not None:
        raise ValueError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
    return index_put(self, _scatter_indices(self, dim, index), src)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """In place ``scatter``."""
    return self.copy_(scatter(self, dim, index, src, value, reduce=reduce))


def scatter_add_(self, dim, index, src):
    """In place ``scatter_add``: ``self[i][index[i][j]] += src[i][j]`` for ``dim=1``, repeated
    positions adding up."""
    return self.copy_(self.scatter_add(dim, index, src))


def index_add_(self, dim, index, source, *, alpha=1):
    """In place ``index_add``: ``self.index_select(dim, index) += alpha * source``, repeated
    positions adding up."""
    return self.copy_(self.index_add(dim, index, source if alpha == 1 else source * alpha))


def index_copy(self, dim, index, source):
    """A copy with the slices at ``index`` along ``dim`` replaced by ``source``'s slices
    (``index_put`` with the dim moved to the front); gradients flow to both."""
    dim = dim % self.dim()
    moved = _ag.movedim(self, dim, 0)
    result = index_put(moved, (index,), _ag.movedim(source, dim, 0))
    return _ag.movedim(result, 0, dim)


def index_copy_(self, dim, index, source):
    """In place ``index_copy``."""
    return self.copy_(index_copy(self, dim, index, source))


def fill_diagonal_(self, fill_value, wrap=False):
    """In place: ``fill_value`` on the main diagonal of a matrix (or of a tensor whose dims
    are all equal); with ``wrap`` a tall matrix's diagonal starts again every ``columns + 1``
    rows, as PyTorch's."""
    if self.dim() < 2:
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1")
    sizes = tuple(self.shape)
    if self.dim() > 2 and len(set(sizes)) != 1:
        raise RuntimeError("fill_diagonal_: all dimensions of input must be of equal length")
    step = 0
    stride = 1
    for size in reversed(sizes):
        step += stride
        stride *= size
    total = self.numel()
    if self.dim() == 2 and not wrap:
        total = builtin_min(sizes[0], sizes[1]) * sizes[1]
    positions = _ag.arange(0, total, step, device=self.device)
    flat = self.reshape(-1)
    return self.copy_(index_put(flat, (positions,), _ag.tensor(fill_value, dtype=self.dtype, device=self.device)).reshape(*sizes))


def clamp_min(self, min):
    """Clamp from below."""
    return self.clamp(min=min)


def clamp_max(self, max):
    """Clamp from above."""
    return self.clamp(max=max)


def sum_to_size(self, *size):
    """Sum broadcast dims away to ``size``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = self
    extra = out.dim() - len(size)
    if extra:
        out = out.sum(tuple(range(extra)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and out.shape[i] != 1)
    return out.sum(dims, keepdim=True) if dims else out


def tolist_flat(self):
    """The values as a flat list."""
    return self.reshape(-1).tolist()


def is_complex(self):
    """anygrad has no complex dtypes."""
    return False


def is_shared(self):
    """Shared memory does not apply."""
    return False


def storage_offset(self):
    """Not tracked in Python: 0."""
    return 0


def argwhere(self):
    """The positions of the nonzero elements."""
    return self.nonzero()


def cpu_numpy(self):
    """The values as numpy, from any device."""
    return self.detach().cpu().numpy()


def count_nonzero(self, dim=None):
    """How many elements are nonzero."""
    return (self != 0).sum(dim)


def float_power(self, exponent):
    """``self ** exponent`` in float64."""
    return self.double() ** exponent


def logical_and(self, other):
    """Elementwise and (bool)."""
    return self.bool() & _ag.as_tensor(other, device=self.device).bool()


def logical_or(self, other):
    """Elementwise or (bool)."""
    return self.bool() | _ag.as_tensor(other, device=self.device).bool()


def logical_xor(self, other):
    """Elementwise exclusive or (bool)."""
    return self.bool() ^ _ag.as_tensor(other, device=self.device).bool()


def mean_keep(self, dims):
    """The mean over ``dims`` with kept dims."""
    return self.mean(dims, keepdim=True)


def softplus(self, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    scaled = self * beta
    soft = (scaled.clamp(max=threshold).exp() + 1).log() / beta
    return _ag.where(scaled > threshold, self, soft)


def type_name(self):
    """The dtype's name."""
    return self.dtype.name


def _index_put_positions(self, indices, op):
    """The flat positions over the first ``len(indices)`` dims that ``indices`` (a tuple of
    index tensors, bool masks allowed, broadcast together) pick, and the shape of the picked
    block: ``(positions, index_shape, rest_shape)``."""
    if isinstance(indices, _ag.Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}: indices must be a tuple of index tensors")
    expanded = []
    for index in indices:
        index = index if isinstance(index, _ag.Tensor) else _ag.tensor(index, device=self.device)
        if index.dtype == _ag.bool or index.dtype == _ag.uint8:
            expanded.extend(index.bool().nonzero(as_tuple=True))
        elif index.is_floating_point():
            raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors")
        else:
            expanded.append(index.to(self.device))
    if len(expanded) > self.dim():
        raise IndexError(f"{op}: too many indices ({len(expanded)}) for a tensor of dimension {self.dim()}")
    expanded = list(_ag.broadcast_tensors(*expanded)) if expanded else []
    sizes = tuple(self.shape)
    positions = None
    for dim, index in enumerate(expanded):
        index = index.long()
        index = _ag.where(index < 0, index + sizes[dim], index)
        positions = index if positions is None else positions * sizes[dim] + index
    index_shape = tuple(expanded[0].shape) if expanded else ()
    return positions.reshape(-1), index_shape, sizes[len(expanded):], len(expanded)


def index_put(self, indices, values, accumulate=False):
    """A copy with ``values`` put at ``indices`` (a tuple of index tensors, as
    ``self[indices] = values``); with ``accumulate`` they are added instead (repeated
    positions add up). Gradients flow to ``self`` and ``values``."""
    positions, index_shape, rest, count = _index_put_positions(self, indices, "index_put")
    lead = 1
    for size in tuple(self.shape)[:count]:
        lead *= size
    flat = self.reshape(lead, *rest)
    if not isinstance(values, _ag.Tensor):
        values = _ag.tensor(values, dtype=self.dtype, device=self.device)
    # bool and uint8 are worked in int64 (index_add has no kernels for them), then converted back.
    work = flat if flat.is_floating_point() or flat.dtype in (_ag.int32, _ag.int64) else flat.long()
    source = values.to(work.dtype).expand(*index_shape, *rest).reshape(positions.shape[0], *rest)
    if accumulate:
        return work.index_add(0, positions, source).to(self.dtype).reshape(*self.shape)
    hit_shape = (lead,) + (1,) * len(rest)
    hits = _ag.zeros(lead, dtype=_ag.float32, device=self.device).index_add(
        0, positions, _ag.ones(positions.shape[0], dtype=_ag.float32, device=self.device)
    )
    placed = _ag.zeros_like(work).index_add(0, positions, source)
    # A position picked more than once keeps one of its values in PyTorch (which one is
    # unspecified); here their mean (rounded down for integers), which is that value when
    # they agree.
    counts = hits.clamp(min=1.0).reshape(*hit_shape).to(work.dtype)
    placed = placed / counts if work.is_floating_point() else placed // counts
    return _ag.where((hits > 0).reshape(*hit_shape), placed, work).to(self.dtype).reshape(*self.shape)


def index_put_(self, indices, values, accumulate=False):
    """In place: ``values`` put at ``indices`` (a tuple of index tensors), or added with
    ``accumulate``; returns the tensor."""
    return self.copy_(index_put(self, indices, values, accumulate=accumulate))


def kthvalue(self, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` (k counts from 1) and its position, as
    ``(values, indices)`` with ``.values`` and ``.indices``."""
    size = self.shape[dim] if self.dim() else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue: k ({k}) is out of range for a dimension of size {size}")
    source = self if self.dim() else self.reshape(1)
    values, indices = source.sort(dim)
    values, indices = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    if not keepdim or not self.dim():
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    if not self.dim():
        values, indices = values.reshape(()), indices.reshape(())
    return _ag._return_types.kthvalue(values, indices.long())


def median(self, dim=None, keepdim=False):
    """The median (the lower of the two middle values for an even count, as PyTorch): of
    every element when ``dim`` is None (a 0-d tensor), else along ``dim`` as
    ``(values, indices)`` with ``.values`` and ``.indices``."""
    if dim is None:
        flat = self.reshape(-1)
        values, _ = flat.sort()
        return values[(flat.shape[0] - 1) // 2]
    size = self.shape[dim] if self.dim() else 1
    result = kthvalue(self, (size - 1) // 2 + 1, dim, keepdim)
    return _ag._return_types.median(result.values, result.indices)


def mode(self, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the
    position of its last occurrence, as ``(values, indices)`` with ``.values`` and
    ``.indices``."""
    if not self.dim():
        return _ag._return_types.mode(self.clone(), _ag.zeros((), dtype=_ag.int64, device=self.device))
    moved = _ag.movedim(self, dim, -1)
    values, order = moved.sort(-1)
    counts = (values.unsqueeze(-1) == values.unsqueeze(-2)).long().sum(-1)
    first = counts.argmax(-1, keepdim=True)
    last = first + counts.gather(-1, first) - 1
    picked = values.gather(-1, first)
    positions = order.long().gather(-1, last)
    picked, positions = _ag.movedim(picked, -1, dim), _ag.movedim(positions, -1, dim)
    if not keepdim:
        picked, positions = picked.squeeze(dim), positions.squeeze(dim)
    return _ag._return_types.mode(picked, positions)


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements of the flattened tensor, in ascending order (also when
    ``sorted=False``, where PyTorch leaves the order unspecified); with ``return_inverse``
    also where each element went (shaped like the input), with ``return_counts`` how often
    each distinct element occurs. With ``dim``, the distinct slices along ``dim`` (rows for
    ``dim=0``) in lexicographic order, the inverse then naming each slice's group."""
    if dim is not None:
        return _unique_slices(self, dim, return_inverse, return_counts)
    flat = self.detach().reshape(-1)
    if flat.shape[0] == 0:
        empty = _ag.zeros(0, dtype=_ag.int64, device=self.device)
        out = [flat]
        if return_inverse:
            out.append(_ag.zeros(*self.shape, dtype=_ag.int64, device=self.device))
        if return_counts:
            out.append(empty)
        return out[0] if len(out) == 1 else tuple(out)
    values, order = flat.sort()
    starts = _ag.ones(values.shape[0], dtype=_ag.bool, device=self.device)
    if values.shape[0] > 1:
        starts[1:] = values[1:] != values[:-1]
    output = values.masked_select(starts)
    out = [output]
    group = starts.long().cumsum(0) - 1
    if return_inverse:
        inverse = _ag.zeros(values.shape[0], dtype=_ag.int64, device=self.device)
        inverse = inverse.scatter_add(0, order.long(), group)
        out.append(inverse.reshape(*self.shape))
    if return_counts:
        counts = _ag.zeros(output.shape[0], dtype=_ag.int64, device=self.device)
        out.append(counts.index_add(0, group, _ag.ones_like(group)))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_slices(self, dim, return_inverse, return_counts):
    """``unique(dim=...)``: the slices along ``dim`` compared whole. The order is found on a
    CPU copy (numpy's lexicographic ``unique``); the output picks each group's first slice
    from the tensor itself, on its device."""
    import numpy as np

    if self.dim() == 0:
        raise IndexError("unique: dim specified for a 0-d tensor")
    dim = dim % self.dim()
    size = self.shape[dim]
    rows = _ag.movedim(self.detach(), dim, 0).reshape(size, -1).cpu().numpy() if size else np.zeros((0, 0))
    if size == 0:
        first = inverse = counts = np.zeros(0, dtype=np.int64)
    else:
        _, first, inverse, counts = np.unique(rows, axis=0, return_index=True, return_inverse=True, return_counts=True)
    output = self.detach().index_select(dim, _ag.tensor(np.asarray(first, dtype=np.int64), device=self.device))
    out = [output]
    if return_inverse:
        out.append(_ag.tensor(np.asarray(inverse, dtype=np.int64).reshape(-1), device=self.device))
    if return_counts:
        out.append(_ag.tensor(np.asarray(counts, dtype=np.int64), device=self.device))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(self, weights=None, minlength=0):
    """How often each value ``0, 1, ..., max`` occurs in this 1-D tensor of non-negative
    integers (int64, at least ``minlength`` long); with ``weights`` (one per element) their
    sums instead (the weights' float dtype; float64 for integer weights)."""
    if self.dim() != 1 or self.is_floating_point() or self.dtype == _ag.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("bincount: minlength should be >= 0")
    length = minlength
    if self.numel():
        if int(self.min().item()) < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        length = builtin_max(length, int(self.max().item()) + 1)
    index = self.long()
    if weights is None:
        counts = _ag.zeros(length, dtype=_ag.int64, device=self.device)
        return counts.index_add(0, index, _ag.ones(self.numel(), dtype=_ag.int64, device=self.device))
    if tuple(weights.shape) != tuple(self.shape):
        raise RuntimeError("bincount: weights should be 1-d and have the same length as input")
    dtype = weights.dtype if weights.is_floating_point() else _ag.float64
    return _ag.zeros(length, dtype=dtype, device=self.device).index_add(0, index, weights.to(dtype))


def _in_place(name):
    """The in-place form ``name_`` of the method ``name`` (computed, then copied in)."""

    def method(self, *args, **kwargs):
        return self.copy_(getattr(self, name)(*args, **kwargs))

    method.__name__ = name + "_"
    method.__doc__ = f"In place ``{name}``."
    return method


for _name in (
    "floor", "ceil", "round", "trunc", "frac", "log", "log2", "log10", "log1p", "expm1",
    "reciprocal", "rsqrt", "square", "sign", "sin", "cos", "tan", "sinh", "cosh", "atan",
    "asin", "acos", "erf", "clamp_min", "clamp_max", "nan_to_num", "logical_not", "remainder",
    "masked_fill", "gelu", "silu", "rad2deg", "deg2rad", "atan2", "logaddexp",
):
    if _name + "_" not in globals():
        globals()[_name + "_"] = _in_place(_name)
del _name


def _atan_reduced(x):
    """atan of ``x >= 0`` (Cephes' single-precision ``atanf``: the argument reduced below
    tan(pi/8), then a degree-9 odd polynomial), with every branch kept finite so gradients
    through ``where`` stay finite."""
    import math

    big = x > 2.414213562373095
    middle = (x > 0.4142135623730950) & ~big
    safe = _ag.where(big, x, _ag.ones_like(x))
    reduced = _ag.where(big, -1.0 / safe, _ag.where(middle, (x - 1.0) / (x + 1.0), x))
    offset = _ag.where(big, math.pi / 2, _ag.where(middle, math.pi / 4, 0.0))
    z = reduced * reduced
    polynomial = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z
    return offset + reduced + reduced * polynomial


def atan(self):
    """The arctangent (float32 accuracy; gradients by autograd through the formula)."""
    def odd(x):
        # |x| written with ``where`` so that its slope at 0 is 1 (atan'(0) = 1).
        negative = x < 0
        value = _atan_reduced(_ag.where(negative, -x, x))
        return _ag.where(negative, -value, value)

    return _float_op(self, odd)


def atan2(self, other):
    """The angle of the point ``(other, self)`` (x = ``other``, y = ``self``) in ``(-pi, pi]``."""
    import math

    y = self if self.is_floating_point() else self.float()
    x = other if isinstance(other, _ag.Tensor) else _ag.full_like(y, float(other))
    x = x if x.is_floating_point() else x.float()
    x_zero = x == 0
    safe_x = _ag.where(x_zero, _ag.ones_like(x), x)
    base = atan(y / safe_x)
    quadrant = _ag.where(x < 0, _ag.where(y >= 0, math.pi, -math.pi), 0.0)
    on_axis = _ag.where(y > 0, math.pi / 2, _ag.where(y < 0, -math.pi / 2, 0.0))
    return _ag.where(x_zero, on_axis + base * 0, base + quadrant)


def asin(self):
    """The arcsine (``atan2(x, sqrt(1 - x²))``)."""
    x = self if self.is_floating_point() else self.float()
    return atan2(x, (1 - x * x).clamp(min=0.0).sqrt())


def acos(self):
    """The arccosine (``atan2(sqrt(1 - x²), x)``)."""
    x = self if self.is_floating_point() else self.float()
    return atan2((1 - x * x).clamp(min=0.0).sqrt(), x)


arctan, arcsin, arccos, arctan2 = atan, asin, acos, atan2


def rad2deg(self):
    """Radians to degrees."""
    return _float_op(self, lambda x: x * (180.0 / 3.141592653589793))


def deg2rad(self):
    """Degrees to radians."""
    return _float_op(self, lambda x: x * (3.141592653589793 / 180.0))


def logaddexp(self, other):
    """``log(exp(self) + exp(other))``, computed stably."""
    other = other if isinstance(other, _ag.Tensor) else _ag.full_like(self, float(other))
    return _ag.maximum(self, other) + log1p((-(self - other).abs()).exp())


def heaviside(self, values):
    """0 below zero, 1 above, ``values`` at zero."""
    values = values if isinstance(values, _ag.Tensor) else _ag.tensor(values, dtype=self.dtype, device=self.device)
    return _ag.where(self == 0, values.to(self.dtype), (self > 0).to(self.dtype))


def nansum(self, dim=None, keepdim=False):
    """The sum with NaNs counted as zero."""
    cleaned = _ag.where(isnan(self), 0.0, self)
    return cleaned.sum() if dim is None else cleaned.sum(dim, keepdim)


def nanmean(self, dim=None, keepdim=False):
    """The mean of the elements that are not NaN."""
    counted = (~isnan(self)).to(self.dtype)
    total = nansum(self, dim, keepdim)
    count = counted.sum() if dim is None else counted.sum(dim, keepdim)
    return total / count


def diagonal(self, offset=0, dim1=0, dim2=1):
    """The diagonal of the matrices in dims ``dim1`` and ``dim2`` (``offset`` above or
    below), as the last dim."""
    dim1, dim2 = dim1 % self.dim(), dim2 % self.dim()
    moved = _ag.movedim(self, (dim1, dim2), (-2, -1))
    rows, cols = moved.shape[-2], moved.shape[-1]
    start_row, start_col = builtin_max(-offset, 0), builtin_max(offset, 0)
    count = builtin_max(0, builtin_min(rows - start_row, cols - start_col))
    index = _ag.arange(count, device=self.device)
    return moved[..., index + start_row, index + start_col]


def broadcast_to(self, size):
    """The tensor expanded to ``size`` (``expand``)."""
    return self.expand(*size)


def mv(self, vec):
    """Matrix times vector."""
    return self @ vec


def multinomial(self, num_samples, replacement=False, *, generator=None):
    """``torch.multinomial(self, ...)``: category indices drawn by these weights."""
    return _ag.multinomial(self, num_samples, replacement, generator=generator)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """The elements with each run of equal consecutive ones collapsed to one (of the
    flattened tensor; ``dim`` not supported), with the inverse and counts as ``unique``."""
    if dim is not None:
        raise NotImplementedError("unique_consecutive: dim is not supported (the flattened tensor only)")
    flat = self.detach().reshape(-1)
    if flat.shape[0] == 0:
        out = [flat]
    else:
        starts = _ag.ones(flat.shape[0], dtype=_ag.bool, device=self.device)
        if flat.shape[0] > 1:
            starts[1:] = flat[1:] != flat[:-1]
        group = starts.long().cumsum(0) - 1
        out = [flat.masked_select(starts)]
    if return_inverse:
        out.append(group.reshape(*self.shape) if flat.shape[0] else _ag.zeros(*self.shape, dtype=_ag.int64, device=self.device))
    if return_counts:
        if flat.shape[0]:
            out.append(_ag.zeros(out[0].shape[0], dtype=_ag.int64, device=self.device).index_add(0, group, _ag.ones_like(group)))
        else:
            out.append(_ag.zeros(0, dtype=_ag.int64, device=self.device))
    return out[0] if len(out) == 1 else tuple(out)


def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantile(s) (a number or 1-D tensor in [0, 1]) of the flattened tensor or
    along ``dim``, with ``interpolation`` ``linear``, ``lower``, ``higher``, ``midpoint`` or
    ``nearest`` between the two order statistics around it (gradients through the values)."""
    import math

    source = self.reshape(-1) if dim is None else _ag.movedim(self, dim, -1)
    ordered = source.sort(-1).values
    size = ordered.shape[-1]
    scalar = not isinstance(q, _ag.Tensor) and not isinstance(q, (list, tuple))
    levels = [float(q)] if scalar else [float(v) for v in (q.reshape(-1).tolist() if isinstance(q, _ag.Tensor) else q)]
    results = []
    for level in levels:
        if not 0 <= level <= 1:
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        position = level * (size - 1)
        low, high = math.floor(position), math.ceil(position)
        fraction = position - low
        if interpolation == "lower":
            high, fraction = low, 0.0
        elif interpolation == "higher":
            low, fraction = high, 0.0
        elif interpolation == "nearest":
            low = high = int(round(position))
            fraction = 0.0
        elif interpolation == "midpoint":
            fraction = 0.5 if high != low else 0.0
        elif interpolation != "linear":
            raise ValueError(f"quantile: unknown interpolation {interpolation!r}")
        value = ordered[..., low] + (ordered[..., high] - ordered[..., low]) * fraction
        if keepdim:
            value = value.unsqueeze(-1) if dim is not None else value.reshape(*([1] * self.dim()))
            if dim is not None:
                value = _ag.movedim(value, -1, dim)
        results.append(value)
    return results[0] if scalar else _ag.stack(results, 0)


def histc(self, bins=100, min=0, max=0):
    """Counts of the elements in ``bins`` equal-width bins over ``[min, max]`` (the tensor's
    own range when both are 0); elements outside are ignored (float result, as PyTorch)."""
    values = self.detach().reshape(-1).float()
    low, high = float(min), float(max)
    if low == 0 and high == 0 and values.numel():
        low, high = float(values.min().item()), float(values.max().item())
    if low == high:
        low, high = low - 1, high + 1
    inside = (values >= low) & (values <= high)
    index = ((values - low) * (bins / (high - low))).floor().clamp(0, bins - 1).long()
    counts = _ag.zeros(bins, dtype=_ag.float32, device=self.device)
    return counts.index_add(0, index, inside.float()).to(self.dtype if self.is_floating_point() else _ag.float32)


def inverse(self):
    """The inverse of the square matrices (``anygrad.linalg.inv``)."""
    return _ag.linalg.inv(self)


def det(self):
    """The determinant (``anygrad.linalg.det``)."""
    return _ag.linalg.det(self)


def logdet(self):
    """The log of the determinant (``anygrad.linalg.logdet``)."""
    return _ag.linalg.logdet(self)


def slogdet(self):
    """``(sign, logabsdet)`` (``anygrad.linalg.slogdet``)."""
    return _ag.linalg.slogdet(self)


def matrix_power(self, n):
    """The ``n``-th matrix power (``anygrad.linalg.matrix_power``)."""
    return _ag.linalg.matrix_power(self, n)
