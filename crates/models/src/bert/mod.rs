//! BERT encoders with Hugging Face's architecture and parameter names, and sentence
//! embeddings computed like sentence-transformers (all-MiniLM-L6-v2 and friends).
//!
//! - `config.rs`: [`BertConfig`] from `config.json`.
//! - `model.rs`: [`BertModel`] and its submodules (embeddings, post-norm encoder layers).
//! - `loading.rs`: `BertModel::from_pretrained(dir)` over a Hugging Face directory.
//! - `sentence.rs`: [`SentenceEncoder`]: tokenizer, pooling and normalization.

mod config;
mod loading;
mod model;
mod sentence;

pub use config::{BertConfig, HiddenActivation};
pub use loading::{hugging_face_name, CONFIG_FILE, WEIGHTS_FILE};
pub use model::{
    BertAttention, BertEmbeddings, BertEncoder, BertIntermediate, BertLayer, BertModel,
    BertResidualOutput, BertSelfAttention,
};
pub use sentence::{l2_normalize, pool, sentence_embeddings, Pooling, SentenceEncoder, TokenBatch};
