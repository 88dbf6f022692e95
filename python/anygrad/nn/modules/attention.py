"""``MultiheadAttention`` (``torch.nn.MultiheadAttention``): the input projections, the heads'
scaled dot-product attention (the fused kernel where no weights are asked for and no mask is
given) and the output projection, with PyTorch's masks (``attn_mask`` and
``key_padding_mask``: ``True`` or ``-inf`` means *not* attended), parameter names and
initialisation."""

import math

from .module import Module
from .linear import Linear
from ..parameter import Parameter
from .. import functional as F
from .. import init


class MultiheadAttention(Module):
    """Attention of ``num_heads`` heads over ``embed_dim`` features; ``forward`` returns
    ``(output, weights)``, the weights averaged over heads unless ``average_attn_weights`` is
    false, or ``None`` with ``need_weights=False``."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        import anygrad

        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        options = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(anygrad.empty(3 * embed_dim, embed_dim, **options))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(anygrad.empty(embed_dim, embed_dim, **options))
            self.k_proj_weight = Parameter(anygrad.empty(embed_dim, self.kdim, **options))
            self.v_proj_weight = Parameter(anygrad.empty(embed_dim, self.vdim, **options))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(anygrad.empty(3 * embed_dim, **options))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **options)
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            weights = (self.in_proj_weight[:e], self.in_proj_weight[e : 2 * e], self.in_proj_weight[2 * e :])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        if self.in_proj_bias is None:
            return [(w, None) for w in weights]
        b = self.in_proj_bias
        return list(zip(weights, (b[:e], b[e : 2 * e], b[2 * e :])))

    def _additive_mask(self, attn_mask, key_padding_mask, batch, target, source, like):
        """One float mask broadcastable to ``[batch, heads, target, source]`` (``-inf`` where
        not attended), or ``None``."""
        mask = None
        if attn_mask is not None:
            if attn_mask.dim() == 3:
                attn_mask = attn_mask.reshape(batch, self.num_heads, target, source)
            elif attn_mask.dim() != 2:
                raise RuntimeError(f"attn_mask must be 2-D or 3-D, got {attn_mask.dim()}-D")
            mask = _as_additive(attn_mask, like)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (batch, source):
                raise RuntimeError(
                    f"expected key_padding_mask of shape {(batch, source)}, got {tuple(key_padding_mask.shape)}"
                )
            padding = _as_additive(key_padding_mask, like).reshape(batch, 1, 1, source)
            mask = padding if mask is None else mask + padding
        return mask if mask is None else mask.to(like.dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False):
        """Attention of ``query`` over ``key``/``value``: ``(output, weights or None)``."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint.")
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        # [length, batch, features] from here on.
        target, batch, _ = query.shape
        source = key.shape[0]
        heads, head_dim = self.num_heads, self.head_dim

        def split(x, length):
            return x.reshape(length, batch, heads, head_dim).permute(1, 2, 0, 3)

        (wq, bq), (wk, bk), (wv, bv) = self._projections()
        q = split(F.linear(query, wq, bq), target)
        k = split(F.linear(key, wk, bk), source)
        v = split(F.linear(value, wv, bv), source)
        mask = self._additive_mask(attn_mask, key_padding_mask, batch, target, source, q)
        dropout = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(-1)
            out = F.dropout(weights, dropout, training=dropout > 0) @ v
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        out = out.permute(2, 0, 1, 3).reshape(target, batch, self.embed_dim)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights


def _as_additive(mask, like):
    """A bool mask (``True``: not attended) as ``-inf``/``0``; a float mask as it is."""
    import anygrad

    if mask.dtype == anygrad.bool:
        zeros = anygrad.zeros(mask.shape, dtype=anygrad.float32, device=like.device)
        return zeros.masked_fill(mask, float("-inf"))
    return mask
