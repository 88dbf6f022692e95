"""``Embedding``: a lookup table of vectors, initialised from N(0, 1) as PyTorch does;
``EmbeddingBag``: the sum, mean or maximum of the vectors of each bag of indices."""

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init


def _table(num_embeddings, embedding_dim, padding_idx, weight, device, dtype):
    """The resolved ``padding_idx`` (a negative one counts from the end) and the table as a
    Parameter: ``weight`` when given, else drawn from N(0, 1) with the padding row zeroed, as
    PyTorch's ``Embedding`` and ``EmbeddingBag`` do."""
    import anygrad

    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_embeddings
    if weight is not None:
        return padding_idx, Parameter(weight)
    table = Parameter(anygrad.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
    init.normal_(table)
    if padding_idx is not None:
        with anygrad.no_grad():
            table[padding_idx] = 0.0
    return padding_idx, table


class Embedding(Module):
    """Rows of ``weight`` (``[num_embeddings, embedding_dim]``) looked up by index."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx, self.weight = _table(num_embeddings, embedding_dim, padding_idx, _weight, device, dtype)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
        """An embedding with the given weights."""
        rows, dim = embeddings.shape
        module = cls(rows, dim, padding_idx=padding_idx, _weight=embeddings)
        module.weight.requires_grad_(not freeze)
        return module

    def forward(self, input):
        """The rows at ``input``'s indices."""
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):

        """The settings shown in ``repr``."""
        return f"{self.num_embeddings}, {self.embedding_dim}"


class EmbeddingBag(Module):
    """The sum, mean (default) or maximum of the looked-up rows of each bag: ``forward(input,
    offsets=None, per_sample_weights=None)`` with ``input`` ``[B, N]`` (a bag per row) or 1-D
    with the bags' start ``offsets`` (``nn.functional.embedding_bag``)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.max_norm, self.include_last_offset = max_norm, include_last_offset
        self.padding_idx, self.weight = _table(num_embeddings, embedding_dim, padding_idx, _weight, device, dtype)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """A bag embedding with the given weights."""
        rows, dim = embeddings.shape
        module = cls(rows, dim, mode=mode, _weight=embeddings, include_last_offset=include_last_offset, padding_idx=padding_idx)
        module.weight.requires_grad_(not freeze)
        return module

    def forward(self, input, offsets=None, per_sample_weights=None):
        """One vector per bag."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, mode=self.mode, per_sample_weights=per_sample_weights, include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)

    def extra_repr(self):
        """The settings shown in ``repr``."""
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
