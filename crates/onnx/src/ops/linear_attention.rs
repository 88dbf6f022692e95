//! LinearAttention (opset 27+): the recurrent linear-attention family (`linear`, `gated`,
//! `delta`, `gated_delta` update rules) over packed `[B, T, H * D]` operands with grouped
//! query heads, run token by token as batched tensor ops on the node's device.
//!
//! The state `S` is `[B, H_kv, d_k, d_v]` and, per token `t`:
//! - gated rules first decay it: `S *= exp(g_t)` (per head, or per key feature);
//! - delta rules replace the value by `β_t * (v_t - Sᵀ k_t)`;
//! - then `S += k_t ⊗ v_t`, and each query head reads `scale * q_tᵀ S` of its key/value head.
//!
//! The recurrence runs in float32 whatever the operands' type; the output comes back in the
//! query's type and the present state in the past state's (or the query's) type.

use anygrad_core::{DType, Tensor};

use super::OperatorEntry;
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The linear attention operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "LinearAttention",
    min_opset: 27,
    max_opset: i64::MAX,
    run: linear_attention,
}];

/// The operands' sizes, read from the inputs and the head counts.
struct Sizes {
    batch: usize,
    tokens: usize,
    query_heads: usize,
    key_value_heads: usize,
    key_size: usize,
    value_size: usize,
}

/// A positive head-count attribute, which is required.
fn head_count(ctx: &NodeContext, name: &str) -> Result<usize> {
    match ctx.attr_opt_int(name)? {
        Some(heads) if heads > 0 => Ok(heads as usize),
        Some(heads) => Err(ctx.error(format!("{name} must be positive, got {heads}"))),
        None => Err(ctx.error(format!("attribute {name} is required"))),
    }
}

/// `[B, T, H * D]` as `[B, H, T, D]`, in float32.
fn unpack_heads(ctx: &NodeContext, packed: &Tensor, heads: usize, size: usize) -> Result<Tensor> {
    let shape = packed.shape().to_vec();
    ctx.core(
        packed
            .reshape([shape[0], shape[1], heads, size])
            .and_then(|t| t.permute(&[0, 2, 1, 3]))
            .and_then(|t| t.to_dtype(DType::F32)),
    )
}

/// Checks the query, key and value shapes against the head counts; their sizes.
fn read_sizes(
    ctx: &NodeContext,
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    query_heads: usize,
    key_value_heads: usize,
) -> Result<Sizes> {
    for (name, operand) in [("query", query), ("key", key), ("value", value)] {
        if operand.rank() != 3 {
            return Err(ctx.error(format!(
                "{name} must be 3-D [batch, tokens, heads * size], got shape {:?}",
                operand.shape()
            )));
        }
    }
    let (batch, tokens) = (query.shape()[0], query.shape()[1]);
    for (name, operand) in [("key", key), ("value", value)] {
        if operand.shape()[0] != batch || operand.shape()[1] != tokens {
            return Err(ctx.error(format!(
                "{name}'s batch and token dims {:?} differ from the query's {:?}",
                &operand.shape()[..2],
                &query.shape()[..2]
            )));
        }
    }
    if !query_heads.is_multiple_of(key_value_heads) {
        return Err(ctx.error(format!(
            "q_num_heads {query_heads} is not a multiple of kv_num_heads {key_value_heads}"
        )));
    }
    if !query.shape()[2].is_multiple_of(query_heads) {
        return Err(ctx.error(format!(
            "q_num_heads {query_heads} does not divide the query's last dim {}",
            query.shape()[2]
        )));
    }
    let key_size = query.shape()[2] / query_heads;
    if key.shape()[2] != key_value_heads * key_size {
        return Err(ctx.error(format!(
            "the key's last dim {} is not kv_num_heads {key_value_heads} times the key size {key_size}",
            key.shape()[2]
        )));
    }
    if !value.shape()[2].is_multiple_of(key_value_heads) {
        return Err(ctx.error(format!(
            "kv_num_heads {key_value_heads} does not divide the value's last dim {}",
            value.shape()[2]
        )));
    }
    Ok(Sizes {
        batch,
        tokens,
        query_heads,
        key_value_heads,
        key_size,
        value_size: value.shape()[2] / key_value_heads,
    })
}

/// The decay as `[B, H_kv, T, 1]` (per head) or `[B, H_kv, T, d_k]` (per key feature).
fn unpack_decay(ctx: &NodeContext, decay: &Tensor, sizes: &Sizes) -> Result<Tensor> {
    let expected_leading = [sizes.batch, sizes.tokens];
    if decay.rank() != 3 || decay.shape()[..2] != expected_leading {
        return Err(ctx.error(format!(
            "decay must be [{}, {}, kv_num_heads or kv_num_heads * d_k], got shape {:?}",
            sizes.batch,
            sizes.tokens,
            decay.shape()
        )));
    }
    let last = decay.shape()[2];
    let per_feature = if last == sizes.key_value_heads {
        1
    } else if last == sizes.key_value_heads * sizes.key_size {
        sizes.key_size
    } else {
        return Err(ctx.error(format!(
            "decay's last dim {last} is neither kv_num_heads {} nor kv_num_heads * d_k {}",
            sizes.key_value_heads,
            sizes.key_value_heads * sizes.key_size
        )));
    };
    unpack_heads(ctx, decay, sizes.key_value_heads, per_feature)
}

/// Beta as `[B, H_kv or 1, T, 1]`.
fn unpack_beta(ctx: &NodeContext, beta: &Tensor, sizes: &Sizes) -> Result<Tensor> {
    let expected_leading = [sizes.batch, sizes.tokens];
    if beta.rank() != 3
        || beta.shape()[..2] != expected_leading
        || !(beta.shape()[2] == sizes.key_value_heads || beta.shape()[2] == 1)
    {
        return Err(ctx.error(format!(
            "beta must be [{}, {}, kv_num_heads or 1], got shape {:?}",
            sizes.batch,
            sizes.tokens,
            beta.shape()
        )));
    }
    unpack_heads(ctx, beta, beta.shape()[2], 1)
}

/// LinearAttention: `(output, present_state)`.
fn linear_attention(ctx: &NodeContext) -> Result<Vec<Value>> {
    let query = ctx.tensor(0)?;
    let key = ctx.tensor(1)?;
    let value = ctx.tensor(2)?;
    let query_heads = head_count(ctx, "q_num_heads")?;
    let key_value_heads = head_count(ctx, "kv_num_heads")?;
    let rule = ctx.attr_string("update_rule", "gated_delta")?;
    let (gated, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => {
            return Err(ctx.error(format!(
                "update_rule {other:?} is not one of linear, gated, delta, gated_delta"
            )))
        }
    };
    let sizes = read_sizes(ctx, &query, &key, &value, query_heads, key_value_heads)?;
    let output_dtype = query.dtype();
    let decay = match (gated, ctx.optional_tensor(4)?) {
        (true, Some(decay)) => Some(unpack_decay(ctx, &decay, &sizes)?),
        (true, None) => return Err(ctx.error(format!("update_rule {rule:?} needs decay"))),
        (false, Some(_)) => {
            return Err(ctx.error(format!("update_rule {rule:?} takes no decay input")))
        }
        (false, None) => None,
    };
    let beta = match (delta, ctx.optional_tensor(5)?) {
        (true, Some(beta)) => Some(unpack_beta(ctx, &beta, &sizes)?),
        (true, None) => return Err(ctx.error(format!("update_rule {rule:?} needs beta"))),
        (false, Some(_)) => {
            return Err(ctx.error(format!("update_rule {rule:?} takes no beta input")))
        }
        (false, None) => None,
    };
    let state_shape = [
        sizes.batch,
        sizes.key_value_heads,
        sizes.key_size,
        sizes.value_size,
    ];
    let (mut state, state_dtype) = match ctx.optional_tensor(3)? {
        Some(past) => {
            if past.shape() != state_shape {
                return Err(ctx.error(format!(
                    "past_state has shape {:?}, expected {state_shape:?}",
                    past.shape()
                )));
            }
            (ctx.core(past.to_dtype(DType::F32))?, past.dtype())
        }
        None => (
            ctx.core(Tensor::zeros(&state_shape, DType::F32, query.device()))?,
            output_dtype,
        ),
    };
    let scale = match ctx.attr_float("scale", 0.0)? {
        0.0 => 1.0 / (sizes.key_size as f64).sqrt(),
        explicit => explicit as f64,
    };
    let queries = unpack_heads(ctx, &query, sizes.query_heads, sizes.key_size)?;
    let keys = unpack_heads(ctx, &key, sizes.key_value_heads, sizes.key_size)?;
    let values = unpack_heads(ctx, &value, sizes.key_value_heads, sizes.value_size)?;
    let group = sizes.query_heads / sizes.key_value_heads;
    let mut outputs = Vec::with_capacity(sizes.tokens);
    for t in 0..sizes.tokens {
        let step = ctx.core((|| {
            // [B, H_kv, 1, d_k] and [B, H_kv, 1, d_v].
            let key_t = keys.narrow(2, t, 1)?;
            let mut value_t = values.narrow(2, t, 1)?;
            if let Some(decay) = &decay {
                // [B, H_kv, 1 or d_k, 1]: scales the state's rows.
                let factor = decay.narrow(2, t, 1)?.permute(&[0, 1, 3, 2])?.exp()?;
                state = state.mul(&factor)?;
            }
            if let Some(beta) = &beta {
                let retrieved = key_t.matmul(&state)?;
                value_t = beta.narrow(2, t, 1)?.mul(&value_t.sub(&retrieved)?)?;
            }
            state = state.add(&key_t.permute(&[0, 1, 3, 2])?.matmul(&value_t)?)?;
            // Each key/value head serves `group` consecutive query heads.
            let query_t = queries.narrow(2, t, 1)?.contiguous()?.reshape([
                sizes.batch,
                sizes.key_value_heads,
                group,
                sizes.key_size,
            ])?;
            query_t
                .matmul(&state)?
                .reshape([sizes.batch, sizes.query_heads, 1, sizes.value_size])
        })())?;
        outputs.push(step);
    }
    let output = ctx.core((|| {
        let parts: Vec<&Tensor> = outputs.iter().collect();
        let all = if parts.is_empty() {
            Tensor::zeros(
                &[sizes.batch, sizes.query_heads, 0, sizes.value_size],
                DType::F32,
                query.device(),
            )?
        } else {
            Tensor::cat(&parts, 2)?
        };
        all.mul_scalar(scale)?
            .permute(&[0, 2, 1, 3])?
            .contiguous()?
            .reshape([
                sizes.batch,
                sizes.tokens,
                sizes.query_heads * sizes.value_size,
            ])?
            .to_dtype(output_dtype)
    })())?;
    let present = ctx.core(state.to_dtype(state_dtype))?;
    Ok(vec![Value::Tensor(output), Value::Tensor(present)])
}
