//! The backend contract's `Attention` family: fused scaled dot-product attention, forward and
//! backward. Unlike the other families it is optional: every method has a default that says
//! "not here" (`attention_supported` false, the kernels `Error::Unsupported`), and the tensor
//! layer (`tensor/attention.rs`) runs the composite of matmuls and softmax wherever
//! `attention_supported` is false. The CPU takes the defaults; the GPU implements it in
//! `backend/gpu/attention/`.

use super::BackendStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::AttentionShape;
use crate::layout::Layout;

/// The error of a fused attention kernel called on a backend without one.
fn no_fused_kernel<S: BackendStorage>(storage: &S, op: &'static str) -> Error {
    Error::Unsupported {
        op,
        dtype: storage.dtype(),
        device: S::NAME.into(),
        hint: "; this backend has no fused attention kernel (the tensor layer runs the \
               composite)"
            .into(),
    }
}

/// Fused attention over `[batch_heads, rows, width]` operands (`geometry::AttentionShape`).
pub(crate) trait Attention: BackendStorage {
    /// Whether the fused kernels cover this call on `device`.
    fn attention_supported(_device: &Self::Device, _dtype: DType, _shape: &AttentionShape) -> bool {
        false
    }

    /// Whether [`Attention::attention_forward_views`] runs the same kernel as the dense
    /// forward for this call (the caller passes dense copies where it does not).
    fn attention_forward_takes_views(
        _device: &Self::Device,
        _dtype: DType,
        _shape: &AttentionShape,
    ) -> bool {
        false
    }

    /// The fused forward: `self` is the dense query, `key` and `value` dense, and the f32
    /// key bias where `shape.key_bias_group` says there is one. Returns the output
    /// `[batch_heads, query_length, value_dim]` (the query's dtype) and the f32 log-sum-exp of
    /// every query row's scaled scores.
    fn attention_forward(
        &self,
        _key: &Self,
        _value: &Self,
        _key_bias: Option<&Self>,
        _shape: &AttentionShape,
    ) -> Result<(Self, Self)> {
        Err(no_fused_kernel(self, "scaled_dot_product_attention"))
    }

    /// The fused forward reading the query `self`, the key and the value through `[batch,
    /// heads, rows, width]` views whose rows are contiguous and whose offsets and strides are
    /// multiples of 4 (an inference call's heads split from a stacked projection, without
    /// dense copies); otherwise as [`Attention::attention_forward`].
    #[allow(clippy::too_many_arguments)]
    fn attention_forward_views(
        &self,
        _query_layout: &Layout,
        _key: &Self,
        _key_layout: &Layout,
        _value: &Self,
        _value_layout: &Layout,
        _key_bias: Option<&Self>,
        _shape: &AttentionShape,
    ) -> Result<(Self, Self)> {
        Err(no_fused_kernel(self, "scaled_dot_product_attention"))
    }

    /// The fused backward: `self` the dense query, then key, value, the forward's output and
    /// log-sum-exp, the output's gradient (dense) and the key bias as in the forward. Returns
    /// the query's gradient and one storage holding the key's gradient followed by the
    /// value's (their dtype, computed in f32).
    #[allow(clippy::too_many_arguments)]
    fn attention_backward(
        &self,
        _key: &Self,
        _value: &Self,
        _output: &Self,
        _logsumexp: &Self,
        _grad_output: &Self,
        _key_bias: Option<&Self>,
        _shape: &AttentionShape,
    ) -> Result<(Self, Self)> {
        Err(no_fused_kernel(
            self,
            "scaled_dot_product_attention_backward",
        ))
    }
}
