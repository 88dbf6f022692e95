"""``torch.linalg``: norms (``vector_norm``, ``matrix_norm``, ``norm``), ``solve``, ``inv``,
``det``, ``slogdet``, ``cross``, ``matrix_power`` and ``vecdot``, over any leading batch dims.

``solve``, ``inv``, ``det`` and ``slogdet`` run Gauss-Jordan elimination with partial pivoting
written with tensor ops (one pass per column: the pivot row found with ``argmax``, swapped in
with ``gather``, the column eliminated), so they run on every device and autograd
differentiates them. A singular matrix is a ``RuntimeError`` for ``solve`` and ``inv`` (PyTorch's
message), and gives a zero determinant. Decompositions (``qr``, ``svd``, ``eigh``,
``cholesky``) are not written here."""

import anygrad as _ag


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of the elements (all of them, or along ``dim``): ``inf``/``-inf`` the
    largest/smallest magnitude, 0 the count of nonzeros, otherwise ``sum(|x|^ord)^(1/ord)``."""
    if dtype is not None:
        x = x.to(dtype)
    if dim is None:
        if keepdim:
            return vector_norm(x, ord, tuple(range(x.dim())), True)
        x, dim = x.reshape(-1), 0
    magnitude = x.abs()
    if ord == float("inf"):
        return magnitude.amax(dim, keepdim=keepdim)
    if ord == float("-inf"):
        return magnitude.amin(dim, keepdim=keepdim)
    if ord == 0:
        return (magnitude != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if ord == 1:
        return magnitude.sum(dim, keepdim=keepdim)
    if ord == 2:
        return x.norm(2, dim, keepdim)
    return (magnitude ** ord).sum(dim, keepdim=keepdim) ** (1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ``ord`` norm of the matrices in ``dim``: ``"fro"`` (Frobenius), ``1``/``-1`` (the
    largest/smallest column sum of magnitudes), ``inf``/``-inf`` (row sums). ``"nuc"`` and
    ``2`` need singular values, which are not written here."""
    if dtype is not None:
        A = A.to(dtype)
    rows, cols = dim[0] % A.dim(), dim[1] % A.dim()
    if ord == "fro":
        return A.square().sum((rows, cols), keepdim=keepdim).sqrt()
    if ord in (1, -1, float("inf"), float("-inf")):
        summed_dim, reduced_dim = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = A.abs().sum(summed_dim, keepdim=True)
        out = sums.amax(reduced_dim, keepdim=True) if ord in (1, float("inf")) else sums.amin(reduced_dim, keepdim=True)
        return out if keepdim else out.squeeze(max(rows, cols)).squeeze(min(rows, cols))
    raise NotImplementedError(f"matrix_norm: ord={ord!r} is not supported (fro, 1, -1, inf, -inf)")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``vector_norm`` (``ord`` None meaning 2 over the flattened tensor, or an int ``dim``) or
    ``matrix_norm`` (a 2-tuple ``dim``, or a 2-D input with a matrix ``ord``)."""
    if isinstance(dim, int) or (dim is None and (ord is None or A.dim() == 1)):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None:
        dim = (-2, -1)
    if isinstance(dim, (tuple, list)) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def _eliminate(A, B, op):
    """Gauss-Jordan elimination of ``[A | B]`` with partial pivoting: ``(X, pivots, sign)``
    with ``X = A^-1 B`` (None without ``B``), the pivots ``[*, n]`` and the permutation's
    sign ``[*]``."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2] if A.dim() >= 2 else 1} by {A.shape[-1]} matrices")
    if not A.is_floating_point():
        raise TypeError(f"{op}: expected a floating point tensor, got {A.dtype}")
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    augmented = A if B is None else _ag.cat([A, B.to(A.dtype)], -1)
    width = augmented.shape[-1]
    rows = _ag.arange(n, device=A.device)
    sign = _ag.ones(*batch, dtype=A.dtype, device=A.device) if batch else _ag.ones((), dtype=A.dtype, device=A.device)
    pivots = []
    for column in range(n):
        below = augmented[..., column:, column].detach().abs()
        pivot_row = below.argmax(-1) + column
        # The permutation swapping rows ``column`` and ``pivot_row`` of each matrix.
        target = pivot_row.unsqueeze(-1)
        order = _ag.where(rows == column, target, _ag.where(rows == target, column, rows))
        augmented = augmented.gather(-2, order.unsqueeze(-1).expand(*batch, n, width))
        sign = sign * _ag.where(pivot_row == column, 1.0, -1.0).to(A.dtype)
        pivot = augmented[..., column, column]
        pivots.append(pivot)
        safe = _ag.where(pivot == 0, _ag.ones_like(pivot), pivot)
        pivot_row_values = augmented[..., column, :] / safe.unsqueeze(-1)
        factors = augmented[..., :, column].unsqueeze(-1)
        eliminated = augmented - factors * pivot_row_values.unsqueeze(-2)
        is_pivot_row = (rows == column).reshape(n, 1)
        augmented = _ag.where(is_pivot_row, pivot_row_values.unsqueeze(-2).expand(*batch, n, width), eliminated)
    solution = None if B is None else augmented[..., :, n:]
    return solution, _ag.stack(pivots, -1), sign


def _check_invertible(pivots, op):
    if bool((pivots == 0).any()):
        raise RuntimeError(f"linalg.{op}: The solver failed because the input matrix is singular.")


def solve(A, B, *, left=True, out=None):
    """``X`` with ``A X = B`` (``B`` ``[*, n, k]`` or a vector ``[*, n]``); ``left=False`` solves
    ``X A = B``."""
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.dim() == A.dim() - 1
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.dim() < A.dim():
        rhs = rhs.expand(*A.shape[:-2], *rhs.shape[-2:])
    elif A.dim() < rhs.dim():
        A = A.expand(*rhs.shape[:-2], *A.shape[-2:])
    solution, pivots, _ = _eliminate(A, rhs, "solve")
    _check_invertible(pivots, "solve")
    return solution.squeeze(-1) if vector else solution


def inv(A, *, out=None):
    """The inverse of the square matrices ``A``."""
    n = A.shape[-1]
    identity = _ag.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    solution, pivots, _ = _eliminate(A, identity, "inv")
    _check_invertible(pivots, "inv")
    return solution


def det(A, *, out=None):
    """The determinant: the product of the pivots, signed by the row swaps."""
    _, pivots, sign = _eliminate(A, None, "det")
    return pivots.prod(-1) * sign


def slogdet(A, *, out=None):
    """``(sign, logabsdet)`` of the determinant (sign 0 and ``-inf`` when singular)."""
    _, pivots, sign = _eliminate(A, None, "slogdet")
    magnitude = pivots.abs()
    singular = (magnitude == 0).any(-1)
    logabsdet = _ag.where(magnitude == 0, _ag.ones_like(magnitude), magnitude).log().sum(-1)
    signs = sign * pivots.sign().prod(-1)
    return _ag.return_types.slogdet(_ag.where(singular, 0.0, signs), _ag.where(singular, float("-inf"), logabsdet))


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim``."""
    a = [input.narrow(dim, i, 1) for i in range(3)]
    b = [other.narrow(dim, i, 1) for i in range(3)]
    return _ag.cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dim)


def matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (``n`` negative: of the inverse; 0: identity), by
    repeated squaring."""
    if n < 0:
        A, n = inv(A), -n
    size = A.shape[-1]
    result = _ag.eye(size, dtype=A.dtype, device=A.device).expand(*A.shape).contiguous()
    power = A
    while n:
        if n & 1:
            result = result @ power
        n >>= 1
        if n:
            power = power @ power
    return result


def vecdot(x, y, *, dim=-1):
    """The dot products along ``dim``."""
    return (x * y).sum(dim)


def logdet(A):
    """The log of the determinant (NaN for a negative determinant, ``-inf`` for zero)."""
    sign, logabsdet = slogdet(A)
    return _ag.where(sign < 0, float("nan"), logabsdet)


__all__ = ["vector_norm", "matrix_norm", "norm", "solve", "inv", "det", "slogdet", "cross", "matrix_power", "vecdot"]
