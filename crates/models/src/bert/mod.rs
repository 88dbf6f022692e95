//! BERT encoders with Hugging Face's architecture and parameter names, and sentence
//! embeddings computed like sentence-transformers (all-MiniLM-L6-v2 and friends).
//!
//! - `config.rs`: [`BertConfig`] from `config.json`.
//! - `model.rs`: [`BertModel`] and its submodules (embeddings, post-norm encoder layers).
//! - `header.rs`: [`WeightsHeader`]: tensor names and shapes of a safetensors file, read
//!   without the data.
//! - `consistency.rs`: `BertConfig::check_against_weights`: the configuration's sizes against
//!   the weights' header, before anything is allocated.
//! - `loading.rs`: `BertModel::from_pretrained(dir)` over a Hugging Face directory.
//! - `sentence.rs`: [`SentenceEncoder`]: tokenizer, pooling and normalization.

mod config;
mod consistency;
mod header;
mod loading;
mod model;
mod sentence;

pub use config::{BertConfig, HiddenActivation};
pub use header::{HeaderEntry, WeightsHeader};
pub use loading::{
    hugging_face_name, CONFIG_FILE, MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES, MAX_WEIGHTS_BYTES,
    WEIGHTS_FILE,
};
pub use model::{
    BertAttention, BertEmbeddings, BertEncoder, BertIntermediate, BertLayer, BertModel,
    BertResidualOutput, BertSelfAttention,
};
pub use sentence::{
    l2_normalize, pool, sentence_embeddings, Pooling, SentenceEncoder, TokenBatch,
    DEFAULT_BATCH_SIZE,
};
