//! The fused GPU path of `scaled_dot_product_attention` (`attention.rs` checks the arguments,
//! then tries this path before its composite).
//!
//! Design: the fused op is an *internal custom autograd node*, not a new primitive. Its
//! forward is one GPU kernel (`backend/gpu/attention/`: online softmax over key tiles, the
//! `[B, H, L, S]` scores never materialised, the row log-sum-exp saved) reached through
//! `Storage::attention_forward`; its backward ([`FusedBackward`], attached with
//! `Tensor::with_custom_backward`) runs the three backward kernels through
//! `Storage::attention_backward`. The CPU has no separate implementation of the same math:
//! there the composite (matmul, masked softmax, matmul) *is* the definition, and it stays the
//! reference the fused kernels and their gradients are tested against. A primitive would have
//! needed a second CPU implementation of the same op and a `BackendStorage` method with two
//! outputs for one GPU-only kernel.
//!
//! The path is taken on a GPU device when `dropout_p == 0`, the batch dims of query, key and
//! value are equal, the attention mask is absent or a key-padding mask (Bool or additive,
//! varying only along the first batch dim and the keys: `[B, 1, 1, S]` for `[B, H, L, S]`
//! weights; it becomes an f32 bias per key, `-3e38` where masked, and a fully masked row gives
//! zeros as in the composite; a float mask that requires grad keeps the composite), and the
//! kernels cover the shape and dtype
//! (`Storage::attention_supported`: f32, or f16 with `SHADER_F16`; head and value sizes
//! multiples of 4 up to 128). Under f16 autocast f32 inputs are cast to f16 on the way in and
//! the output back to f32 (as the composite's matmuls do). The policy ([`FusedAttention`],
//! `ANYGRAD_FUSED_ATTENTION=auto|on|off`) is `auto` by default: the fused kernel in f32, and
//! in f16 when gradients will be taken or the scores would be large, the composite (faster on
//! the H200 today) for smaller f16 inference calls; `off` forces the composite everywhere,
//! `on` the kernel.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use super::Tensor;
use crate::autograd::CustomBackward;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{AttentionRows, AttentionShape};
use crate::layout::Layout;
use crate::storage::Storage;

/// When `scaled_dot_product_attention` takes its fused GPU kernel (where the kernel covers the
/// call; see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FusedAttention {
    /// The fused kernel for every f32 call, for f16 calls that the device runs on tensor
    /// cores (cooperative matrices; head and value sizes multiples of 16 up to 128), and for
    /// other f16 calls where it saves memory that matters: when gradients will be taken (the
    /// composite would keep the `[B, H, L, S]` weights of every layer alive for backward) or
    /// when the scores would take at least [`FUSED_ATTENTION_SCORES_BYTES`]. Smaller f16
    /// inference calls without tensor-core attention take the composite (docs/PERFORMANCE.md).
    Auto,
    /// The fused kernel wherever it covers the call.
    On,
    /// The composite everywhere (matmul, softmax, matmul).
    Off,
}

/// Size of the `[B, H, L, S]` f16 scores from which [`FusedAttention::Auto`] takes the fused
/// kernel in inference where tensor cores do not run it: 128 MiB. Measured on the H200
/// (2026-12-01, MiniLM inference): in f32 the fused kernel was faster at
/// every size tried (batch 64 x 32 and 128 tokens: 6-10%, batch 8 x 128: 5-11%, batch 8 x
/// 512: 28%); under f16 autocast the composite (f16 matmuls on tensor cores) was faster then
/// (batch 64 x 128: 10%, batch 8 x 512: 12%), and slower once the cooperative forward was
/// reworked (2026-12-01: batch 64 x 128 13,710 against 16,677 sequences/s fused).
pub const FUSED_ATTENTION_SCORES_BYTES: usize = 128 << 20;

/// 0: not decided yet (read `ANYGRAD_FUSED_ATTENTION` on first use), 1: on, 2: off, 3: auto.
static FUSED: AtomicU8 = AtomicU8::new(0);

/// The fused-attention policy: [`set_fused_attention_mode`]'s, else `ANYGRAD_FUSED_ATTENTION`
/// (`auto`, the default; `on`; `off`).
pub fn fused_attention_mode() -> FusedAttention {
    match FUSED.load(Ordering::Relaxed) {
        1 => FusedAttention::On,
        2 => FusedAttention::Off,
        3 => FusedAttention::Auto,
        _ => {
            let mode = match std::env::var("ANYGRAD_FUSED_ATTENTION")
                .map(|value| value.trim().to_ascii_lowercase())
                .as_deref()
            {
                Ok("off" | "0" | "false") => FusedAttention::Off,
                Ok("on" | "1" | "true") => FusedAttention::On,
                _ => FusedAttention::Auto,
            };
            set_fused_attention_mode(mode);
            mode
        }
    }
}

/// Whether `scaled_dot_product_attention` may use its fused GPU kernel at all (the mode is
/// not [`FusedAttention::Off`]).
pub fn fused_attention_enabled() -> bool {
    fused_attention_mode() != FusedAttention::Off
}

/// Set the fused-attention policy for the whole process (overrides `ANYGRAD_FUSED_ATTENTION`).
pub fn set_fused_attention_mode(mode: FusedAttention) {
    let code = match mode {
        FusedAttention::On => 1,
        FusedAttention::Off => 2,
        FusedAttention::Auto => 3,
    };
    FUSED.store(code, Ordering::Relaxed);
}

/// Force the fused kernel on (wherever it covers a call) or off for the whole process.
pub fn set_fused_attention(enabled: bool) {
    set_fused_attention_mode(if enabled {
        FusedAttention::On
    } else {
        FusedAttention::Off
    });
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

/// `tensor` (`[batch.., rows, width]`) with the `[batch, heads, rows, width]` layout the fused
/// forward reads it through (heads: the last batch dim): a view of its own storage where the
/// kernel can address one (`AttentionRows::of`), else a dense copy.
fn head_view(tensor: &Tensor, batch: &[usize]) -> Result<(Tensor, Layout)> {
    let rank = tensor.rank();
    let (rows, width) = (tensor.shape()[rank - 2], tensor.shape()[rank - 1]);
    let heads = batch.last().copied().unwrap_or(1).max(1);
    let shape = [batch.iter().product::<usize>() / heads, heads, rows, width];
    if let Some(layout) = tensor.layout().reshape_view(&shape) {
        if AttentionRows::of(&layout).is_some() {
            return Ok((tensor.clone(), layout));
        }
    }
    Ok((tensor.copy()?, Layout::contiguous(&shape)))
}

/// The key-padding bias of `mask` for weights `[batch.., L, S]`: `Some(f32 [rows, S])`
/// (`rows` 1 or `batch[0]`; 0 where the mask attends, its value for a float mask, `-3e38`
/// where it masks) when the mask varies only along the first batch dim and the keys; `None`
/// otherwise (the composite handles it).
fn key_padding_bias(mask: &Tensor, batch: &[usize], key_length: usize) -> Result<Option<Tensor>> {
    let rank = batch.len() + 2;
    if mask.rank() > rank || mask.is_tracked() {
        return Ok(None);
    }
    let mut dims = vec![1; rank - mask.rank()];
    dims.extend_from_slice(mask.shape());
    let rows = if batch.is_empty() { 1 } else { dims[0] };
    let leading_ok = batch.is_empty() || rows == 1 || rows == batch[0];
    // The query-row dim and every batch dim but the first are broadcast.
    let middle_ok = dims[rank - 2] == 1 && (rank < 3 || dims[1..rank - 2].iter().all(|&d| d == 1));
    if !leading_ok || !middle_ok || dims[rank - 1] != key_length {
        return Ok(None);
    }
    let _no_graph = crate::autograd::no_grad();
    let mask = mask.reshape([rows, key_length])?;
    let lowest = -3.0e38;
    let bias = if mask.dtype() == DType::Bool {
        let device = mask.device();
        Tensor::where_(
            &mask,
            &Tensor::scalar(0.0, DType::F32, device)?,
            &Tensor::scalar(lowest, DType::F32, device)?,
        )?
    } else {
        mask.to_dtype(DType::F32)?.maximum_scalar(lowest)?
    };
    let dense = if bias.is_contiguous() && bias.layout().offset == 0 {
        bias
    } else {
        bias.copy()?
    };
    Ok(Some(dense))
}

/// The fused path, or `None` where it does not apply (the caller runs the composite).
/// Arguments were checked by the caller; `scale` is resolved.
pub(super) fn try_fused(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attention_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: f64,
) -> Result<Option<Tensor>> {
    if dropout_p > 0.0 || !matches!(query.device(), Device::Gpu(_)) {
        return Ok(None);
    }
    let batch = &query.shape()[..query.rank() - 2];
    let dtype = query.dtype();
    let compute = match (dtype, crate::amp::autocast_dtype()) {
        (DType::F32, Some(DType::F16)) => DType::F16,
        _ => dtype,
    };
    match fused_attention_mode() {
        FusedAttention::Off => return Ok(None),
        FusedAttention::On => {}
        FusedAttention::Auto => {
            let needs_grad = crate::autograd::is_grad_enabled()
                && [query, key, value].iter().any(|t| t.requires_grad());
            let scores = batch.iter().product::<usize>()
                * query.shape()[query.rank() - 2]
                * key.shape()[key.rank() - 2]
                * compute.size_in_bytes();
            let tensor_cores = match query.device() {
                Device::Gpu(gpu) => gpu.cooperative_attention_covers(
                    query.shape()[query.rank() - 1],
                    value.shape()[value.rank() - 1],
                ),
                _ => false,
            };
            if compute != DType::F32
                && !needs_grad
                && !tensor_cores
                && scores < FUSED_ATTENTION_SCORES_BYTES
            {
                return Ok(None);
            }
        }
    }
    if key.shape()[..key.rank() - 2] != *batch || value.shape()[..value.rank() - 2] != *batch {
        return Ok(None);
    }
    let batch_heads: usize = batch.iter().product();
    let key_length = key.shape()[key.rank() - 2];
    let key_bias = match attention_mask {
        None => None,
        Some(mask) => match key_padding_bias(mask, batch, key_length)? {
            Some(bias) => Some(bias),
            None => return Ok(None),
        },
    };
    let shape = AttentionShape {
        batch_heads,
        query_length: query.shape()[query.rank() - 2],
        key_length: key.shape()[key.rank() - 2],
        head_dim: query.shape()[query.rank() - 1],
        value_dim: value.shape()[value.rank() - 1],
        scale,
        causal: is_causal,
        key_bias_group: key_bias
            .as_ref()
            .map(|bias| batch_heads / bias.shape()[0].max(1)),
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
    let mut output_shape = batch.to_vec();
    output_shape.extend([shape.query_length, shape.value_dim]);
    // Inference: the scalar forward reads the operands through views (heads split from a
    // stacked projection, say) without dense copies.
    let needs_grad = crate::autograd::is_grad_enabled()
        && [&query, &key, &value].iter().any(|t| t.requires_grad());
    if !needs_grad && Storage::attention_forward_takes_views(query.device(), compute, &shape) {
        let views = [&query, &key, &value]
            .map(|t| head_view(t, batch))
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        let (output, _) = {
            let (q, k, v) = (
                views[0].0.storage(),
                views[1].0.storage(),
                views[2].0.storage(),
            );
            let bias = key_bias.as_ref().map(|bias| bias.storage());
            q.attention_forward_views(
                &views[0].1,
                &k,
                &views[1].1,
                &v,
                &views[2].1,
                bias.as_deref(),
                &shape,
            )?
        };
        let output = Tensor::from_storage(output, &output_shape, None);
        if output.dtype() != dtype {
            return Ok(Some(output.to_dtype(dtype)?));
        }
        return Ok(Some(output));
    }
    let saved = [&query, &key, &value]
        .map(|t| dense_rows(&t.detach(), shape.batch_heads))
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let (output, logsumexp) = {
        let (q, k, v) = (saved[0].storage(), saved[1].storage(), saved[2].storage());
        let bias = key_bias.as_ref().map(|bias| bias.storage());
        q.attention_forward(&k, &v, bias.as_deref(), &shape)?
    };
    let output = Tensor::from_storage(output, &output_shape, None);
    let logsumexp = Tensor::from_storage(logsumexp, &[shape.rows()], None);
    let backward = FusedBackward {
        query: saved[0].clone(),
        key: saved[1].clone(),
        value: saved[2].clone(),
        output: output.reshape([shape.batch_heads, shape.query_length, shape.value_dim])?,
        logsumexp,
        key_bias,
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
    /// The f32 key-padding bias `[rows, key_length]`, if any.
    key_bias: Option<Tensor>,
    shape: AttentionShape,
}

impl CustomBackward for FusedBackward {
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let shape = &self.shape;
        let grad = dense_rows(
            &grad_output.detach().to_dtype(self.query.dtype())?,
            shape.batch_heads,
        )?;
        let (query_grad, key_value_grad) = {
            let storages = [
                &self.query,
                &self.key,
                &self.value,
                &self.output,
                &self.logsumexp,
                &grad,
            ]
            .map(|t| t.storage());
            let bias = self.key_bias.as_ref().map(|bias| bias.storage());
            storages[0].attention_backward(
                &storages[1],
                &storages[2],
                &storages[3],
                &storages[4],
                &storages[5],
                bias.as_deref(),
                shape,
            )?
        };
        let [query_input, key_input, value_input] = inputs else {
            return Err(crate::error::Error::invalid(
                "scaled_dot_product_attention",
                format!("the fused backward expects 3 inputs, got {}", inputs.len()),
            ));
        };
        // dK and dV are two views of one storage: dK first, then dV.
        let key_value_grad = Arc::new(RwLock::new(key_value_grad));
        let view = |shape: &[usize], offset: usize| {
            let mut layout = Layout::contiguous(shape);
            layout.offset = offset;
            Tensor::from_view(key_value_grad.clone(), layout, None)
        };
        Ok(vec![
            Some(Tensor::from_storage(query_grad, query_input.shape(), None)),
            Some(view(key_input.shape(), 0)),
            Some(view(value_input.shape(), key_input.numel())),
        ])
    }
}
