//! Scaled dot-product attention (`torch.nn.functional.scaled_dot_product_attention`):
//! `softmax(q kᵀ · scale + mask) v`, with boolean or additive masks, a causal mask and
//! dropout on the attention weights. This file holds the argument checks shared by every path
//! and the composite path (matmul + masked softmax + matmul) written in primitive tensor ops,
//! so it runs on every backend and takes its gradient from the primitives' rules; it is the
//! reference that the fused GPU kernel (`attention_fused.rs`, tried first) is checked against.
//!
//! Fully masked rows (every key masked out) give zero output and zero gradient, like
//! PyTorch's math path (its `_safe_softmax`), rather than NaN.

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};

const OP: &str = "scaled_dot_product_attention";

/// What the checks resolved: the attention-weights shape `[.., L, S]` and the scale.
struct Resolved {
    scale: f64,
}

fn check(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attention_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Resolved> {
    for (name, tensor) in [("query", query), ("key", key), ("value", value)] {
        if tensor.rank() < 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "{name} must have at least 2 dims [.., length, features], got shape {:?}",
                    tensor.shape()
                ),
            ));
        }
        if !tensor.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "{name} must be a float tensor, got dtype {}",
                    tensor.dtype()
                ),
            ));
        }
        if tensor.dtype() != query.dtype() {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: query.dtype(),
                rhs: tensor.dtype(),
            });
        }
        if tensor.device() != query.device() {
            return Err(Error::DeviceMismatch {
                op: OP,
                lhs: query.device().to_string(),
                rhs: tensor.device().to_string(),
            });
        }
    }
    let q_features = query.shape()[query.rank() - 1];
    let k_features = key.shape()[key.rank() - 1];
    if q_features != k_features {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: query.shape().to_vec(),
            rhs: key.shape().to_vec(),
            reason: "(query and key) must have the same last dim (head size)".into(),
        });
    }
    let key_length = key.shape()[key.rank() - 2];
    let value_length = value.shape()[value.rank() - 2];
    if key_length != value_length {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: key.shape().to_vec(),
            rhs: value.shape().to_vec(),
            reason: "(key and value) must have the same length (dim -2)".into(),
        });
    }
    let query_batch = &query.shape()[..query.rank() - 2];
    let key_batch = &key.shape()[..key.rank() - 2];
    let value_batch = &value.shape()[..value.rank() - 2];
    let batch = crate::shape::broadcast_shapes(OP, query_batch, key_batch)?;
    let batch = crate::shape::broadcast_shapes(OP, &batch, value_batch)?;
    let mut weights_shape = batch;
    weights_shape.push(query.shape()[query.rank() - 2]);
    weights_shape.push(key_length);
    if let Some(mask) = attention_mask {
        if is_causal {
            return Err(Error::invalid(
                OP,
                "attention_mask and is_causal=true cannot both be given (fold the causal mask \
                 into attention_mask)",
            ));
        }
        if mask.dtype() != DType::Bool && mask.dtype() != query.dtype() {
            return Err(Error::invalid(
                OP,
                format!(
                    "attention_mask must be Bool (true = attend) or the query's dtype {} \
                     (added to the scores), got {}",
                    query.dtype(),
                    mask.dtype()
                ),
            ));
        }
        if mask.device() != query.device() {
            return Err(Error::DeviceMismatch {
                op: OP,
                lhs: query.device().to_string(),
                rhs: mask.device().to_string(),
            });
        }
        let broadcast = crate::shape::broadcast_shapes(OP, &weights_shape, mask.shape());
        if broadcast.as_deref().ok() != Some(weights_shape.as_slice()) {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: mask.shape().to_vec(),
                rhs: weights_shape,
                reason: "(attention_mask and attention weights [.., L, S]): the mask does not \
                         broadcast to the weights"
                    .into(),
            });
        }
    }
    if !(0.0..1.0).contains(&dropout_p) {
        return Err(Error::invalid(
            OP,
            format!("dropout_p must be in [0, 1), got {dropout_p}"),
        ));
    }
    let scale = match scale {
        Some(scale) if !scale.is_finite() => {
            return Err(Error::invalid(
                OP,
                format!("scale must be finite, got {scale}"),
            ))
        }
        Some(scale) => scale,
        None => 1.0 / (q_features.max(1) as f64).sqrt(),
    };
    Ok(Resolved { scale })
}

/// Scaled dot-product attention, like `torch.nn.functional.scaled_dot_product_attention`:
/// `softmax(query keyᵀ · scale + mask) value`.
///
/// - `query` `[.., L, E]`, `key` `[.., S, E]`, `value` `[.., S, Ev]` (leading dims broadcast)
///   give `[.., L, Ev]`.
/// - `attention_mask`, broadcastable to `[.., L, S]`: Bool (`true` = attend, PyTorch's
///   convention) or the query's float dtype (added to the scores, `-inf` masks out).
/// - `dropout_p`: dropout on the attention weights (always applied when `> 0`; pass `0.0` in
///   eval mode, as `torch.nn.MultiheadAttention` does).
/// - `is_causal`: query `i` attends to keys `j <= i` (the top-left aligned lower triangle, as
///   PyTorch); not together with `attention_mask`.
/// - `scale`: defaults to `1/√E`.
///
/// A row whose keys are all masked out gives zeros (PyTorch's math path), never NaN.
///
/// On a GPU, calls without a mask or dropout run one fused kernel (online softmax, memory
/// linear in the lengths) and its fused backward; see [`set_fused_attention`](super::set_fused_attention) and
/// `ANYGRAD_FUSED_ATTENTION=off` to force the composite.
/// Mismatched head sizes or lengths, a mask that does not broadcast, mixed dtypes or devices
/// are errors naming the operands.
///
/// ```
/// use anygrad_core::{scaled_dot_product_attention, Device, DType, Tensor};
/// let device = Device::Cpu;
/// let q = Tensor::randn(&[2, 4, 5, 8], DType::F32, &device)?;
/// let k = Tensor::randn(&[2, 4, 7, 8], DType::F32, &device)?;
/// let v = Tensor::randn(&[2, 4, 7, 3], DType::F32, &device)?;
/// let out = scaled_dot_product_attention(&q, &k, &v, None, 0.0, false, None)?;
/// assert_eq!(out.shape(), &[2, 4, 5, 3]);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attention_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    // Under autocast a float mask joins the (often f16) query in its dtype, as every input of
    // an autocast op is cast: a model that builds its additive mask in f32 runs unchanged.
    let cast_mask;
    let attention_mask = match attention_mask {
        Some(mask)
            if crate::amp::autocast_dtype().is_some()
                && mask.dtype().is_float()
                && query.dtype().is_float()
                && mask.dtype() != query.dtype() =>
        {
            cast_mask = mask.to_dtype(query.dtype())?;
            Some(&cast_mask)
        }
        other => other,
    };
    let resolved = check(
        query,
        key,
        value,
        attention_mask,
        dropout_p,
        is_causal,
        scale,
    )?;
    if let Some(fused) = super::attention_fused::try_fused(
        query,
        key,
        value,
        attention_mask,
        dropout_p,
        is_causal,
        resolved.scale,
    )? {
        return Ok(fused);
    }
    composite(
        query,
        key,
        value,
        attention_mask,
        dropout_p,
        is_causal,
        resolved.scale,
    )
}

/// The composite path: matmul, masked softmax (safe for fully masked rows), dropout, matmul.
fn composite(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attention_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: f64,
) -> Result<Tensor> {
    let dtype = query.dtype();
    let device = query.device();
    let scores = query.matmul(&key.transpose(-2, -1)?)?.mul_scalar(scale)?;
    let length = query.shape()[query.rank() - 2];
    let key_length = key.shape()[key.rank() - 2];
    let negative_infinity = Tensor::scalar(f64::NEG_INFINITY, scores.dtype(), device)?;
    let scores = if is_causal {
        let row =
            Tensor::arange(0.0, length as f64, 1.0, DType::I32, device)?.reshape([length, 1])?;
        let column = Tensor::arange(0.0, key_length as f64, 1.0, DType::I32, device)?
            .reshape([1, key_length])?;
        Tensor::where_(&column.le(&row)?, &scores, &negative_infinity)?
    } else {
        match attention_mask {
            None => scores,
            Some(mask) if mask.dtype() == DType::Bool => {
                Tensor::where_(mask, &scores, &negative_infinity)?
            }
            // An additive mask in the scores' dtype: an f32 mask would promote f16 scores
            // (autocast) to f32, a cast of the whole `[B, H, L, S]` there and back.
            Some(mask) if mask.dtype() != scores.dtype() => {
                scores.add(&mask.to_dtype(scores.dtype())?)?
            }
            Some(mask) => scores.add(mask)?,
        }
    };
    // Softmax whose fully masked rows are zero: the shift is clamped to a finite value, so
    // exp(-inf - shift) = 0, and the row sum (>= 1 in any row with an unmasked key, from the
    // max itself) is clamped below at 0.5 so an all-zero row divides to zero, not NaN. The
    // `softmax_last` primitive's `safe` form does exactly this in one kernel.
    let mut weights = scores.softmax_last_dim(true)?;
    if dropout_p > 0.0 {
        let keep = Tensor::rand(weights.shape(), weights.dtype(), device)?.ge_scalar(dropout_p)?;
        let mask = keep
            .to_dtype(weights.dtype())?
            .mul_scalar(1.0 / (1.0 - dropout_p))?;
        weights = weights.mul(&mask)?;
    }
    let out = weights.matmul(value)?;
    if out.dtype() != dtype {
        return out.to_dtype(dtype);
    }
    Ok(out)
}
