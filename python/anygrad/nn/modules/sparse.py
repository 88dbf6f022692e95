"""``Embedding``: a lookup table of vectors, initialised from N(0, 1) as PyTorch does."""

from .module import Module
from ..parameter import Parameter
from .. import functional as F
from .. import init


class Embedding(Module):
    """Rows of ``weight`` (``[num_embeddings, embedding_dim]``) looked up by index."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None):
        super().__init__()
        import anygrad

        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(anygrad.empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
            init.normal_(self.weight)
            if padding_idx is not None:
                from ... import no_grad

                with no_grad():
                    self.weight[padding_idx] = 0.0
        else:
            self.weight = Parameter(_weight)

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
        return f"{self.num_embeddings}, {self.embedding_dim}"
