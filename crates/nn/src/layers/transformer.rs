//! `TransformerEncoderLayer` and `TransformerDecoderLayer`, like PyTorch's: the same submodule
//! and parameter names (`self_attn.in_proj_weight`, `linear1.weight`, `norm1.bias`, ...) so
//! state dicts load unchanged, post-norm by default or pre-norm (`norm_first`), ReLU or GELU
//! in the feed-forward block, dropout after attention and in the feed-forward block in
//! training mode. `Module::forward` runs the layer without masks (the decoder's needs its
//! memory, so it is self-attention over its input only, as a decoder-only block); the inherent
//! `forward_with_mask`/`forward_with_memory` take the masks.

use anygrad_core::{Device, Error, Result, Tensor};

use crate::layers::{Dropout, LayerNorm, Linear, MultiheadAttention};
use crate::Module;

/// The feed-forward activation of a transformer layer (PyTorch's `activation="relu"|"gelu"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransformerActivation {
    /// `max(x, 0)` (PyTorch's default).
    #[default]
    Relu,
    /// The exact (erf) GELU.
    Gelu,
}

impl TransformerActivation {
    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            TransformerActivation::Relu => x.relu(),
            TransformerActivation::Gelu => x.gelu(),
        }
    }
}

/// The sizes and options shared by both layers (PyTorch's constructor arguments).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransformerLayerConfig {
    /// Model width.
    pub d_model: usize,
    /// Number of attention heads.
    pub nhead: usize,
    /// Hidden width of the feed-forward block (PyTorch's default 2048).
    pub dim_feedforward: usize,
    /// Dropout probability (PyTorch's default 0.1).
    pub dropout: f64,
    /// Feed-forward activation.
    pub activation: TransformerActivation,
    /// LayerNorm eps (PyTorch's default 1e-5).
    pub layer_norm_eps: f64,
    /// `[batch, length, d_model]` inputs when true, `[length, batch, d_model]` otherwise.
    pub batch_first: bool,
    /// Pre-norm (normalize before each block) when true, post-norm otherwise.
    pub norm_first: bool,
}

impl TransformerLayerConfig {
    /// PyTorch's defaults for `d_model` and `nhead`: feed-forward 2048, dropout 0.1, ReLU,
    /// eps 1e-5, sequence-first, post-norm.
    pub fn new(d_model: usize, nhead: usize) -> TransformerLayerConfig {
        TransformerLayerConfig {
            d_model,
            nhead,
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: TransformerActivation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
        }
    }
}

fn attention(config: &TransformerLayerConfig, device: &Device) -> Result<MultiheadAttention> {
    MultiheadAttention::new(
        config.d_model,
        config.nhead,
        config.dropout,
        true,
        config.batch_first,
        device,
    )
}

fn norm(config: &TransformerLayerConfig, device: &Device) -> Result<LayerNorm> {
    Ok(LayerNorm::new(&[config.d_model], device)?.eps(config.layer_norm_eps))
}

/// A transformer encoder layer, like `torch.nn.TransformerEncoderLayer`.
#[derive(Debug, crate::Module)]
#[module(crate = "crate")]
pub struct TransformerEncoderLayer {
    /// Self-attention.
    pub self_attn: MultiheadAttention,
    /// Feed-forward `d_model → dim_feedforward`.
    pub linear1: Linear,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// Feed-forward `dim_feedforward → d_model`.
    pub linear2: Linear,
    /// Norm around the attention block.
    pub norm1: LayerNorm,
    /// Norm around the feed-forward block.
    pub norm2: LayerNorm,
    /// Dropout after attention.
    pub dropout1: Dropout,
    /// Dropout after the feed-forward block.
    pub dropout2: Dropout,
    /// Feed-forward activation.
    #[module(skip)]
    pub activation: TransformerActivation,
    /// Pre-norm when true.
    pub norm_first: bool,
}

impl TransformerEncoderLayer {
    /// A layer with PyTorch's initialization, f32 on `device`.
    pub fn new(config: TransformerLayerConfig, device: &Device) -> Result<TransformerEncoderLayer> {
        Ok(TransformerEncoderLayer {
            self_attn: attention(&config, device)?,
            linear1: Linear::new(config.d_model, config.dim_feedforward, true, device)?,
            dropout: Dropout::new(config.dropout)?,
            linear2: Linear::new(config.dim_feedforward, config.d_model, true, device)?,
            norm1: norm(&config, device)?,
            norm2: norm(&config, device)?,
            dropout1: Dropout::new(config.dropout)?,
            dropout2: Dropout::new(config.dropout)?,
            activation: config.activation,
            norm_first: config.norm_first,
        })
    }

    /// The layer without masks (what `Module::forward` runs).
    pub fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_with_mask(src, None, None)
    }

    /// The layer with PyTorch's `src_mask` (`[L, L]` or `[N · nhead, L, L]`, Bool `true` =
    /// not allowed, or float added) and `src_key_padding_mask` (`[N, L]`, `true` = padding).
    pub fn forward_with_mask(
        &self,
        src: &Tensor,
        src_mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let self_attention = |x: &Tensor| -> Result<Tensor> {
            let (out, _) =
                self.self_attn
                    .forward_attention(x, x, x, src_key_padding_mask, src_mask, false)?;
            self.dropout1.forward(&out)
        };
        let feed_forward = |x: &Tensor| -> Result<Tensor> {
            let hidden = self.activation.apply(&self.linear1.forward(x)?)?;
            let out = self.linear2.forward(&self.dropout.forward(&hidden)?)?;
            self.dropout2.forward(&out)
        };
        if self.norm_first {
            let x = src.add(&self_attention(&self.norm1.forward(src)?)?)?;
            x.add(&feed_forward(&self.norm2.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&src.add(&self_attention(src)?)?)?;
            self.norm2.forward(&x.add(&feed_forward(&x)?)?)
        }
    }
}

/// A transformer decoder layer, like `torch.nn.TransformerDecoderLayer`.
#[derive(Debug, crate::Module)]
#[module(crate = "crate")]
pub struct TransformerDecoderLayer {
    /// Self-attention over the target.
    pub self_attn: MultiheadAttention,
    /// Cross-attention from the target to the memory.
    pub multihead_attn: MultiheadAttention,
    /// Feed-forward `d_model → dim_feedforward`.
    pub linear1: Linear,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// Feed-forward `dim_feedforward → d_model`.
    pub linear2: Linear,
    /// Norm around self-attention.
    pub norm1: LayerNorm,
    /// Norm around cross-attention.
    pub norm2: LayerNorm,
    /// Norm around the feed-forward block.
    pub norm3: LayerNorm,
    /// Dropout after self-attention.
    pub dropout1: Dropout,
    /// Dropout after cross-attention.
    pub dropout2: Dropout,
    /// Dropout after the feed-forward block.
    pub dropout3: Dropout,
    /// Feed-forward activation.
    #[module(skip)]
    pub activation: TransformerActivation,
    /// Pre-norm when true.
    pub norm_first: bool,
}

/// The masks of [`TransformerDecoderLayer::forward_with_memory`] (PyTorch's argument names and
/// conventions: Bool `true` = not allowed / padding, float masks are added).
#[derive(Debug, Clone, Copy, Default)]
pub struct DecoderMasks<'a> {
    /// Self-attention mask `[T, T]` or `[N · nhead, T, T]`.
    pub tgt_mask: Option<&'a Tensor>,
    /// Cross-attention mask `[T, S]` or `[N · nhead, T, S]`.
    pub memory_mask: Option<&'a Tensor>,
    /// Target padding `[N, T]`.
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    /// Memory padding `[N, S]`.
    pub memory_key_padding_mask: Option<&'a Tensor>,
}

impl TransformerDecoderLayer {
    /// A layer with PyTorch's initialization, f32 on `device`.
    pub fn new(config: TransformerLayerConfig, device: &Device) -> Result<TransformerDecoderLayer> {
        Ok(TransformerDecoderLayer {
            self_attn: attention(&config, device)?,
            multihead_attn: attention(&config, device)?,
            linear1: Linear::new(config.d_model, config.dim_feedforward, true, device)?,
            dropout: Dropout::new(config.dropout)?,
            linear2: Linear::new(config.dim_feedforward, config.d_model, true, device)?,
            norm1: norm(&config, device)?,
            norm2: norm(&config, device)?,
            norm3: norm(&config, device)?,
            dropout1: Dropout::new(config.dropout)?,
            dropout2: Dropout::new(config.dropout)?,
            dropout3: Dropout::new(config.dropout)?,
            activation: config.activation,
            norm_first: config.norm_first,
        })
    }

    /// `Module::forward` has no memory input: this is an error pointing at
    /// [`TransformerDecoderLayer::forward_with_memory`].
    pub fn forward(&self, tgt: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "TransformerDecoderLayer",
            format!(
                "forward needs the encoder memory: call forward_with_memory(tgt, memory, masks) \
                 (tgt shape {:?})",
                tgt.shape()
            ),
        ))
    }

    /// The layer, like PyTorch's `forward(tgt, memory, tgt_mask, memory_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask)`.
    pub fn forward_with_memory(
        &self,
        tgt: &Tensor,
        memory: &Tensor,
        masks: DecoderMasks<'_>,
    ) -> Result<Tensor> {
        let self_attention = |x: &Tensor| -> Result<Tensor> {
            let (out, _) = self.self_attn.forward_attention(
                x,
                x,
                x,
                masks.tgt_key_padding_mask,
                masks.tgt_mask,
                false,
            )?;
            self.dropout1.forward(&out)
        };
        let cross_attention = |x: &Tensor| -> Result<Tensor> {
            let (out, _) = self.multihead_attn.forward_attention(
                x,
                memory,
                memory,
                masks.memory_key_padding_mask,
                masks.memory_mask,
                false,
            )?;
            self.dropout2.forward(&out)
        };
        let feed_forward = |x: &Tensor| -> Result<Tensor> {
            let hidden = self.activation.apply(&self.linear1.forward(x)?)?;
            let out = self.linear2.forward(&self.dropout.forward(&hidden)?)?;
            self.dropout3.forward(&out)
        };
        if self.norm_first {
            let x = tgt.add(&self_attention(&self.norm1.forward(tgt)?)?)?;
            let x = x.add(&cross_attention(&self.norm2.forward(&x)?)?)?;
            x.add(&feed_forward(&self.norm3.forward(&x)?)?)
        } else {
            let x = self.norm1.forward(&tgt.add(&self_attention(tgt)?)?)?;
            let x = self.norm2.forward(&x.add(&cross_attention(&x)?)?)?;
            self.norm3.forward(&x.add(&feed_forward(&x)?)?)
        }
    }
}
