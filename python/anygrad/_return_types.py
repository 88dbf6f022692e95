"""Named tuples that reductions return (``values, indices = x.max(dim=1)``)."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
