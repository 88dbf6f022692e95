//! [`LlamaForCausalLM`]: the Llama decoder of Hugging Face `transformers`
//! (`LlamaForCausalLM`) with the same module tree and parameter names
//! (`model.embed_tokens.weight`, `model.layers.0.self_attn.q_proj.weight`,
//! `model.layers.0.mlp.gate_proj.weight`, `model.layers.0.input_layernorm.weight`,
//! `model.norm.weight`, `lm_head.weight` unless the embeddings are tied).
//!
//! Each layer is pre-norm: `h = x + o_proj(attention(rope(q), rope(k), v))` over
//! `input_layernorm(x)`, then `h + down_proj(silu(gate_proj(n)) · up_proj(n))` over
//! `post_attention_layernorm(h)`. Attention is the core's `scaled_dot_product_attention`,
//! causal, with grouped-query attention expressed by broadcasting: the queries are viewed as
//! `[batch, kv_heads, group, tokens, head_dim]` against keys `[batch, kv_heads, 1, tokens,
//! head_dim]`, so the shared keys and values are never copied per query head. One new token
//! (decoding) is plain attention of `group` query rows per key/value head: its queries are
//! viewed as `[batch, kv_heads, group, head_dim]` against the keys `[batch, kv_heads, tokens,
//! head_dim]`, which the fused GPU kernel takes as it is. A [`KvCache`] keeps the keys and
//! values on the device between calls, in buffers written in place. Every projection is a
//! [`LoraLinear`], which carries a LoRA adapter once [`LlamaForCausalLM::add_lora`] adds one
//! (`lora.rs`); [`LlamaForCausalLM::forward_train`] can checkpoint each layer for training.

use anygrad_core::{scaled_dot_product_attention, DType, Error, Result, Tensor};
use anygrad_nn::{checkpoint_fn, Module, RMSNorm};

use super::cache::KvCache;
use super::config::LlamaConfig;
use super::lora::{LoraConfig, LoraLinear};
use super::rope::{apply_rotary, RotaryEmbedding};
use super::weights::{ProjectionWeight, TokenEmbedding, Weight};

/// Multi-head self-attention with grouped-query heads and rotary positions. Cloning shares
/// the parameters.
#[derive(Clone, Module)]
pub struct LlamaAttention {
    /// `[heads · head_dim, hidden]`.
    pub q_proj: LoraLinear,
    /// `[kv_heads · head_dim, hidden]`.
    pub k_proj: LoraLinear,
    /// `[kv_heads · head_dim, hidden]`.
    pub v_proj: LoraLinear,
    /// `[hidden, heads · head_dim]`.
    pub o_proj: LoraLinear,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    #[module(skip)]
    rope: RotaryEmbedding,
}

impl LlamaAttention {
    /// Attention of `x` `[batch, tokens, hidden]` over itself without a cache (causal).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let tokens = x.shape().get(1).copied().unwrap_or(0);
        let (cos, sin) = self.rope.cos_sin(0, tokens, x.device())?;
        let mut cache = KvCache::new(1);
        self.forward_cached(x, &cos, &sin, &mut cache, 0)
    }

    /// Attention of the new tokens `x` `[batch, tokens, hidden]` (at positions
    /// `cache.len()..`, whose rotations are `cos`, `sin` `[tokens, head_dim]`) over the cached
    /// tokens and themselves, causally; their keys and values join layer `layer` of `cache`.
    pub fn forward_cached(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        cache: &mut KvCache,
        layer: usize,
    ) -> Result<Tensor> {
        let &[batch, tokens, _] = x.shape() else {
            return Err(Error::invalid(
                "LlamaAttention",
                format!("x must be [batch, tokens, hidden], got {:?}", x.shape()),
            ));
        };
        let past = cache.len();
        let heads = |t: Tensor, count: usize| -> Result<Tensor> {
            t.reshape([batch, tokens, count, self.head_dim])?
                .transpose(1, 2)
        };
        let query = heads(self.q_proj.forward(x)?, self.heads)?;
        let key = heads(self.k_proj.forward(x)?, self.kv_heads)?;
        let value = heads(self.v_proj.forward(x)?, self.kv_heads)?;
        let query = apply_rotary(&query, cos, sin)?;
        let key = apply_rotary(&key, cos, sin)?;
        let (key, value) = cache.append(layer, key, value)?;
        let total = past + tokens;
        let group = self.heads / self.kv_heads;
        if tokens == 1 {
            // One new token attends to every cached token, unmasked: the query heads sharing a
            // key/value head are the query rows of one attention over that head's keys, so
            // grouped-query attention is plain attention of `group` rows (the fused kernel
            // takes it as it is, the shared keys and values read in place).
            let output = scaled_dot_product_attention(
                &query.reshape([batch, self.kv_heads, group, self.head_dim])?,
                &key,
                &value,
                None,
                0.0,
                false,
                None,
            )?;
            return self
                .o_proj
                .forward(&output.reshape([batch, 1, self.heads * self.head_dim])?);
        }
        let (query, key, value) = if group == 1 {
            (query, key, value)
        } else {
            (
                query.reshape([batch, self.kv_heads, group, tokens, self.head_dim])?,
                key.unsqueeze(2)?,
                value.unsqueeze(2)?,
            )
        };
        let output = if past == 0 {
            scaled_dot_product_attention(&query, &key, &value, None, 0.0, true, None)?
        } else {
            // New tokens at positions past..total: token i sees keys j <= past + i.
            let device = x.device();
            let rows = Tensor::arange(past as f64, total as f64, 1.0, DType::I32, device)?
                .reshape([tokens, 1])?;
            let columns =
                Tensor::arange(0.0, total as f64, 1.0, DType::I32, device)?.reshape([1, total])?;
            let mask = columns.le(&rows)?;
            scaled_dot_product_attention(&query, &key, &value, Some(&mask), 0.0, false, None)?
        };
        let output = output
            .reshape([batch, self.heads, tokens, self.head_dim])?
            .transpose(1, 2)?
            .reshape([batch, tokens, self.heads * self.head_dim])?;
        self.o_proj.forward(&output)
    }
}

/// The SwiGLU feed-forward block: `down_proj(silu(gate_proj(x)) · up_proj(x))`. Cloning
/// shares the parameters.
#[derive(Clone, Module)]
pub struct LlamaMlp {
    /// `[intermediate, hidden]`.
    pub gate_proj: LoraLinear,
    /// `[intermediate, hidden]`.
    pub up_proj: LoraLinear,
    /// `[hidden, intermediate]`.
    pub down_proj: LoraLinear,
}

impl LlamaMlp {
    /// `[.., hidden]` → `[.., hidden]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate = self.gate_proj.forward(x)?.silu()?;
        self.down_proj
            .forward(&gate.mul(&self.up_proj.forward(x)?)?)
    }
}

/// One pre-norm decoder layer.
#[derive(Module)]
pub struct LlamaDecoderLayer {
    /// Self-attention.
    pub self_attn: LlamaAttention,
    /// Feed-forward block.
    pub mlp: LlamaMlp,
    /// The norm before attention.
    pub input_layernorm: RMSNorm,
    /// The norm before the MLP.
    pub post_attention_layernorm: RMSNorm,
}

/// A norm sharing `norm`'s weight slot.
fn shared_norm(norm: &RMSNorm) -> RMSNorm {
    RMSNorm {
        weight: norm.weight.clone(),
        normalized_shape: norm.normalized_shape.clone(),
        eps: norm.eps,
    }
}

impl LlamaDecoderLayer {
    /// A second handle on this layer: the same parameter slots (what a checkpointed forward
    /// keeps for its recompute).
    pub fn shared_copy(&self) -> LlamaDecoderLayer {
        LlamaDecoderLayer {
            self_attn: self.self_attn.clone(),
            mlp: self.mlp.clone(),
            input_layernorm: shared_norm(&self.input_layernorm),
            post_attention_layernorm: shared_norm(&self.post_attention_layernorm),
        }
    }

    /// The layer over `x` `[batch, tokens, hidden]` without a cache.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let h = x.add(&self.self_attn.forward(&self.input_layernorm.forward(x)?)?)?;
        h.add(
            &self
                .mlp
                .forward(&self.post_attention_layernorm.forward(&h)?)?,
        )
    }

    /// The layer over new tokens with `cache` (see [`LlamaAttention::forward_cached`]).
    pub fn forward_cached(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        cache: &mut KvCache,
        layer: usize,
    ) -> Result<Tensor> {
        let normed = self.input_layernorm.forward(x)?;
        let h = x.add(
            &self
                .self_attn
                .forward_cached(&normed, cos, sin, cache, layer)?,
        )?;
        h.add(
            &self
                .mlp
                .forward(&self.post_attention_layernorm.forward(&h)?)?,
        )
    }
}

/// The decoder stack: embeddings, layers, final norm (`transformers`' `LlamaModel`).
#[derive(Module)]
pub struct LlamaModel {
    /// `[vocab, hidden]`, dense or quantized.
    pub embed_tokens: TokenEmbedding,
    /// The decoder layers.
    pub layers: Vec<LlamaDecoderLayer>,
    /// The final norm.
    pub norm: RMSNorm,
}

impl LlamaModel {
    /// Hidden states `[batch, tokens, hidden]` of token ids `[batch, tokens]` without a cache.
    pub fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let mut x = self.embed_tokens.forward(input_ids)?;
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        self.norm.forward(&x)
    }
}

/// A Llama-family causal language model: the decoder and the output projection.
#[derive(Module)]
pub struct LlamaForCausalLM {
    /// The decoder.
    pub model: LlamaModel,
    /// The output projection `[vocab, hidden]`; `None` when tied to `embed_tokens`.
    pub lm_head: Option<ProjectionWeight>,
    #[module(skip)]
    config: LlamaConfig,
    /// The LoRA configuration once adapters are added (`lora.rs`).
    #[module(skip)]
    pub(crate) lora: Option<LoraConfig>,
}

/// Where weights come from when a model is built: `fetch(name, shape)` returns the weight of
/// a Hugging Face parameter name, of exactly `shape`, on the model's device: a tensor, or a
/// quantized matrix for a projection or the embeddings (a norm's is dequantized).
pub type WeightSource<'a> = dyn FnMut(&str, &[usize]) -> Result<Weight> + 'a;

impl LlamaForCausalLM {
    /// Build the model of `config` from `weights` (asked for every parameter by its Hugging
    /// Face name and shape; `lm_head.weight` only when the embeddings are not tied).
    pub fn from_weights(config: &LlamaConfig, weights: &mut WeightSource<'_>) -> Result<Self> {
        config.validate("LlamaForCausalLM")?;
        let c = config;
        let (hidden, head_dim) = (c.hidden_size, c.head_dim);
        let mut linear = |name: String, out: usize, inputs: usize| -> Result<LoraLinear> {
            Ok(LoraLinear::new(ProjectionWeight::new(weights(
                &name,
                &[out, inputs],
            )?)))
        };
        // Grown as each layer's weights arrive: a configuration's counts reserve nothing.
        let mut layers = Vec::new();
        let mut norms = Vec::new();
        for index in 0..c.num_hidden_layers {
            let prefix = format!("model.layers.{index}");
            let self_attn = LlamaAttention {
                q_proj: linear(
                    format!("{prefix}.self_attn.q_proj.weight"),
                    c.num_attention_heads * head_dim,
                    hidden,
                )?,
                k_proj: linear(
                    format!("{prefix}.self_attn.k_proj.weight"),
                    c.num_key_value_heads * head_dim,
                    hidden,
                )?,
                v_proj: linear(
                    format!("{prefix}.self_attn.v_proj.weight"),
                    c.num_key_value_heads * head_dim,
                    hidden,
                )?,
                o_proj: linear(
                    format!("{prefix}.self_attn.o_proj.weight"),
                    hidden,
                    c.num_attention_heads * head_dim,
                )?,
                heads: c.num_attention_heads,
                kv_heads: c.num_key_value_heads,
                head_dim,
                rope: RotaryEmbedding::from_config(c),
            };
            let mlp = LlamaMlp {
                gate_proj: linear(
                    format!("{prefix}.mlp.gate_proj.weight"),
                    c.intermediate_size,
                    hidden,
                )?,
                up_proj: linear(
                    format!("{prefix}.mlp.up_proj.weight"),
                    c.intermediate_size,
                    hidden,
                )?,
                down_proj: linear(
                    format!("{prefix}.mlp.down_proj.weight"),
                    hidden,
                    c.intermediate_size,
                )?,
            };
            norms.push(format!("{prefix}.input_layernorm.weight"));
            norms.push(format!("{prefix}.post_attention_layernorm.weight"));
            layers.push((self_attn, mlp));
        }
        let mut norm = |name: &str| -> Result<RMSNorm> {
            let weight = weights(name, &[hidden])?.into_dense()?;
            Ok(RMSNorm {
                weight: Some(anygrad_nn::Parameter::new(weight)),
                normalized_shape: vec![hidden],
                eps: Some(c.rms_norm_eps),
            })
        };
        let mut decoder_layers = Vec::with_capacity(layers.len());
        for (index, (self_attn, mlp)) in layers.into_iter().enumerate() {
            decoder_layers.push(LlamaDecoderLayer {
                self_attn,
                mlp,
                input_layernorm: norm(&norms[2 * index])?,
                post_attention_layernorm: norm(&norms[2 * index + 1])?,
            });
        }
        let final_norm = norm("model.norm.weight")?;
        let embed_tokens = TokenEmbedding::new(weights(
            "model.embed_tokens.weight",
            &[c.vocab_size, hidden],
        )?);
        let lm_head = if c.tie_word_embeddings {
            None
        } else {
            Some(ProjectionWeight::new(weights(
                "lm_head.weight",
                &[c.vocab_size, hidden],
            )?))
        };
        let model = LlamaForCausalLM {
            model: LlamaModel {
                embed_tokens,
                layers: decoder_layers,
                norm: final_norm,
            },
            lm_head,
            config: config.clone(),
            lora: None,
        };
        Module::eval(&model);
        Ok(model)
    }

    /// Bytes the model's weights take on their device: quantized matrices their blocks,
    /// dense tensors their elements.
    pub fn weight_bytes(&self) -> usize {
        let parameters: usize = self
            .parameters()
            .iter()
            .map(|t| t.numel() * t.dtype().size_in_bytes())
            .sum();
        let quantized = |p: &ProjectionWeight| match p {
            ProjectionWeight::Quantized(matrix) => matrix.storage_bytes(),
            ProjectionWeight::Dense(_) => 0,
        };
        let mut bytes = parameters + self.lm_head.as_ref().map_or(0, quantized);
        if let TokenEmbedding::Quantized(matrix) = &self.model.embed_tokens {
            bytes += matrix.storage_bytes();
        }
        for layer in &self.model.layers {
            let (a, m) = (&layer.self_attn, &layer.mlp);
            for projection in [
                &a.q_proj,
                &a.k_proj,
                &a.v_proj,
                &a.o_proj,
                &m.gate_proj,
                &m.up_proj,
                &m.down_proj,
            ] {
                bytes += quantized(&projection.base);
            }
        }
        bytes
    }

    /// The configuration.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// A cache for this model's layers (its buffers grow as tokens arrive).
    pub fn new_cache(&self) -> KvCache {
        KvCache::new(self.config.num_hidden_layers)
    }

    /// A cache for this model's layers with room for `tokens` tokens (at most the model's
    /// context) allocated on the first call, so that it never grows while that many are
    /// cached.
    pub fn new_cache_with_capacity(&self, tokens: usize) -> KvCache {
        KvCache::with_capacity(
            self.config.num_hidden_layers,
            tokens.min(self.config.context_length()),
        )
    }

    /// Logits `[batch, tokens, vocab]` of token ids `[batch, tokens]` (i32) without a cache.
    pub fn forward(&self, input_ids: &Tensor) -> Result<Tensor> {
        let mut cache = self.new_cache();
        self.forward_with_cache(input_ids, &mut cache)
    }

    /// Logits `[batch, tokens, vocab]` of token ids `[batch, tokens]` (i32) for training,
    /// without a cache. With `gradient_checkpointing` each decoder layer runs through
    /// [`checkpoint_fn`]: its activations are not kept but recomputed in backward, so memory
    /// holds one layer's activations at a time (plus each layer's input) for the cost of a
    /// second forward; the logits and gradients are the same either way.
    pub fn forward_train(
        &self,
        input_ids: &Tensor,
        gradient_checkpointing: bool,
    ) -> Result<Tensor> {
        if !gradient_checkpointing {
            return self.forward(input_ids);
        }
        self.check_positions(input_ids, 0)?;
        let mut x = self.embed(input_ids)?;
        for layer in &self.model.layers {
            let layer = std::sync::Arc::new(layer.shared_copy());
            let trainable: Vec<Tensor> = layer
                .parameters()
                .into_iter()
                .filter(Tensor::requires_grad)
                .collect();
            x = checkpoint_fn(move |input| layer.forward(input), &x, &trainable)?;
        }
        self.project(&self.model.norm.forward(&x)?)
    }

    /// Logits `[batch, tokens, vocab]` of new token ids `[batch, tokens]` following the
    /// tokens in `cache`, which they join.
    pub fn forward_with_cache(&self, input_ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let hidden = self.hidden_states(input_ids, cache)?;
        self.project(&hidden)
    }

    /// Logits `[batch, vocab]` of the last of the new token ids `[batch, tokens]` following
    /// the tokens in `cache`, which they join: the output projection runs for one position
    /// only (what generation needs).
    pub fn next_token_logits(&self, input_ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let hidden = self.hidden_states(input_ids, cache)?;
        let tokens = hidden.shape()[1];
        let last = hidden.narrow(1, tokens - 1, 1)?.squeeze(1)?;
        self.project(&last)
    }

    /// The final hidden states of new tokens, through every layer with `cache`.
    pub fn hidden_states(&self, input_ids: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        if cache.layer_count() != self.config.num_hidden_layers {
            return Err(Error::invalid(
                "LlamaForCausalLM",
                format!(
                    "the cache has {} layers, the model {}",
                    cache.layer_count(),
                    self.config.num_hidden_layers
                ),
            ));
        }
        let start = cache.len();
        self.check_positions(input_ids, start)?;
        let tokens = input_ids.shape()[1];
        let (cos, sin) = RotaryEmbedding::from_config(&self.config).cos_sin(
            start,
            tokens,
            input_ids.device(),
        )?;
        let mut x = self.embed(input_ids)?;
        for (index, layer) in self.model.layers.iter().enumerate() {
            x = layer.forward_cached(&x, &cos, &sin, cache, index)?;
        }
        cache.advance(tokens);
        self.model.norm.forward(&x)
    }

    /// `input_ids` is `[batch, tokens]` with tokens > 0, and positions `start..start + tokens`
    /// fit the model's context.
    fn check_positions(&self, input_ids: &Tensor, start: usize) -> Result<()> {
        let shape = input_ids.shape();
        if shape.len() != 2 || shape[1] == 0 {
            return Err(Error::invalid(
                "LlamaForCausalLM",
                format!("input_ids must be [batch, tokens] with tokens > 0, got {shape:?}"),
            ));
        }
        if start + shape[1] > self.config.context_length() {
            return Err(Error::invalid(
                "LlamaForCausalLM",
                format!(
                    "{} tokens are more than the model's context of {}",
                    start + shape[1],
                    self.config.context_length()
                ),
            ));
        }
        Ok(())
    }

    /// The embeddings of `input_ids`, with an error naming the vocabulary size.
    fn embed(&self, input_ids: &Tensor) -> Result<Tensor> {
        self.model.embed_tokens.forward(input_ids).map_err(|e| {
            Error::invalid(
                "LlamaForCausalLM",
                format!(
                    "input_ids: embedding lookup failed (ids must be < vocab_size {}): {e}",
                    self.config.vocab_size
                ),
            )
        })
    }

    /// Hidden states `[.., hidden]` → logits `[.., vocab]`.
    fn project(&self, hidden: &Tensor) -> Result<Tensor> {
        match &self.lm_head {
            Some(head) => head.forward(hidden),
            None => self.model.embed_tokens.project(hidden),
        }
    }
}
