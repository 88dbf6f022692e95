"""Named tuples that reductions and selections return, as PyTorch's ``torch.return_types``
(``values, indices = x.max(dim=1)``, ``x.topk(3).indices``, ``x.sort().values``)."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
topk = namedtuple("topk", ["values", "indices"])
sort = namedtuple("sort", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
median = namedtuple("median", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])
slogdet = namedtuple("slogdet", ["sign", "logabsdet"])
