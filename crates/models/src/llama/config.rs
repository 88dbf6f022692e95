//! [`LlamaConfig`]: the shape of a Llama-family decoder (sizes, heads, RoPE base, scaling and
//! rotated size, RMSNorm epsilon, tied embeddings, special token ids), read from a GGUF file's
//! `llama.*` metadata or from a Hugging Face `config.json`, and checked (positive sizes, heads dividing the
//! hidden size, query heads a multiple of key/value heads, bounded sizes) before any weight
//! is allocated.

use std::path::Path;

use anygrad_core::files::read_regular_file;
use anygrad_core::{Error, Result};
use serde::Deserialize;

use crate::gguf::GgufFile;

use super::rope_scaling::RopeScaling;

/// The largest `config.json` read (4 MiB).
const MAX_CONFIG_BYTES: u64 = 4 << 20;
/// The largest hidden size, head count, vocabulary, ... accepted (sizes beyond any model).
const MAX_SIZE: usize = 1 << 24;

/// The architecture of a Llama-family decoder (Hugging Face's `LlamaConfig` fields).
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
    /// Tokens in the vocabulary (rows of `embed_tokens`).
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the SwiGLU MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key/value heads (grouped-query attention when fewer than the query heads).
    pub num_key_value_heads: usize,
    /// Size of one head (`hidden_size / num_attention_heads` unless given).
    pub head_dim: usize,
    /// The longest context the model was trained for.
    pub max_position_embeddings: usize,
    /// RoPE base frequency (`rope_theta`).
    pub rope_theta: f64,
    /// RoPE frequency scaling (`rope_scaling`; [`RopeScaling::None`] for none).
    pub rope_scaling: RopeScaling,
    /// The leading values of each head that RoPE rotates: `head_dim` unless the model has a
    /// `partial_rotary_factor` (`int(head_dim · factor)`).
    pub rotary_dim: usize,
    /// RMSNorm epsilon.
    pub rms_norm_eps: f64,
    /// Whether `lm_head` shares `embed_tokens`' weight.
    pub tie_word_embeddings: bool,
    /// The beginning-of-sequence token, if any.
    pub bos_token_id: Option<u32>,
    /// The end-of-sequence tokens (generation stops at any of them).
    pub eos_token_ids: Vec<u32>,
}

/// The fields of a Hugging Face `config.json` that a Llama model reads.
#[derive(Deserialize)]
struct HuggingFaceConfig {
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    #[serde(default)]
    num_key_value_heads: Option<usize>,
    #[serde(default)]
    head_dim: Option<usize>,
    #[serde(default = "default_positions")]
    max_position_embeddings: usize,
    #[serde(default)]
    rope_theta: Option<f64>,
    #[serde(default = "default_rms_norm_eps")]
    rms_norm_eps: f64,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    bos_token_id: Option<serde_json::Value>,
    #[serde(default)]
    eos_token_id: Option<serde_json::Value>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
    /// `transformers` 5 writes `rope_parameters` (`rope_theta` and the scaling together).
    #[serde(default)]
    rope_parameters: Option<serde_json::Value>,
    #[serde(default)]
    partial_rotary_factor: Option<f64>,
    #[serde(default)]
    hidden_act: Option<String>,
}

fn default_positions() -> usize {
    2048
}
fn default_rope_theta() -> f64 {
    10000.0
}
fn default_rms_norm_eps() -> f64 {
    1e-6
}

/// Token ids of a `bos_token_id`/`eos_token_id` value (a number, a list of numbers or null).
fn token_ids(value: Option<&serde_json::Value>) -> Vec<u32> {
    match value {
        Some(serde_json::Value::Number(n)) => n.as_u64().map(|v| v as u32).into_iter().collect(),
        Some(serde_json::Value::Array(values)) => values
            .iter()
            .filter_map(|v| v.as_u64().map(|v| v as u32))
            .collect(),
        _ => Vec::new(),
    }
}

impl LlamaConfig {
    /// The configuration of a Hugging Face `config.json` (`model_type` `llama`, `mistral`
    /// without sliding windows, ...), with its `rope_scaling` (or `transformers` 5's
    /// `rope_parameters`, which may also hold `rope_theta` and `partial_rotary_factor`).
    pub fn from_json_file(path: impl AsRef<Path>) -> Result<LlamaConfig> {
        let path = path.as_ref();
        let context = path.display().to_string();
        let bytes = read_regular_file(path, MAX_CONFIG_BYTES, "model configuration")?;
        let config: HuggingFaceConfig = serde_json::from_slice(&bytes)
            .map_err(|e| Error::format(&context, format!("not a Llama config.json: {e}")))?;
        let parameters = config.rope_parameters.as_ref().filter(|v| !v.is_null());
        let parameter = |key: &str| parameters.and_then(|p| p.get(key)).and_then(|v| v.as_f64());
        let rope_theta = config
            .rope_theta
            .or_else(|| parameter("rope_theta"))
            .unwrap_or_else(default_rope_theta);
        let rope_scaling = match config
            .rope_scaling
            .as_ref()
            .filter(|v| !v.is_null())
            .or(parameters)
        {
            Some(value) => {
                RopeScaling::from_hugging_face(value, config.max_position_embeddings, &context)?
            }
            None => RopeScaling::None,
        };
        let partial_rotary_factor = config
            .partial_rotary_factor
            .or_else(|| parameter("partial_rotary_factor"))
            .unwrap_or(1.0);
        if !(partial_rotary_factor > 0.0 && partial_rotary_factor <= 1.0) {
            return Err(Error::format(
                &context,
                format!("partial_rotary_factor {partial_rotary_factor} must be in (0, 1]"),
            ));
        }
        if let Some(act) = config.hidden_act.as_deref().filter(|a| *a != "silu") {
            return Err(Error::format(
                &context,
                format!("hidden_act `{act}` is not supported (Llama uses silu)"),
            ));
        }
        let heads = config.num_attention_heads;
        let head_dim = config
            .head_dim
            .unwrap_or(config.hidden_size.checked_div(heads).unwrap_or(0));
        let result = LlamaConfig {
            vocab_size: config.vocab_size,
            hidden_size: config.hidden_size,
            intermediate_size: config.intermediate_size,
            num_hidden_layers: config.num_hidden_layers,
            num_attention_heads: heads,
            num_key_value_heads: config.num_key_value_heads.unwrap_or(heads),
            head_dim,
            max_position_embeddings: config.max_position_embeddings,
            rope_theta,
            rope_scaling,
            rotary_dim: (head_dim as f64 * partial_rotary_factor) as usize,
            rms_norm_eps: config.rms_norm_eps,
            tie_word_embeddings: config.tie_word_embeddings,
            bos_token_id: token_ids(config.bos_token_id.as_ref()).first().copied(),
            eos_token_ids: token_ids(config.eos_token_id.as_ref()),
        };
        result.validate(&context)?;
        Ok(result)
    }

    /// The configuration of a GGUF file's metadata: `general.architecture` (`llama`) and its
    /// `{arch}.context_length`, `embedding_length`, `block_count`, `feed_forward_length`,
    /// `attention.head_count`, `attention.head_count_kv`, `rope.freq_base`,
    /// `attention.layer_norm_rms_epsilon`, `vocab_size` (or the token list's length, or the
    /// embedding's rows), the RoPE scaling ([`RopeScaling::from_gguf`]: `rope.scaling.*` and a
    /// `rope_freqs.weight` tensor), tied embeddings when there is no `output.weight`, and the
    /// `tokenizer.ggml.bos_token_id` / `eos_token_id`. A `rope.dimension_count` below the head
    /// size (partial rotation of llama.cpp's interleaved layout) is refused.
    pub fn from_gguf(file: &GgufFile) -> Result<LlamaConfig> {
        let context = file.context().to_string();
        let arch = file.metadata_str("general.architecture")?;
        if arch != "llama" {
            return Err(Error::format(
                &context,
                format!("general.architecture is `{arch}`; only `llama` models are supported"),
            ));
        }
        let size = |key: &str| -> Result<usize> {
            let value = file.metadata_u64(&format!("{arch}.{key}"))?;
            usize::try_from(value).map_err(|_| {
                Error::format(
                    &context,
                    format!("metadata `{arch}.{key}` is too large: {value}"),
                )
            })
        };
        let hidden_size = size("embedding_length")?;
        let heads = size("attention.head_count")?;
        let kv_heads = match file.metadata_value(&format!("{arch}.attention.head_count_kv")) {
            Some(_) => size("attention.head_count_kv")?,
            None => heads,
        };
        let head_dim = match file.metadata_value(&format!("{arch}.attention.key_length")) {
            Some(_) => size("attention.key_length")?,
            None => hidden_size.checked_div(heads).unwrap_or(0),
        };
        if let Some(rotated) = file
            .metadata_value(&format!("{arch}.rope.dimension_count"))
            .and_then(|v| v.as_u64())
        {
            if rotated != head_dim as u64 {
                return Err(Error::format(
                    &context,
                    format!("{arch}.rope.dimension_count {rotated} differs from the head size {head_dim}: partial rotary embeddings are not supported"),
                ));
            }
        }
        let vocab_size = match file.metadata_value(&format!("{arch}.vocab_size")) {
            Some(_) => size("vocab_size")?,
            None => match file
                .metadata_value("tokenizer.ggml.tokens")
                .and_then(|v| v.as_array())
            {
                Some(tokens) => tokens.len(),
                None => file
                    .tensor_info("token_embd.weight")
                    .and_then(|info| info.dims.get(1).copied())
                    .ok_or_else(|| {
                        Error::format(&context, "no vocabulary size: neither `llama.vocab_size`, `tokenizer.ggml.tokens` nor `token_embd.weight`")
                    })?,
            },
        };
        let rope_theta = match file.metadata_value(&format!("{arch}.rope.freq_base")) {
            Some(_) => file.metadata_f64(&format!("{arch}.rope.freq_base"))?,
            None => default_rope_theta(),
        };
        let max_position_embeddings = size("context_length")?;
        let rope_scaling = RopeScaling::from_gguf(file, arch, max_position_embeddings, head_dim)?;
        let token = |key: &str| -> Option<u32> {
            file.metadata_value(key)
                .and_then(|v| v.as_u64())
                .and_then(|v| u32::try_from(v).ok())
        };
        let result = LlamaConfig {
            vocab_size,
            hidden_size,
            intermediate_size: size("feed_forward_length")?,
            num_hidden_layers: size("block_count")?,
            num_attention_heads: heads,
            num_key_value_heads: kv_heads,
            head_dim,
            max_position_embeddings,
            rope_theta,
            rope_scaling,
            rotary_dim: head_dim,
            rms_norm_eps: file.metadata_f64(&format!("{arch}.attention.layer_norm_rms_epsilon"))?,
            tie_word_embeddings: file.tensor_info("output.weight").is_none(),
            bos_token_id: token("tokenizer.ggml.bos_token_id"),
            eos_token_ids: token("tokenizer.ggml.eos_token_id").into_iter().collect(),
        };
        result.validate(&context)?;
        Ok(result)
    }

    /// The longest sequence the model accepts: `max_position_embeddings`, or with `dynamic`
    /// RoPE scaling (made for sequences beyond the trained context) `factor` times its original
    /// context when that is longer.
    pub fn context_length(&self) -> usize {
        match self.rope_scaling {
            RopeScaling::Dynamic {
                factor,
                original_max_position_embeddings,
            } => {
                let extended = (factor * original_max_position_embeddings as f64).floor();
                if extended.is_finite() && extended <= MAX_SIZE as f64 {
                    self.max_position_embeddings.max(extended as usize)
                } else {
                    self.max_position_embeddings
                }
            }
            _ => self.max_position_embeddings,
        }
    }

    /// Check the sizes: all positive and bounded, heads dividing evenly, an even head size
    /// (RoPE rotates pairs), an even rotated size up to the head size, a positive finite RoPE
    /// base and epsilon, and the scaling's parameters ([`RopeScaling::validate`]).
    pub fn validate(&self, context: &str) -> Result<()> {
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("num_key_value_heads", self.num_key_value_heads),
            ("head_dim", self.head_dim),
            ("max_position_embeddings", self.max_position_embeddings),
        ];
        for (name, value) in sizes {
            if value == 0 || value > MAX_SIZE {
                return Err(Error::format(
                    context,
                    format!("{name} is {value}; it must be between 1 and {MAX_SIZE}"),
                ));
            }
        }
        if !self
            .num_attention_heads
            .is_multiple_of(self.num_key_value_heads)
        {
            return Err(Error::format(
                context,
                format!(
                    "num_attention_heads {} is not a multiple of num_key_value_heads {}",
                    self.num_attention_heads, self.num_key_value_heads
                ),
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(Error::format(
                context,
                format!("head_dim {} is odd; RoPE rotates pairs", self.head_dim),
            ));
        }
        if self.rotary_dim == 0
            || !self.rotary_dim.is_multiple_of(2)
            || self.rotary_dim > self.head_dim
        {
            return Err(Error::format(
                context,
                format!(
                    "rotary_dim {} must be even, positive and at most head_dim {}",
                    self.rotary_dim, self.head_dim
                ),
            ));
        }
        self.rope_scaling.validate(self.rotary_dim, context)?;
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return Err(Error::format(
                context,
                format!("rope_theta {} must be positive", self.rope_theta),
            ));
        }
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps >= 0.0) {
            return Err(Error::format(
                context,
                format!("rms_norm_eps {} must be non-negative", self.rms_norm_eps),
            ));
        }
        Ok(())
    }
}
