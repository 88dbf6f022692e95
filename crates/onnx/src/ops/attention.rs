//! Attention (opset 23+): scaled dot-product attention over 3-D (`[B, S, H * D]`, with
//! `q_num_heads`/`kv_num_heads`) or 4-D (`[B, H, S, D]`) operands, with a boolean or additive
//! mask, past key/value caches, grouped heads, causal and sliding-window masking,
//! `nonpad_kv_seqlen`, softcap and the `qk_matmul_output` modes, composed from tensor ops;
//! and RotaryEmbedding.

use anygrad_core::{DType, Tensor};

use super::OperatorEntry;
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The attention operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    OperatorEntry {
        op_type: "Attention",
        min_opset: 23,
        max_opset: i64::MAX,
        run: attention,
    },
    OperatorEntry {
        op_type: "RotaryEmbedding",
        min_opset: 23,
        max_opset: i64::MAX,
        run: rotary_embedding,
    },
];

/// RotaryEmbedding: rotate pairs of each head's first `rotary_embedding_dim` features by the
/// cached angles (halves, or even/odd features with `interleaved`), at `position_ids` when
/// given. X is `[B, H, S, D]` or `[B, S, H * D]` (with `num_heads`).
fn rotary_embedding(ctx: &NodeContext) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let mut cos = ctx.tensor(1)?;
    let mut sin = ctx.tensor(2)?;
    let interleaved = ctx.attr_int("interleaved", 0)? != 0;
    let original = x.shape().to_vec();
    // As [B, S, H, D].
    let x4 = match original.len() {
        4 => ctx.core(x.permute(&[0, 2, 1, 3]))?,
        3 => {
            let heads = ctx.attr_int("num_heads", 0)?;
            if heads <= 0 || original[2] % heads as usize != 0 {
                return Err(ctx.error(format!("num_heads {heads} does not divide the hidden size")));
            }
            let h = heads as usize;
            ctx.core(x.reshape([original[0], original[1], h, original[2] / h]))?
        }
        r => return Err(ctx.error(format!("X must be 3-D or 4-D, got rank {r}"))),
    };
    let head = x4.shape()[3];
    let rotary = match ctx.attr_int("rotary_embedding_dim", 0)? {
        0 => head,
        d if d > 0 && (d as usize) <= head && d % 2 == 0 => d as usize,
        d => {
            return Err(ctx.error(format!(
                "rotary_embedding_dim {d} does not fit head size {head}"
            )))
        }
    };
    if let Some(positions) = ctx.optional(3) {
        let positions = positions.to_int64().map_err(|e| ctx.error(e))?;
        let rows = cos.shape().first().copied().unwrap_or(0);
        let mut picks = Vec::with_capacity(positions.data.len());
        for &p in &positions.data {
            if p < 0 || p as usize >= rows {
                return Err(ctx.error(format!("position {p} is outside the cache's {rows} rows")));
            }
            picks.push(p as i32);
        }
        let index = ctx.core(Tensor::from_vec(picks, &[positions.data.len()], x.device()))?;
        let mut shape = positions.shape.clone();
        shape.push(rotary / 2);
        cos = ctx.core(
            cos.index_select(0, &index)
                .and_then(|c| c.reshape(shape.clone())),
        )?;
        sin = ctx.core(sin.index_select(0, &index).and_then(|c| c.reshape(shape)))?;
    }
    let y = ctx.core((|| {
        let cos = cos.unsqueeze(2)?;
        let sin = sin.unsqueeze(2)?;
        let rotate = x4.narrow(3, 0, rotary)?;
        let (x1, x2) = if interleaved {
            let shape = rotate.shape().to_vec();
            let pairs = rotate.reshape([shape[0], shape[1], shape[2], rotary / 2, 2])?;
            (
                pairs.narrow(4, 0, 1)?.squeeze(4)?,
                pairs.narrow(4, 1, 1)?.squeeze(4)?,
            )
        } else {
            (
                rotate.narrow(3, 0, rotary / 2)?,
                rotate.narrow(3, rotary / 2, rotary / 2)?,
            )
        };
        let real = cos.mul(&x1)?.sub(&sin.mul(&x2)?)?;
        let imag = sin.mul(&x1)?.add(&cos.mul(&x2)?)?;
        let rotated = if interleaved {
            Tensor::stack(&[&real, &imag], 4)?.reshape(rotate.shape().to_vec())?
        } else {
            Tensor::cat(&[&real, &imag], 3)?
        };
        let out = if rotary < head {
            Tensor::cat(&[&rotated, &x4.narrow(3, rotary, head - rotary)?], 3)?
        } else {
            rotated
        };
        if original.len() == 3 {
            out.reshape(original.clone())
        } else {
            out.permute(&[0, 2, 1, 3])?.contiguous()
        }
    })())?;
    Ok(vec![Value::Tensor(y)])
}

/// `[B, S, H * D]` as `[B, H, S, D]`.
fn split_heads(ctx: &NodeContext, t: &Tensor, heads: i64) -> Result<Tensor> {
    let &[b, s, hidden] = t.shape() else {
        return Err(ctx.error("3-D operands must be [batch, sequence, hidden]"));
    };
    if heads <= 0 || hidden % heads as usize != 0 {
        return Err(ctx.error(format!(
            "{heads} heads do not divide the hidden size {hidden}"
        )));
    }
    let h = heads as usize;
    ctx.core(
        t.reshape([b, s, h, hidden / h])
            .and_then(|r| r.permute(&[0, 2, 1, 3])),
    )
}

fn attention(ctx: &NodeContext) -> Result<Vec<Value>> {
    let mut q = ctx.tensor(0)?;
    let mut k = ctx.tensor(1)?;
    let mut v = ctx.tensor(2)?;
    let three_d = q.rank() == 3;
    let q_heads = ctx.attr_opt_int("q_num_heads")?;
    let kv_heads = ctx.attr_opt_int("kv_num_heads")?;
    if three_d {
        let (Some(qh), Some(kh)) = (q_heads, kv_heads) else {
            return Err(ctx.error("3-D operands need q_num_heads and kv_num_heads"));
        };
        q = split_heads(ctx, &q, qh)?;
        k = split_heads(ctx, &k, kh)?;
        v = split_heads(ctx, &v, kh)?;
    }
    if q.rank() != 4 || k.rank() != 4 || v.rank() != 4 {
        return Err(ctx.error("Q, K and V must all be 3-D or all 4-D"));
    }
    let dtype = q.dtype();
    let head = q.shape()[3];
    let scale = match ctx.attribute("scale") {
        Some(_) => ctx.attr_float("scale", 1.0)? as f64,
        None => 1.0 / (head as f64).sqrt(),
    };
    let past_len = match ctx.optional(4) {
        Some(_) => {
            let past_key = ctx.tensor(4)?;
            let past_value = ctx.tensor(5)?;
            k = ctx.core(Tensor::cat(&[&past_key, &k], 2))?;
            v = ctx.core(Tensor::cat(&[&past_value, &v], 2))?;
            Some(past_key.shape()[2])
        }
        None => None,
    };
    let (present_key, present_value) = (k.clone(), v.clone());
    let batch = q.shape()[0];
    let q_len = q.shape()[2];
    let kv_len = k.shape()[2];
    let nonpad = ctx.optional_ints(6)?;
    if let Some(n) = &nonpad {
        if n.len() != batch {
            return Err(ctx.error("nonpad_kv_seqlen must hold one length per batch entry"));
        }
    }
    // The structural bias (causal, sliding window, padding) on the host: [B, 1, q, kv].
    let causal = ctx.attr_int("is_causal", 0)? != 0;
    let left = ctx.attr_int("left_window_size", -1)?;
    let right = ctx.attr_int("right_window_size", -1)?;
    let mut structural = vec![0f32; batch * q_len * kv_len];
    let mut any_structure = false;
    for b in 0..batch {
        let offset = match (&nonpad, past_len) {
            (Some(n), None) => n[b] - q_len as i64,
            (_, Some(p)) => p as i64,
            (None, None) => 0,
        };
        for i in 0..q_len {
            for j in 0..kv_len {
                let diff = i as i64 + offset - j as i64;
                let mut allowed = true;
                if causal {
                    allowed &= diff >= 0;
                }
                if left >= 0 {
                    allowed &= diff <= left;
                }
                if right >= 0 {
                    allowed &= -diff <= right;
                }
                if let Some(n) = &nonpad {
                    allowed &= (j as i64) < n[b];
                }
                if !allowed {
                    structural[(b * q_len + i) * kv_len + j] = f32::NEG_INFINITY;
                    any_structure = true;
                }
            }
        }
    }
    let mut bias = ctx.core(
        Tensor::from_vec(structural, &[batch, 1, q_len, kv_len], q.device())
            .and_then(|t| t.to_dtype(dtype)),
    )?;
    if let Some(mask) = ctx.optional_tensor(3)? {
        let last = mask.shape().last().copied().unwrap_or(1);
        let mut mask = if mask.dtype() == DType::Bool {
            let zero = ctx.core(Tensor::zeros(&[], dtype, q.device()))?;
            let minus = ctx.core(Tensor::full(&[], f64::NEG_INFINITY, dtype, q.device()))?;
            ctx.core(Tensor::where_(&mask, &zero, &minus))?
        } else {
            ctx.core(mask.to_dtype(dtype))?
        };
        if last < kv_len {
            let mut side = mask.shape().to_vec();
            let d = side.len() - 1;
            side[d] = kv_len - last;
            let pad = ctx.core(Tensor::full(&side, f64::NEG_INFINITY, dtype, q.device()))?;
            mask = ctx.core(Tensor::cat(&[&mask, &pad], d as isize))?;
        }
        bias = ctx.core(bias.add(&mask))?;
        any_structure = true;
    }
    // Grouped heads: each key/value head serves consecutive query heads.
    let (qh, kh) = (q.shape()[1], k.shape()[1]);
    if qh != kh {
        if kh == 0 || qh % kh != 0 {
            return Err(ctx.error(format!(
                "{qh} query heads are not a multiple of {kh} key heads"
            )));
        }
        let reps = qh / kh;
        let index: Vec<i32> = (0..qh).map(|h| (h / reps) as i32).collect();
        let index = ctx.core(Tensor::from_vec(index, &[qh], q.device()))?;
        k = ctx.core(k.index_select(1, &index))?;
        v = ctx.core(v.index_select(1, &index))?;
    }
    let root = scale.sqrt();
    let mut qk = ctx.core(
        q.mul_scalar(root)
            .and_then(|qs| qs.matmul(&k.mul_scalar(root)?.transpose(2, 3)?)),
    )?;
    let softcap = ctx.attr_float("softcap", 0.0)? as f64;
    if softcap > 0.0 {
        qk = ctx.core(
            qk.div_scalar(softcap)
                .and_then(|t| t.tanh())
                .and_then(|t| t.mul_scalar(softcap)),
        )?;
    }
    let with_bias = ctx.core(qk.add(&bias))?;
    let mode = ctx.attr_int("qk_matmul_output_mode", 0)?;
    let wide = ctx.attr_opt_int("softmax_precision")?.is_some() && dtype == DType::F16;
    let scores = if wide {
        ctx.core(with_bias.to_dtype(DType::F32))?
    } else {
        with_bias.clone()
    };
    // Softmax whose fully masked rows are zero (not NaN).
    let probabilities = ctx.core((|| {
        let top = scores.max(&[-1], true)?;
        let masked_row = top.eq_scalar(f64::NEG_INFINITY)?;
        let safe = Tensor::where_(&masked_row, &top.zeros_like()?, &top)?;
        let e = scores.sub(&safe)?.exp()?;
        let total = e.sum(&[-1], true)?;
        let total = Tensor::where_(&total.eq_scalar(0.0)?, &total.ones_like()?, &total)?;
        let mut p = e.div(&total)?;
        if any_structure {
            let blocked = bias.max(&[-1], true)?.eq_scalar(f64::NEG_INFINITY)?;
            p = Tensor::where_(&blocked, &p.zeros_like()?, &p)?;
        }
        p.to_dtype(dtype)
    })())?;
    let qk_output = match mode {
        2 => with_bias,
        3 => probabilities.clone(),
        _ => qk,
    };
    let mut y = ctx.core(probabilities.matmul(&v))?;
    if three_d {
        let &[b, h, s, d] = y.shape() else {
            return Err(ctx.error("unexpected output rank"));
        };
        y = ctx.core(
            y.permute(&[0, 2, 1, 3])
                .and_then(|t| t.reshape([b, s, h * d])),
        )?;
    }
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(present_key),
        Value::Tensor(present_value),
        Value::Tensor(qk_output),
    ])
}
