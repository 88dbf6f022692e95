//! Llama-family decoder language models (Llama 2/3 shapes, SmolLM2, TinyLlama) with Hugging
//! Face parameter names, from GGUF files or Hugging Face folders.
//!
//! - `config.rs`: [`LlamaConfig`] from GGUF metadata or `config.json`.
//! - `rope.rs`: rotary position embeddings in Hugging Face's rotate-half layout.
//! - `rope_scaling.rs`: [`RopeScaling`]: linear, dynamic, llama3, YaRN and per-frequency
//!   scaling of the RoPE frequencies.
//! - `cache.rs`: [`KvCache`]: keys and values on the device between calls.
//! - `model.rs`: [`LlamaForCausalLM`] and its submodules.
//! - `loading.rs`: GGUF (undoing llama.cpp's query/key permutation) and safetensors loading.
//! - `sampling.rs`: [`Sampler`]: greedy, temperature, top-k, top-p, repetition penalty.
//! - `generation.rs`: [`generate`]: prefill, then one token at a time until a stop token.
//! - `tokenizer.rs` (feature `text`): [`LlamaTokenizer`] from GGUF metadata or
//!   `tokenizer.json`.
//! - `sentencepiece.rs` (feature `text`): GGUF SentencePiece (`llama`) vocabularies as
//!   `tokenizers` BPE documents (merges derived from the scores, byte fallback).
//! - `chat.rs` (feature `text`): [`ChatTemplate`]: the model's Jinja chat template rendered
//!   with `minijinja`, ChatML as the fallback.
//! - `causal_lm_loss.rs`: [`causal_lm_loss`]: next-token cross-entropy with padding masks.
//! - `weights.rs`: projection and embedding weights held dense or block-quantized.
//! - `lora.rs`: LoRA adapters on the projections ([`LoraConfig`], [`LoraLinear`]), the base
//!   frozen, saved and loaded in PEFT's layout.

mod cache;
mod causal_lm_loss;
#[cfg(feature = "text")]
mod chat;
mod config;
mod generation;
mod loading;
mod lora;
mod model;
mod rope;
mod rope_scaling;
mod sampling;
#[cfg(feature = "text")]
mod sentencepiece;
#[cfg(feature = "text")]
mod tokenizer;
mod weights;

pub use cache::KvCache;
pub use causal_lm_loss::causal_lm_loss;
#[cfg(feature = "text")]
pub use chat::{ChatMessage, ChatTemplate};
pub use config::LlamaConfig;
pub use generation::{generate, GenerationOptions, GenerationOutput};
pub use loading::{gguf_name, permute_rows, unpermute_rows, WeightStorage};
pub use lora::{LoraAdapter, LoraConfig, LoraLinear, LORA_TARGETS};
pub use model::{
    LlamaAttention, LlamaDecoderLayer, LlamaForCausalLM, LlamaMlp, LlamaModel, WeightSource,
};
pub use rope::{apply_rotary, cos_sin, inverse_frequencies, RotaryEmbedding};
pub use rope_scaling::RopeScaling;
pub use sampling::{Sampler, SamplingOptions};
#[cfg(feature = "text")]
pub use tokenizer::LlamaTokenizer;
pub use weights::{ProjectionWeight, TokenEmbedding, Weight};
