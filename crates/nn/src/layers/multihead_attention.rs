//! `MultiheadAttention`, like `torch.nn.MultiheadAttention` with equal query/key/value sizes:
//! PyTorch's parameter names (`in_proj_weight`, `in_proj_bias`, `out_proj.weight`,
//! `out_proj.bias`) so its state dicts load unchanged, its mask conventions (in
//! `key_padding_mask` and a Bool `attn_mask`, `true` means *masked out*; a float `attn_mask` is
//! added to the scores), `batch_first`, and the attention itself through
//! `anygrad_core::scaled_dot_product_attention`. Attention weights are computed separately only
//! when asked for (`need_weights`).

use anygrad_core::{scaled_dot_product_attention, DType, Device, Error, Result, Tensor};

use crate::init;
use crate::layers::Linear;
use crate::module::{Parameter, TrainingFlag};
use crate::Module;

const OP: &str = "MultiheadAttention";

/// Multi-head attention, like `torch.nn.MultiheadAttention(embed_dim, num_heads, dropout,
/// bias, batch_first=...)`. `Module::forward(x)` is self-attention without masks; use
/// [`MultiheadAttention::forward_attention`] for separate key/value inputs and masks.
#[derive(Debug, crate::Module)]
#[module(crate = "crate")]
pub struct MultiheadAttention {
    /// `[3 · embed_dim, embed_dim]`: the query, key and value projections stacked.
    pub in_proj_weight: Parameter,
    /// `[3 · embed_dim]`, when the layer has biases.
    pub in_proj_bias: Option<Parameter>,
    /// The output projection `embed_dim → embed_dim`.
    pub out_proj: Linear,
    /// Number of heads (divides `embed_dim`).
    pub num_heads: usize,
    /// Dropout on the attention weights in training mode.
    pub dropout: f64,
    /// Inputs are `[batch, length, embed]` when true, `[length, batch, embed]` otherwise.
    pub batch_first: bool,
    training: TrainingFlag,
}

/// What [`MultiheadAttention::forward_attention`] returns: the output, and the attention
/// weights when asked for.
pub type AttentionOutput = (Tensor, Option<Tensor>);

impl MultiheadAttention {
    /// A layer with PyTorch's initialization (Xavier-uniform in-projection, zero biases), f32 on
    /// `device`. `embed_dim` must be a multiple of `num_heads`; `dropout` in `[0, 1)`.
    pub fn new(
        embed_dim: usize,
        num_heads: usize,
        dropout: f64,
        bias: bool,
        batch_first: bool,
        device: &Device,
    ) -> Result<MultiheadAttention> {
        if num_heads == 0 || !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::invalid(
                OP,
                format!("embed_dim {embed_dim} must be a multiple of num_heads {num_heads}"),
            ));
        }
        if !(0.0..1.0).contains(&dropout) {
            return Err(Error::invalid(
                OP,
                format!("dropout must be in [0, 1), got {dropout}"),
            ));
        }
        let in_proj_weight = Tensor::zeros(&[3 * embed_dim, embed_dim], DType::F32, device)?;
        init::xavier_uniform_(&in_proj_weight, 1.0)?;
        let out_proj = Linear::new(embed_dim, embed_dim, bias, device)?;
        if let Some(out_bias) = &out_proj.bias {
            init::zeros_(&out_bias.tensor())?;
        }
        let in_proj_bias = if bias {
            Some(Parameter::new(Tensor::zeros(
                &[3 * embed_dim],
                DType::F32,
                device,
            )?))
        } else {
            None
        };
        Ok(MultiheadAttention {
            in_proj_weight: Parameter::new(in_proj_weight),
            in_proj_bias,
            out_proj,
            num_heads,
            dropout,
            batch_first,
            training: TrainingFlag::default(),
        })
    }

    /// The model width.
    pub fn embed_dim(&self) -> usize {
        self.out_proj.in_features()
    }

    /// Self-attention without masks (what `Module::forward` runs).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(self.forward_attention(x, x, x, None, None, false)?.0)
    }

    /// One of the three input projections (`index` 0 query, 1 key, 2 value).
    fn project(&self, x: &Tensor, index: usize) -> Result<Tensor> {
        let embed = self.embed_dim();
        let weight = self
            .in_proj_weight
            .tensor()
            .narrow(0, index * embed, embed)?;
        let projected = x.matmul(&weight.t()?)?;
        match &self.in_proj_bias {
            Some(bias) => projected.add(&bias.tensor().narrow(0, index * embed, embed)?),
            None => Ok(projected),
        }
    }

    /// `[batch, length, embed]` → `[batch, heads, length, head_dim]`.
    fn split_heads(&self, x: &Tensor) -> Result<Tensor> {
        let (batch, length) = (x.shape()[0], x.shape()[1]);
        let head_dim = self.embed_dim() / self.num_heads;
        x.reshape([batch, length, self.num_heads, head_dim])?
            .transpose(1, 2)
    }

    /// Attention like `torch.nn.MultiheadAttention.forward(query, key, value,
    /// key_padding_mask, need_weights, attn_mask)`:
    ///
    /// - `query` `[L, N, E]`, `key`/`value` `[S, N, E]` (`[N, L, E]`, `[N, S, E]` when
    ///   `batch_first`); unbatched `[L, E]` inputs are not supported.
    /// - `key_padding_mask` `[N, S]`: Bool (`true` = ignore that key) or float (added).
    /// - `attn_mask` `[L, S]` or `[N · num_heads, L, S]`: Bool (`true` = not allowed) or float
    ///   (added to the scores).
    /// - `need_weights`: also return the attention weights averaged over heads `[N, L, S]`
    ///   (computed separately; the output always goes through
    ///   `scaled_dot_product_attention`).
    pub fn forward_attention(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        key_padding_mask: Option<&Tensor>,
        attn_mask: Option<&Tensor>,
        need_weights: bool,
    ) -> Result<AttentionOutput> {
        let embed = self.embed_dim();
        for (name, tensor) in [("query", query), ("key", key), ("value", value)] {
            if tensor.rank() != 3 || tensor.shape()[2] != embed {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{name} must be 3-dim with last dim embed_dim {embed}, got shape {:?}",
                        tensor.shape()
                    ),
                ));
            }
        }
        let to_batch_first = |x: &Tensor| {
            if self.batch_first {
                Ok(x.clone())
            } else {
                x.transpose(0, 1)
            }
        };
        let (query, key, value) = (
            to_batch_first(query)?,
            to_batch_first(key)?,
            to_batch_first(value)?,
        );
        let (batch, length, key_length) = (query.shape()[0], query.shape()[1], key.shape()[1]);
        if key.shape()[0] != batch || value.shape()[0] != batch || value.shape()[1] != key_length {
            return Err(Error::invalid(
                OP,
                format!(
                    "query, key and value disagree on batch or key length: {:?}, {:?}, {:?} \
                     (batch first)",
                    query.shape(),
                    key.shape(),
                    value.shape()
                ),
            ));
        }
        let mask = self.merged_mask(
            key_padding_mask,
            attn_mask,
            batch,
            length,
            key_length,
            query.dtype(),
        )?;
        let q = self.split_heads(&self.project(&query, 0)?)?;
        let k = self.split_heads(&self.project(&key, 1)?)?;
        let v = self.split_heads(&self.project(&value, 2)?)?;
        let dropout = if self.training.get() {
            self.dropout
        } else {
            0.0
        };
        let attended =
            scaled_dot_product_attention(&q, &k, &v, mask.as_ref(), dropout, false, None)?;
        let merged = attended.transpose(1, 2)?.reshape([batch, length, embed])?;
        let out = self.out_proj.forward(&merged)?;
        let out = if self.batch_first {
            out
        } else {
            out.transpose(0, 1)?
        };
        let weights = if need_weights {
            let head_dim = embed / self.num_heads;
            let scores = q
                .matmul(&k.transpose(-2, -1)?)?
                .mul_scalar(1.0 / (head_dim as f64).sqrt())?;
            let scores = match &mask {
                Some(mask) => scores.add(mask)?,
                None => scores,
            };
            Some(scores.softmax(-1)?.mean(&[1], false)?)
        } else {
            None
        };
        Ok((out, weights))
    }

    /// Both masks as one additive float mask broadcastable to `[N, H, L, S]` (`-inf` where a
    /// Bool mask is `true`), or `None`.
    fn merged_mask(
        &self,
        key_padding_mask: Option<&Tensor>,
        attn_mask: Option<&Tensor>,
        batch: usize,
        length: usize,
        key_length: usize,
        dtype: DType,
    ) -> Result<Option<Tensor>> {
        let additive = |mask: &Tensor, name: &str| -> Result<Tensor> {
            if mask.dtype() == DType::Bool {
                let device = mask.device();
                let masked = Tensor::scalar(f64::NEG_INFINITY, dtype, device)?;
                let kept = Tensor::scalar(0.0, dtype, device)?;
                Tensor::where_(mask, &masked, &kept)
            } else if mask.dtype().is_float() {
                mask.to_dtype(dtype)
            } else {
                Err(Error::invalid(
                    OP,
                    format!("{name} must be Bool or float, got {}", mask.dtype()),
                ))
            }
        };
        let padding = match key_padding_mask {
            None => None,
            Some(mask) => {
                if mask.shape() != [batch, key_length] {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "key_padding_mask must be [batch, key length] = [{batch}, \
                             {key_length}], got {:?}",
                            mask.shape()
                        ),
                    ));
                }
                Some(additive(mask, "key_padding_mask")?.reshape([batch, 1, 1, key_length])?)
            }
        };
        let attention = match attn_mask {
            None => None,
            Some(mask) => {
                let reshaped = if mask.shape() == [length, key_length] {
                    mask.clone()
                } else if mask.shape() == [batch * self.num_heads, length, key_length] {
                    mask.reshape([batch, self.num_heads, length, key_length])?
                } else {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "attn_mask must be [L, S] = [{length}, {key_length}] or \
                             [batch · heads, L, S] = [{}, {length}, {key_length}], got {:?}",
                            batch * self.num_heads,
                            mask.shape()
                        ),
                    ));
                };
                Some(additive(&reshaped, "attn_mask")?)
            }
        };
        match (padding, attention) {
            (None, None) => Ok(None),
            (Some(mask), None) | (None, Some(mask)) => Ok(Some(mask)),
            (Some(padding), Some(attention)) => Ok(Some(padding.add(&attention)?)),
        }
    }
}

/// A `[size, size]` float mask with `-inf` above the diagonal and `0` elsewhere, like
/// `torch.nn.Transformer.generate_square_subsequent_mask` (position `i` attends to `j <= i`).
pub fn generate_square_subsequent_mask(size: usize, device: &Device) -> Result<Tensor> {
    let row = Tensor::arange(0.0, size as f64, 1.0, DType::I32, device)?.reshape([size, 1])?;
    let column = Tensor::arange(0.0, size as f64, 1.0, DType::I32, device)?.reshape([1, size])?;
    let masked = Tensor::scalar(f64::NEG_INFINITY, DType::F32, device)?;
    let kept = Tensor::scalar(0.0, DType::F32, device)?;
    Tensor::where_(&column.gt(&row)?, &masked, &kept)
}
