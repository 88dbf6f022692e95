//! [`BertConfig`]: the architecture of a BERT encoder, read from a Hugging Face `config.json`
//! (the fields `transformers.BertConfig` writes; unknown fields are ignored), and checked so
//! that a model built from it is well formed.

use std::path::Path;

use anygrad_core::files::read_regular_text;
use anygrad_core::{Error, Result};
use serde::Deserialize;

use super::loading::MAX_CONFIG_BYTES;

/// The hyper-parameters of a BERT encoder, with Hugging Face's field names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BertConfig {
    /// Rows of the word embedding table.
    pub vocab_size: usize,
    /// Width of every hidden state.
    pub hidden_size: usize,
    /// Number of encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (`hidden_size` must be a multiple).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Activation of the feed-forward layer: `gelu` (erf form) or `gelu_new`/`gelu_pytorch_tanh`
    /// (tanh approximation) or `relu`.
    #[serde(default = "default_hidden_act")]
    pub hidden_act: String,
    /// Longest sequence the position table covers.
    pub max_position_embeddings: usize,
    /// Rows of the token type (segment) table.
    #[serde(default = "default_type_vocab_size")]
    pub type_vocab_size: usize,
    /// LayerNorm epsilon.
    #[serde(default = "default_layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// Dropout after embeddings, attention output and feed-forward output (training only).
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f64,
    /// Dropout on the attention probabilities (training only).
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f64,
    /// Only `absolute` positions are supported.
    #[serde(default = "default_position_embedding_type")]
    pub position_embedding_type: String,
}

fn default_hidden_act() -> String {
    "gelu".into()
}
fn default_type_vocab_size() -> usize {
    2
}
fn default_layer_norm_eps() -> f64 {
    1e-12
}
fn default_dropout() -> f64 {
    0.1
}
fn default_position_embedding_type() -> String {
    "absolute".into()
}

/// The feed-forward activations a [`BertConfig`] may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenActivation {
    /// `gelu`: the exact erf form.
    Gelu,
    /// `gelu_new` / `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `relu`.
    Relu,
}

impl BertConfig {
    /// The architecture of sentence-transformers' all-MiniLM-L6-v2 (its `config.json`):
    /// vocabulary 30522, hidden 384, 6 layers of 12 heads, feed-forward 1536, 512 positions,
    /// erf GELU, LayerNorm epsilon 1e-12, dropout 0.1 (hidden and attention probabilities).
    pub fn all_minilm_l6_v2() -> BertConfig {
        BertConfig {
            vocab_size: 30522,
            hidden_size: 384,
            num_hidden_layers: 6,
            num_attention_heads: 12,
            intermediate_size: 1536,
            hidden_act: default_hidden_act(),
            max_position_embeddings: 512,
            type_vocab_size: default_type_vocab_size(),
            layer_norm_eps: default_layer_norm_eps(),
            hidden_dropout_prob: default_dropout(),
            attention_probs_dropout_prob: default_dropout(),
            position_embedding_type: default_position_embedding_type(),
        }
    }

    /// Parse and validate a `config.json`.
    pub fn from_json(text: &str, context: &str) -> Result<BertConfig> {
        let config: BertConfig = serde_json::from_str(text)
            .map_err(|e| Error::format(context, format!("not a valid BERT config.json: {e}")))?;
        config
            .validate()
            .map_err(|message| Error::format(context, message))?;
        Ok(config)
    }

    /// Read, parse and validate `path` (a `config.json`: a regular file of at most
    /// [`MAX_CONFIG_BYTES`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<BertConfig> {
        let path = path.as_ref();
        let text = read_regular_text(path, MAX_CONFIG_BYTES, "model configuration")?;
        BertConfig::from_json(&text, &path.display().to_string())
    }

    /// The activation named by `hidden_act`.
    pub fn activation(&self) -> Result<HiddenActivation> {
        match self.hidden_act.as_str() {
            "gelu" => Ok(HiddenActivation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" => Ok(HiddenActivation::GeluTanh),
            "relu" => Ok(HiddenActivation::Relu),
            other => Err(Error::invalid(
                "BertConfig",
                format!(
                    "unsupported hidden_act `{other}` (gelu, gelu_new, gelu_pytorch_tanh, relu)"
                ),
            )),
        }
    }

    /// The number of parameters of a [`BertModel`](super::BertModel) of this configuration
    /// (embeddings and encoder layers, no pooler), or `None` when it overflows `usize`.
    pub fn parameter_count(&self) -> Option<usize> {
        let hidden = self.hidden_size;
        let rows = self
            .vocab_size
            .checked_add(self.max_position_embeddings)?
            .checked_add(self.type_vocab_size)?;
        let embeddings = rows.checked_add(2)?.checked_mul(hidden)?;
        // Query, key, value and output projections with biases, two LayerNorms, and the
        // feed-forward pair with biases.
        let projections = hidden.checked_add(1)?.checked_mul(hidden)?.checked_mul(4)?;
        let feed_forward = hidden
            .checked_mul(2)?
            .checked_add(1)?
            .checked_mul(self.intermediate_size)?
            .checked_add(hidden)?;
        let layer = projections
            .checked_add(feed_forward)?
            .checked_add(hidden.checked_mul(4)?)?;
        layer
            .checked_mul(self.num_hidden_layers)?
            .checked_add(embeddings)
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads.max(1)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let positive = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("{name} must be positive"));
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.position_embedding_type != "absolute" {
            return Err(format!(
                "position_embedding_type `{}` is not supported (only `absolute`)",
                self.position_embedding_type
            ));
        }
        for (name, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} must be in [0, 1], got {p}"));
            }
        }
        if !(self.layer_norm_eps.is_finite() && self.layer_norm_eps >= 0.0) {
            return Err(format!(
                "layer_norm_eps must be finite and >= 0, got {}",
                self.layer_norm_eps
            ));
        }
        self.activation().map_err(|e| e.to_string())?;
        Ok(())
    }
}
