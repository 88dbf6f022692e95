//! [`BertModel`]: the BERT encoder of Hugging Face `transformers` (`BertModel` without its
//! pooler), with the same module tree and therefore the same parameter names
//! (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`,
//! `encoder.layer.0.output.LayerNorm.bias`, ...), so a Hugging Face `model.safetensors`
//! loads strictly (see `bert/loading.rs`).
//!
//! Each layer is post-norm: `h = LayerNorm(x + Dropout(Wo · attention(x)))`, then
//! `LayerNorm(h + Dropout(W2 · act(W1 · h)))`. The attention core is the core's
//! `scaled_dot_product_attention`, with dropout on the attention probabilities
//! (`attention_probs_dropout_prob`) in training mode only, as Hugging Face does.
//!
//! Gradient checkpointing of the encoder layers (Hugging Face's
//! `gradient_checkpointing_enable()`): [`BertModel::set_gradient_checkpointing`] makes each
//! layer run through `anygrad_nn::checkpoint_fn`, keeping only the layer inputs for backward
//! and recomputing each layer there (dropout masks replayed), for a second forward's cost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anygrad_core::{DType, Error, Result, Tensor};
use anygrad_nn::module::{child_prefix, Kind, Parameter};
use anygrad_nn::{checkpoint_fn, Dropout, Embedding, LayerNorm, Linear, Module, TrainingFlag};

use super::config::{BertConfig, HiddenActivation};

/// Added to the attention scores of padding keys: `exp` of it underflows to exactly 0 in f32
/// (and it stays finite in f16, unlike `f32::MIN`).
const MASKED_SCORE: f64 = -1.0e4;

/// Self-attention core: `q, k, v: [batch, heads, tokens, head_dim]` and an additive `mask`
/// broadcasting to `[batch, heads, tokens, tokens]`, through the core's
/// `scaled_dot_product_attention` (scale `1/√head_dim`), with `dropout` on the attention
/// probabilities (the caller passes 0 in eval mode). The mask is built in f32; under autocast
/// (f16 projections) `scaled_dot_product_attention` casts it to their dtype.
fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    dropout: f64,
) -> Result<Tensor> {
    anygrad_core::scaled_dot_product_attention(q, k, v, mask, dropout, false, None)
}

/// Word, position and token type embeddings, summed and layer-normalized.
#[derive(Module)]
pub struct BertEmbeddings {
    /// `[vocab_size, hidden]`.
    pub word_embeddings: Embedding,
    /// `[max_position_embeddings, hidden]`.
    pub position_embeddings: Embedding,
    /// `[type_vocab_size, hidden]`.
    pub token_type_embeddings: Embedding,
    /// Normalization of the sum.
    #[module(name = "LayerNorm")]
    pub layer_norm: LayerNorm,
    dropout: Dropout,
}

impl BertEmbeddings {
    fn new(config: &BertConfig, device: &anygrad_core::Device) -> Result<BertEmbeddings> {
        Ok(BertEmbeddings {
            word_embeddings: Embedding::new(config.vocab_size, config.hidden_size, device)?,
            position_embeddings: Embedding::new(
                config.max_position_embeddings,
                config.hidden_size,
                device,
            )?,
            token_type_embeddings: Embedding::new(
                config.type_vocab_size,
                config.hidden_size,
                device,
            )?,
            layer_norm: LayerNorm::new(&[config.hidden_size], device)?.eps(config.layer_norm_eps),
            dropout: Dropout::new(config.hidden_dropout_prob)?,
        })
    }

    /// `[batch, tokens]` ids → `[batch, tokens, hidden]`, token types all 0.
    pub fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let types = Tensor::zeros(input_ids.shape(), DType::I32, input_ids.device())?;
        self.embed(input_ids, &types)
    }

    /// `[batch, tokens]` ids and token types → `[batch, tokens, hidden]`.
    pub fn embed(&self, input_ids: &Tensor, token_type_ids: &Tensor) -> Result<Tensor> {
        let tokens = input_ids.shape()[1];
        let positions = Tensor::arange(0.0, tokens as f64, 1.0, DType::I32, input_ids.device())?;
        let words = self.word_embeddings.forward(input_ids).map_err(|e| {
            Error::invalid(
                "BertModel",
                format!("input_ids: word embedding lookup failed (ids must be < vocab_size): {e}"),
            )
        })?;
        let types = self
            .token_type_embeddings
            .forward(token_type_ids)
            .map_err(|e| {
                Error::invalid(
                    "BertModel",
                    format!(
                        "token_type_ids: token type lookup failed (types must be < type_vocab_size): {e}"
                    ),
                )
            })?;
        let sum = words
            .add(&types)?
            .add(&self.position_embeddings.forward(&positions)?)?;
        self.dropout.forward(&self.layer_norm.forward(&sum)?)
    }
}

/// The query, key and value projections and the multi-head attention between them.
#[derive(Module)]
pub struct BertSelfAttention {
    /// Query projection.
    pub query: Linear,
    /// Key projection.
    pub key: Linear,
    /// Value projection.
    pub value: Linear,
    heads: usize,
    /// Dropout probability of the attention probabilities (`attention_probs_dropout_prob`).
    attention_dropout: f64,
    /// Train/eval: the attention dropout applies in training mode only.
    training: TrainingFlag,
}

impl BertSelfAttention {
    /// `[batch, tokens, hidden]` → `[batch, tokens, hidden]`, every key attended.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, None)
    }

    /// Attention with an additive `[batch, 1, 1, tokens]` key mask.
    pub fn forward_masked(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let (batch, tokens, hidden) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let head_dim = hidden / self.heads;
        let split = |t: Tensor| -> Result<Tensor> {
            t.reshape([batch, tokens, self.heads, head_dim])?
                .transpose(1, 2)
        };
        let (q, k, v) = match self.stacked_projection(x)? {
            // [batch, tokens, 3 * hidden] -> three [batch, heads, tokens, head_dim] views.
            Some(qkv) => {
                let parts = qkv.chunk(3, -1)?;
                (
                    split(parts[0].clone())?,
                    split(parts[1].clone())?,
                    split(parts[2].clone())?,
                )
            }
            None => (
                split(self.query.forward(x)?)?,
                split(self.key.forward(x)?)?,
                split(self.value.forward(x)?)?,
            ),
        };
        let dropout = if self.training.get() {
            self.attention_dropout
        } else {
            0.0
        };
        attention(&q, &k, &v, mask, dropout)?
            .transpose(1, 2)?
            .reshape([batch, tokens, hidden])
    }
}

impl BertSelfAttention {
    /// The query, key and value projections as one matmul with the three weights stacked
    /// (`[3 * hidden, hidden]`, biases likewise): one larger product fills the GPU better than
    /// three, and under autocast `x` is cast once instead of three times. Gradients reach the
    /// three layers' parameters through the stacking. `None` when the three layers do not all
    /// have a bias or all lack one (then each projects on its own).
    fn stacked_projection(&self, x: &Tensor) -> Result<Option<Tensor>> {
        let layers = [&self.query, &self.key, &self.value];
        let biases: Vec<Tensor> = layers
            .iter()
            .filter_map(|l| l.bias.as_ref().map(|b| b.tensor()))
            .collect();
        if !matches!(biases.len(), 0 | 3) {
            return Ok(None);
        }
        let weights: Vec<Tensor> = layers.iter().map(|l| l.weight.tensor()).collect();
        let weight = Tensor::cat(&weights.iter().collect::<Vec<_>>(), 0)?;
        let bias = if biases.is_empty() {
            None
        } else {
            Some(Tensor::cat(&biases.iter().collect::<Vec<_>>(), 0)?)
        };
        x.linear(&weight, bias.as_ref()).map(Some)
    }
}

/// A projection, dropout, and the post-norm over it plus the residual (`BertSelfOutput` and
/// `BertOutput` of Hugging Face: `dense`, `LayerNorm`).
#[derive(Module)]
pub struct BertResidualOutput {
    /// The projection back to `hidden`.
    pub dense: Linear,
    /// Normalization of projection + residual.
    #[module(name = "LayerNorm")]
    pub layer_norm: LayerNorm,
    dropout: Dropout,
}

impl BertResidualOutput {
    fn new(input: usize, config: &BertConfig, device: &anygrad_core::Device) -> Result<Self> {
        Ok(BertResidualOutput {
            dense: Linear::new(input, config.hidden_size, true, device)?,
            layer_norm: LayerNorm::new(&[config.hidden_size], device)?.eps(config.layer_norm_eps),
            dropout: Dropout::new(config.hidden_dropout_prob)?,
        })
    }

    /// The projection alone (with dropout), without residual and norm.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.dropout.forward(&self.dense.forward(x)?)
    }

    /// `LayerNorm(residual + dropout(dense(x)))`.
    pub fn forward_residual(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        self.layer_norm.forward(&self.forward(x)?.add(residual)?)
    }
}

/// Self-attention and its output projection (`attention.self`, `attention.output`).
#[derive(Module)]
pub struct BertAttention {
    /// The projections and attention.
    #[module(name = "self")]
    pub self_attention: BertSelfAttention,
    /// Output projection, residual and norm.
    pub output: BertResidualOutput,
}

impl BertAttention {
    /// Unmasked attention block.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, None)
    }

    /// Attention block with an additive key mask.
    pub fn forward_masked(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let attended = self.self_attention.forward_masked(x, mask)?;
        self.output.forward_residual(&attended, x)
    }
}

/// The first feed-forward projection and its activation.
#[derive(Module)]
pub struct BertIntermediate {
    /// `hidden → intermediate`.
    pub dense: Linear,
    #[module(skip)]
    activation: HiddenActivation,
}

impl BertIntermediate {
    /// `act(dense(x))`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = self.dense.forward(x)?;
        match self.activation {
            HiddenActivation::Gelu => h.gelu(),
            HiddenActivation::GeluTanh => anygrad_nn::GELU {
                tanh_approximation: true,
            }
            .forward(&h),
            HiddenActivation::Relu => h.relu(),
        }
    }
}

/// One post-norm encoder layer.
#[derive(Module)]
pub struct BertLayer {
    /// Attention block.
    pub attention: BertAttention,
    /// Feed-forward up-projection.
    pub intermediate: BertIntermediate,
    /// Feed-forward down-projection, residual and norm.
    pub output: BertResidualOutput,
}

impl BertLayer {
    fn new(config: &BertConfig, device: &anygrad_core::Device) -> Result<BertLayer> {
        let hidden = config.hidden_size;
        Ok(BertLayer {
            attention: BertAttention {
                self_attention: BertSelfAttention {
                    query: Linear::new(hidden, hidden, true, device)?,
                    key: Linear::new(hidden, hidden, true, device)?,
                    value: Linear::new(hidden, hidden, true, device)?,
                    heads: config.num_attention_heads,
                    attention_dropout: config.attention_probs_dropout_prob,
                    training: TrainingFlag::default(),
                },
                output: BertResidualOutput::new(hidden, config, device)?,
            },
            intermediate: BertIntermediate {
                dense: Linear::new(hidden, config.intermediate_size, true, device)?,
                activation: config.activation()?,
            },
            output: BertResidualOutput::new(config.intermediate_size, config, device)?,
        })
    }

    /// Unmasked layer.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, None)
    }

    /// Layer with an additive key mask.
    pub fn forward_masked(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let h = self.attention.forward_masked(x, mask)?;
        self.output
            .forward_residual(&self.intermediate.forward(&h)?, &h)
    }
}

/// The stack of layers (`encoder.layer.N`).
#[derive(Module)]
pub struct BertEncoder {
    /// The layers, named `layer.0`, `layer.1`, ... (shared so that a checkpointed layer's
    /// recompute can own a handle to it).
    pub layer: Vec<Arc<BertLayer>>,
    /// Whether layers run checkpointed (see the module documentation).
    #[module(skip)]
    gradient_checkpointing: AtomicBool,
}

impl BertEncoder {
    /// Unmasked stack.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_masked(x, None)
    }

    /// Stack with an additive key mask. With gradient checkpointing on (and the graph
    /// recorded), each layer runs through `checkpoint_fn`: its activations are dropped after
    /// the forward and recomputed in backward.
    pub fn forward_masked(&self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let checkpointing = self.gradient_checkpointing.load(Ordering::Relaxed);
        let mut h = x.clone();
        for layer in &self.layer {
            h = if checkpointing && anygrad_core::is_grad_enabled() {
                let parameters: Vec<Tensor> = layer
                    .named_parameters()
                    .into_iter()
                    .map(|(_, tensor)| tensor)
                    .collect();
                let layer = Arc::clone(layer);
                let mask = mask.cloned();
                checkpoint_fn(
                    move |input| layer.forward_masked(input, mask.as_ref()),
                    &h,
                    &parameters,
                )?
            } else {
                layer.forward_masked(&h, mask)?
            };
        }
        Ok(h)
    }
}

/// A BERT encoder with Hugging Face's module tree and names. Its inherent
/// [`BertModel::forward`] takes ids, an attention mask and token types; `Module::forward`
/// takes ids alone (every token attended, token type 0).
pub struct BertModel {
    /// Embedding tables and their norm.
    pub embeddings: BertEmbeddings,
    /// The layers.
    pub encoder: BertEncoder,
    config: BertConfig,
}

impl BertModel {
    /// A randomly initialized model (PyTorch layer defaults, not BERT's `N(0, 0.02)`; meant
    /// to be loaded from a checkpoint), f32 on `device`. A configuration whose parameter
    /// count overflows is refused before anything is allocated; otherwise the sizes are taken
    /// as given (`from_pretrained` checks them against the weights first).
    pub fn new(config: &BertConfig, device: &anygrad_core::Device) -> Result<BertModel> {
        let fits = config
            .parameter_count()
            .and_then(|count| count.checked_mul(std::mem::size_of::<f32>()))
            .is_some_and(|bytes| bytes <= isize::MAX as usize);
        if !fits {
            return Err(Error::invalid(
                "BertModel",
                format!(
                    "the configuration's parameters do not fit in memory (vocab_size {},                      hidden_size {}, num_hidden_layers {}, intermediate_size {},                      max_position_embeddings {}, type_vocab_size {})",
                    config.vocab_size,
                    config.hidden_size,
                    config.num_hidden_layers,
                    config.intermediate_size,
                    config.max_position_embeddings,
                    config.type_vocab_size
                ),
            ));
        }
        // The embeddings first: a vocabulary too large for memory fails before any layer.
        let embeddings = BertEmbeddings::new(config, device)?;
        let mut layer = Vec::new();
        for _ in 0..config.num_hidden_layers {
            layer.push(Arc::new(BertLayer::new(config, device)?));
        }
        Ok(BertModel {
            embeddings,
            encoder: BertEncoder {
                layer,
                gradient_checkpointing: AtomicBool::new(false),
            },
            config: config.clone(),
        })
    }

    /// Turn gradient checkpointing of the encoder layers on or off (Hugging Face's
    /// `gradient_checkpointing_enable()`): when on, a forward that records a graph keeps only
    /// each layer's input and recomputes the layer in backward, cutting activation memory
    /// for a second forward's time. Inference (`no_grad`) is unaffected.
    pub fn set_gradient_checkpointing(&self, enabled: bool) {
        self.encoder
            .gradient_checkpointing
            .store(enabled, Ordering::Relaxed);
    }

    /// Whether the encoder layers run checkpointed.
    pub fn gradient_checkpointing(&self) -> bool {
        self.encoder.gradient_checkpointing.load(Ordering::Relaxed)
    }

    /// The architecture.
    pub fn config(&self) -> &BertConfig {
        &self.config
    }

    /// `input_ids [batch, tokens]` (int32/uint32), optional `attention_mask [batch, tokens]`
    /// (1 for real tokens, 0 for padding; any dtype) and `token_type_ids [batch, tokens]` →
    /// the last hidden states `[batch, tokens, hidden]`.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        attention_mask: Option<&Tensor>,
        token_type_ids: Option<&Tensor>,
    ) -> Result<Tensor> {
        if input_ids.rank() != 2 || input_ids.shape()[1] == 0 {
            return Err(Error::InvalidShape {
                op: "BertModel",
                shape: input_ids.shape().to_vec(),
                message: "input_ids must be [batch, tokens] with at least one token".into(),
            });
        }
        let tokens = input_ids.shape()[1];
        if tokens > self.config.max_position_embeddings {
            return Err(Error::invalid(
                "BertModel",
                format!(
                    "sequence of {tokens} tokens is longer than max_position_embeddings {}",
                    self.config.max_position_embeddings
                ),
            ));
        }
        for (name, tensor) in [
            ("attention_mask", attention_mask),
            ("token_type_ids", token_type_ids),
        ] {
            if let Some(tensor) = tensor {
                if tensor.shape() != input_ids.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "BertModel",
                        lhs: input_ids.shape().to_vec(),
                        rhs: tensor.shape().to_vec(),
                        reason: format!("{name} must have the shape of input_ids"),
                    });
                }
            }
        }
        let hidden = match token_type_ids {
            Some(types) => self.embeddings.embed(input_ids, types)?,
            None => self.embeddings.forward(input_ids)?,
        };
        let mask = match attention_mask {
            Some(mask) => Some(
                mask.to_dtype(DType::F32)?
                    .rsub_scalar(1.0)?
                    .mul_scalar(MASKED_SCORE)?
                    .reshape([input_ids.shape()[0], 1, 1, tokens])?,
            ),
            None => None,
        };
        self.encoder.forward_masked(&hidden, mask.as_ref())
    }
}

impl Module for BertModel {
    /// `input_ids` alone: every token attended, token type 0.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        BertModel::forward(self, x, None, None)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.embeddings
            .visit(&child_prefix(prefix, "embeddings"), visitor);
        self.encoder
            .visit(&child_prefix(prefix, "encoder"), visitor);
    }

    fn set_training(&self, training: bool) {
        self.embeddings.set_training(training);
        self.encoder.set_training(training);
    }

    fn is_training(&self) -> bool {
        self.embeddings.is_training()
    }

    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        visitor("embeddings", &self.embeddings);
        visitor("encoder", &self.encoder);
    }
}
