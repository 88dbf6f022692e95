//! The fused GPU path of `scaled_dot_product_attention` (`attention.rs` checks the arguments,
//! then tries this path before its composite).
//!
//! Design: the fused op is an *internal custom autograd node*, not a new primitive. Its
//! forward is one GPU kernel (`backend/gpu/attention.rs`: online softmax over key tiles, the
//! `[B, H, L, S]` scores never materialised, the row log-sum-exp saved) reached through
//! `Storage::attention_forward`; its backward ([`FusedBackward`], attached with
//! `Tensor::with_custom_backward`) runs the three backward kernels through
//! `Storage::attention_backward`. The CPU has no separate implementation of the same math:
//! there the composite (matmul, masked softmax, matmul) *is* the definition, and it stays the
//! reference the fused kernels and their gradients are tested against. A primitive would have
//! needed a second CPU implementation of the same op and a `BackendStorage` method with two
//! outputs for one GPU-only kernel.
//!
//! The path is taken on a GPU device when there is no attention mask, `dropout_p == 0`, the
//! batch dims of query, key and value are equal, and the kernels cover the shape and dtype
//! (`Storage::attention_supported`: f32, or f16 with `SHADER_F16`; head and value sizes
//! multiples of 4 up to 128). Under f16 autocast f32 inputs are cast to f16 on the way in and
//! the output back to f32 (as the composite's matmuls do). `ANYGRAD_FUSED_ATTENTION=off` (or
//! [`set_fused_attention`]`(false)`) forces the composite everywhere, for comparisons.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use super::Tensor;
use crate::autograd::CustomBackward;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::AttentionShape;
use crate::storage::Storage;

/// 0: not decided yet (read `ANYGRAD_FUSED_ATTENTION` on first use), 1: on, 2: off.
static FUSED: AtomicU8 = AtomicU8::new(0);

/// Whether `scaled_dot_product_attention` may use its fused GPU kernel (on by default;
/// `ANYGRAD_FUSED_ATTENTION=off` or [`set_fused_attention`]`(false)` turns it off, so every
/// call runs the composite: matmul, softmax, matmul).
pub fn fused_attention_enabled() -> bool {
    match FUSED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let off = std::env::var("ANYGRAD_FUSED_ATTENTION")
                .map(|value| matches!(value.to_ascii_lowercase().as_str(), "off" | "0" | "false"))
                .unwrap_or(false);
            FUSED.store(if off { 2 } else { 1 }, Ordering::Relaxed);
            !off
        }
    }
}

/// Turn the fused attention kernel on or off for the whole process (overrides
/// `ANYGRAD_FUSED_ATTENTION`).
pub fn set_fused_attention(enabled: bool) {
    FUSED.store(if enabled { 1 } else { 2 }, Ordering::Relaxed);
}

/// The view of `tensor` as dense `[batch_heads, length, width]` starting at element 0 of
/// its storage (a copy only where it is not already).
fn dense_rows(tensor: &Tensor, batch_heads: usize) -> Result<Tensor> {
    let length = tensor.shape()[tensor.rank() - 2];
    let width = tensor.shape()[tensor.rank() - 1];
    let dense = if tensor.is_contiguous() && tensor.layout().offset == 0 {
        tensor.clone()
    } else {
        tensor.copy()?
    };
    dense.reshape([batch_heads, length, width])
}

/// The fused path, or `None` where it does not apply (the caller runs the composite).
/// Arguments were checked by the caller; `scale` is resolved.
pub(super) fn try_fused(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    has_mask: bool,
    dropout_p: f64,
    is_causal: bool,
    scale: f64,
) -> Result<Option<Tensor>> {
    if has_mask || dropout_p > 0.0 || !matches!(query.device(), Device::Gpu(_)) {
        return Ok(None);
    }
    if !fused_attention_enabled() {
        return Ok(None);
    }
    let batch = &query.shape()[..query.rank() - 2];
    if key.shape()[..key.rank() - 2] != *batch || value.shape()[..value.rank() - 2] != *batch {
        return Ok(None);
    }
    let dtype = query.dtype();
    let compute = match (dtype, crate::amp::autocast_dtype()) {
        (DType::F32, Some(DType::F16)) => DType::F16,
        _ => dtype,
    };
    let shape = AttentionShape {
        batch_heads: batch.iter().product(),
        query_length: query.shape()[query.rank() - 2],
        key_length: key.shape()[key.rank() - 2],
        head_dim: query.shape()[query.rank() - 1],
        value_dim: value.shape()[value.rank() - 1],
        scale,
        causal: is_causal,
    };
    if !Storage::attention_supported(query.device(), compute, &shape) {
        return Ok(None);
    }
    let cast = |t: &Tensor| {
        if t.dtype() == compute {
            Ok(t.clone())
        } else {
            t.to_dtype(compute)
        }
    };
    let (query, key, value) = (cast(query)?, cast(key)?, cast(value)?);
    let saved = [&query, &key, &value]
        .map(|t| dense_rows(&t.detach(), shape.batch_heads))
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let (output, logsumexp) = {
        let (q, k, v) = (saved[0].storage(), saved[1].storage(), saved[2].storage());
        q.attention_forward(&k, &v, &shape)?
    };
    let mut output_shape = batch.to_vec();
    output_shape.extend([shape.query_length, shape.value_dim]);
    let output = Tensor::from_storage(output, &output_shape, None);
    let logsumexp = Tensor::from_storage(logsumexp, &[shape.rows()], None);
    let backward = FusedBackward {
        query: saved[0].clone(),
        key: saved[1].clone(),
        value: saved[2].clone(),
        output: output.reshape([shape.batch_heads, shape.query_length, shape.value_dim])?,
        logsumexp,
        shape,
    };
    let result = Tensor::with_custom_backward(&output, &[&query, &key, &value], Arc::new(backward));
    if result.dtype() != dtype {
        return Ok(Some(result.to_dtype(dtype)?));
    }
    Ok(Some(result))
}

/// What the fused backward needs: the dense operands, the output and the row log-sum-exp
/// (storage-sharing views without autograd records, so no cycle).
struct FusedBackward {
    query: Tensor,
    key: Tensor,
    value: Tensor,
    output: Tensor,
    logsumexp: Tensor,
    shape: AttentionShape,
}

impl CustomBackward for FusedBackward {
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let shape = &self.shape;
        let grad = dense_rows(
            &grad_output.detach().to_dtype(self.query.dtype())?,
            shape.batch_heads,
        )?;
        let (query_grad, key_grad, value_grad) = {
            let storages = [
                &self.query,
                &self.key,
                &self.value,
                &self.output,
                &self.logsumexp,
                &grad,
            ]
            .map(|t| t.storage());
            storages[0].attention_backward(
                &storages[1],
                &storages[2],
                &storages[3],
                &storages[4],
                &storages[5],
                shape,
            )?
        };
        let grads = [query_grad, key_grad, value_grad];
        let mut out = Vec::with_capacity(3);
        for (storage, input) in grads.into_iter().zip(inputs) {
            out.push(Some(Tensor::from_storage(storage, input.shape(), None)));
        }
        Ok(out)
    }
}
