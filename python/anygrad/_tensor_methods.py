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
    rows, cols = self.shape
    start_row, start_col = builtin_max(-diagonal, 0), builtin_max(diagonal, 0)
    count = builtin_max(0, builtin_min(rows - start_row, cols - start_col))
    index = _ag.arange(count, device=self.device)
    return self[index + start_row, index + start_col]


import builtins as _builtins  # noqa: E402

builtin_abs = _builtins.abs
builtin_max = _builtins.max
builtin_min = _builtins.min


def repeat_interleave(self, repeats, dim=None):
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None)."""
    x = self.flatten() if dim is None else self
    dim = 0 if dim is None else dim
    if dim < 0:
        dim += x.dim()
    size = x.shape[dim]
    index = _ag.arange(size, device=x.device).unsqueeze(1).expand(size, repeats).reshape(-1)
    return x.index_select(dim, index)


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


def masked_scatter_(self, mask, source):
    """Not supported yet."""
    raise NotImplementedError("Tensor.masked_scatter_ is not supported yet")


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


def scatter(self, dim, index, src):
    """Values of ``src`` written at ``index`` along ``dim`` (a number or tensor)."""
    if not isinstance(src, _ag.Tensor):
        src = _ag.full(tuple(index.shape), src, dtype=self.dtype, device=self.device)
    hit = _ag.zeros_like(self, dtype=_ag.float32).scatter_add(dim, index, _ag.ones_like(src, dtype=_ag.float32)) > 0
    placed = _ag.zeros_like(self).scatter_add(dim, index, src.to(self.dtype))
    return _ag.where(hit, placed, self)


def scatter_(self, dim, index, src):
    """In place ``scatter``."""
    return self.copy_(scatter(self, dim, index, src))


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
    source = values.to(self.dtype).expand(*index_shape, *rest).reshape(positions.shape[0], *rest)
    if accumulate:
        return flat.index_add(0, positions, source).reshape(*self.shape)
    hit_shape = (lead,) + (1,) * len(rest)
    hits = _ag.zeros(lead, dtype=_ag.float32, device=self.device).index_add(
        0, positions, _ag.ones(positions.shape[0], dtype=_ag.float32, device=self.device)
    )
    placed = _ag.zeros_like(flat).index_add(0, positions, source)
    # A position picked more than once keeps one of its values in PyTorch (which one is
    # unspecified); here their mean, which is that value when they agree.
    placed = placed / hits.clamp(min=1.0).reshape(*hit_shape).to(flat.dtype) if flat.is_floating_point() else placed
    return _ag.where((hits > 0).reshape(*hit_shape), placed, flat).reshape(*self.shape)


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
    each distinct element occurs. ``dim`` other than None is not supported."""
    if dim is not None:
        raise NotImplementedError(
            "unique: dim is not supported yet (dim=None only: the distinct elements of the "
            "flattened tensor)"
        )
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
