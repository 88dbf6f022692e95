//! [`SentenceEncoder`]: a sentence-transformers model directory (a Hugging Face BERT plus
//! `tokenizer.json`, `1_Pooling/config.json`, `modules.json`, `sentence_bert_config.json`)
//! turned into sentence embeddings the way sentence-transformers computes them: tokenize
//! (WordPiece through the `tokenizers` crate, truncation to `max_seq_length`, padding to the
//! longest sentence of the batch), run the encoder with the attention mask, pool the token
//! states (mean over the real tokens, `[CLS]`, or max), and L2-normalize when `modules.json`
//! lists a `Normalize` module.
//!
//! [`SentenceEncoder::encode`] is inference, like sentence-transformers' `encode`: it runs
//! under `no_grad` (no graph is kept, so memory is that of one forward pass) in batches of
//! [`DEFAULT_BATCH_SIZE`] sentences. Training goes through [`sentence_embeddings`] (or the
//! model itself), which record the graph as any forward does.
//!
//! Every file is read through `anygrad_core::files` (regular files within a size bound), so a
//! FIFO or device in the directory is an error naming it, not a hang.

use std::path::Path;
use std::str::FromStr;

use anygrad_core::files::read_regular_text;
use anygrad_core::{no_grad, DType, Device, Error, Result, Tensor};
use serde::Deserialize;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::loading::{MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES};
use super::model::BertModel;

/// Sentences per forward pass of [`SentenceEncoder::encode`] (sentence-transformers' default).
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// How token states become one sentence vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the tokens whose attention mask is 1.
    Mean,
    /// The first token (`[CLS]`).
    Cls,
    /// Elementwise maximum over the real tokens.
    Max,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    /// sentence-transformers 6 writes one `pooling_mode` string instead of the flags.
    pooling_mode: Option<String>,
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct TokenizerConfig {
    model_max_length: Option<f64>,
}

/// A tokenized batch: `[batch, tokens]` int32 tensors on the model's device.
#[derive(Debug, Clone)]
pub struct TokenBatch {
    /// Token ids, padded with the tokenizer's pad id.
    pub input_ids: Tensor,
    /// 1 for real tokens, 0 for padding.
    pub attention_mask: Tensor,
    /// Segment ids (0 for single sentences).
    pub token_type_ids: Tensor,
}

/// A BERT encoder with its tokenizer and pooling: text in, embeddings out.
pub struct SentenceEncoder {
    /// The encoder.
    pub model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    normalize: bool,
    max_seq_length: usize,
    device: Device,
}

/// Parse the JSON configuration `path` (a regular file of at most [`MAX_CONFIG_BYTES`]).
fn read_json<T: for<'a> Deserialize<'a>>(path: &Path) -> Result<T> {
    let context = path.display().to_string();
    let text = read_regular_text(path, MAX_CONFIG_BYTES, "model configuration")?;
    serde_json::from_str(&text).map_err(|e| Error::format(&context, format!("invalid JSON: {e}")))
}

impl SentenceEncoder {
    /// Load a sentence-transformers directory (or a plain Hugging Face BERT directory with a
    /// `tokenizer.json`: mean pooling, no normalization) onto `device`.
    pub fn from_dir(dir: impl AsRef<Path>, device: &Device) -> Result<SentenceEncoder> {
        let dir = dir.as_ref();
        let model = BertModel::from_pretrained(dir, device)?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_text = read_regular_text(&tokenizer_path, MAX_TOKENIZER_BYTES, "tokenizer")?;
        let mut tokenizer = Tokenizer::from_str(&tokenizer_text).map_err(|e| {
            Error::format(
                tokenizer_path.display().to_string(),
                format!("cannot load the tokenizer: {e}"),
            )
        })?;
        let pooling_path = dir.join("1_Pooling").join("config.json");
        let pooling =
            if pooling_path.exists() {
                let config: PoolingConfig = read_json(&pooling_path)?;
                match config.pooling_mode.as_deref() {
                    Some("mean") => Pooling::Mean,
                    Some("cls") => Pooling::Cls,
                    Some("max") => Pooling::Max,
                    Some(other) => {
                        return Err(Error::format(
                            pooling_path.display().to_string(),
                            format!("pooling_mode `{other}` is not supported (mean, cls, max)"),
                        ))
                    }
                    None => match (
                        config.pooling_mode_mean_tokens,
                        config.pooling_mode_cls_token,
                        config.pooling_mode_max_tokens,
                        config.pooling_mode_mean_sqrt_len_tokens,
                    ) {
                        (true, false, false, false) => Pooling::Mean,
                        (false, true, false, false) => Pooling::Cls,
                        (false, false, true, false) => Pooling::Max,
                        _ => return Err(Error::format(
                            pooling_path.display().to_string(),
                            "exactly one of pooling_mode_mean_tokens, pooling_mode_cls_token and \
                         pooling_mode_max_tokens must be true (other modes are not supported)",
                        )),
                    },
                }
            } else {
                Pooling::Mean
            };
        let modules_path = dir.join("modules.json");
        let normalize = if modules_path.exists() {
            let modules: Vec<ModuleEntry> = read_json(&modules_path)?;
            modules.iter().any(|m| m.kind.ends_with("Normalize"))
        } else {
            false
        };
        let positions = model.config().max_position_embeddings;
        // sentence-transformers 2-5 keep max_seq_length in sentence_bert_config.json, later
        // versions in tokenizer_config.json's model_max_length.
        let sentence_config = dir.join("sentence_bert_config.json");
        let tokenizer_config = dir.join("tokenizer_config.json");
        let mut max_seq_length = None;
        if sentence_config.exists() {
            let config: SentenceBertConfig = read_json(&sentence_config)?;
            max_seq_length = config.max_seq_length;
        }
        if max_seq_length.is_none() && tokenizer_config.exists() {
            let config: TokenizerConfig = read_json(&tokenizer_config)?;
            max_seq_length = config
                .model_max_length
                .filter(|&n| n >= 1.0 && n < positions as f64)
                .map(|n| n as usize);
        }
        let max_seq_length = max_seq_length.unwrap_or(positions).clamp(1, positions);
        // sentence-transformers truncates to max_seq_length and pads to the batch's longest
        // sentence, whatever tokenizer.json says.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| {
                Error::format(
                    tokenizer_path.display().to_string(),
                    format!("cannot set truncation: {e}"),
                )
            })?;
        let padding = tokenizer.get_padding().cloned().unwrap_or_default();
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..padding
        }));
        Ok(SentenceEncoder {
            model,
            tokenizer,
            pooling,
            normalize,
            max_seq_length,
            device: device.clone(),
        })
    }

    /// The pooling read from the directory.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Whether embeddings are L2-normalized.
    pub fn normalizes(&self) -> bool {
        self.normalize
    }

    /// The longest token sequence kept (longer sentences are truncated).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Tokenize `sentences` into one padded batch on the model's device.
    pub fn tokenize(&self, sentences: &[&str]) -> Result<TokenBatch> {
        if sentences.is_empty() {
            return Err(Error::invalid(
                "SentenceEncoder",
                "no sentences to tokenize",
            ));
        }
        let encodings = self
            .tokenizer
            .encode_batch(sentences.to_vec(), true)
            .map_err(|e| Error::invalid("SentenceEncoder", format!("tokenization failed: {e}")))?;
        let tokens = encodings.first().map_or(0, |e| e.get_ids().len());
        let (mut ids, mut mask, mut types) = (Vec::new(), Vec::new(), Vec::new());
        for encoding in &encodings {
            if encoding.get_ids().len() != tokens {
                return Err(Error::invalid(
                    "SentenceEncoder",
                    "the tokenizer did not pad the batch to one length",
                ));
            }
            let to_i32 = |values: &[u32]| -> Result<Vec<i32>> {
                values
                    .iter()
                    .map(|&v| {
                        i32::try_from(v).map_err(|_| {
                            Error::invalid("SentenceEncoder", format!("token id {v} exceeds int32"))
                        })
                    })
                    .collect()
            };
            ids.extend(to_i32(encoding.get_ids())?);
            mask.extend(to_i32(encoding.get_attention_mask())?);
            types.extend(to_i32(encoding.get_type_ids())?);
        }
        let shape = [sentences.len(), tokens];
        Ok(TokenBatch {
            input_ids: Tensor::from_vec(ids, &shape, &self.device)?,
            attention_mask: Tensor::from_vec(mask, &shape, &self.device)?,
            token_type_ids: Tensor::from_vec(types, &shape, &self.device)?,
        })
    }

    /// Pool (and normalize) the encoder's output for a tokenized batch: `[batch, hidden]`,
    /// under `no_grad` (inference: the result has no graph; train through
    /// [`sentence_embeddings`] instead).
    pub fn encode_batch(&self, batch: &TokenBatch) -> Result<Tensor> {
        let _no_graph = no_grad();
        sentence_embeddings(&self.model, batch, self.pooling, self.normalize)
    }

    /// Sentence embeddings `[sentences, hidden]` (f32, on the model's device), computed under
    /// `no_grad` in batches of [`DEFAULT_BATCH_SIZE`] sentences, like sentence-transformers'
    /// `encode`.
    pub fn encode(&self, sentences: &[&str]) -> Result<Tensor> {
        self.encode_in_batches(sentences, DEFAULT_BATCH_SIZE)
    }

    /// [`encode`](Self::encode) with `batch_size` sentences per forward pass (at least 1).
    /// Each batch is padded to its own longest sentence, so the embeddings do not depend on
    /// the batch size beyond float rounding.
    pub fn encode_in_batches(&self, sentences: &[&str], batch_size: usize) -> Result<Tensor> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "SentenceEncoder::encode",
                "batch_size must be at least 1",
            ));
        }
        if sentences.is_empty() {
            return Err(Error::invalid(
                "SentenceEncoder::encode",
                "no sentences to encode",
            ));
        }
        let _no_graph = no_grad();
        let mut parts = Vec::new();
        for chunk in sentences.chunks(batch_size) {
            let batch = self.tokenize(chunk)?;
            parts.push(self.encode_batch(&batch)?);
        }
        match parts.as_slice() {
            [only] => Ok(only.clone()),
            _ => Tensor::cat(&parts.iter().collect::<Vec<_>>(), 0),
        }
    }
}

/// Run `model` over a tokenized `batch` (ids, attention mask, token types), pool the last
/// hidden states over the real tokens and L2-normalize them when `normalize`: the sentence
/// embeddings `[batch, hidden]` of [`SentenceEncoder::encode_batch`], usable without a
/// tokenizer (a benchmark feeding random ids).
pub fn sentence_embeddings(
    model: &BertModel,
    batch: &TokenBatch,
    pooling: Pooling,
    normalize: bool,
) -> Result<Tensor> {
    let hidden = model.forward(
        &batch.input_ids,
        Some(&batch.attention_mask),
        Some(&batch.token_type_ids),
    )?;
    let pooled = pool(&hidden, &batch.attention_mask, pooling)?;
    if normalize {
        l2_normalize(&pooled)
    } else {
        Ok(pooled)
    }
}

/// Pool `hidden [batch, tokens, dim]` over the tokens whose `mask [batch, tokens]` is 1.
pub fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> Result<Tensor> {
    let hidden = hidden.to_dtype(DType::F32)?;
    let weights = mask.to_dtype(DType::F32)?.unsqueeze(-1)?;
    match pooling {
        Pooling::Mean => {
            let sum = hidden.mul(&weights)?.sum(&[1], false)?;
            let count = weights.sum(&[1], false)?.clamp(1e-9, f64::INFINITY)?;
            sum.div(&count)
        }
        Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
        Pooling::Max => {
            // Padding positions get -1e9 so they never win (sentence-transformers' value).
            let shifted = hidden.add(&weights.rsub_scalar(1.0)?.mul_scalar(-1e9)?)?;
            shifted.max(&[1], false)
        }
    }
}

/// `x / max(‖x‖₂, 1e-12)` along the last dim (`torch.nn.functional.normalize`).
pub fn l2_normalize(x: &Tensor) -> Result<Tensor> {
    let norm = x.norm(2.0, &[-1], true)?.clamp(1e-12, f64::INFINITY)?;
    x.div(&norm)
}
