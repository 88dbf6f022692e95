//! anygrad-models: ready-made networks with PyTorch-compatible parameter names, so weights
//! move between anygrad and PyTorch through safetensors unchanged.
//!
//! - [`Mlp`]: the tutorial multi-layer perceptron (64 → 128 → 64 → 10 with ReLU by default).
//! - [`SmallCnn`]: a two-convolution network for 28×28 single-channel images (MNIST).
//! - [`ResNet`]: ResNet-18/34 (basic blocks) and ResNet-50 (bottleneck blocks) with
//!   torchvision's exact architecture, initialization and names.
//! - `bert`: BERT encoders with Hugging Face names (`BertModel`) and sentence embeddings
//!   like sentence-transformers (`SentenceEncoder`); with the `text` feature (on by default),
//!   which brings in Hugging Face's `tokenizers`.
//! - `gguf`: llama.cpp's GGUF files: metadata, tensor table, dequantization to f32.
//! - `llama`: Llama-family decoder language models (SmolLM2, TinyLlama, Llama 2/3 shapes)
//!   from GGUF files or Hugging Face folders, with a KV cache, tokenizers and generation
//!   (the tokenizer and the generation loop with the `text` feature).

#[cfg(feature = "text")]
pub mod bert;
mod cnn;
pub mod gguf;
pub mod llama;
mod mlp;
mod resnet;

#[cfg(feature = "text")]
pub use bert::{BertConfig, BertModel, SentenceEncoder};
pub use cnn::SmallCnn;
pub use mlp::Mlp;
pub use resnet::{BasicBlock, BlockKind, Bottleneck, ResNet};
