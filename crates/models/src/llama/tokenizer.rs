//! [`LlamaTokenizer`]: text ↔ token ids for a Llama-family model, built with Hugging Face's
//! `tokenizers` either from a GGUF file's `tokenizer.ggml.*` metadata or from a Hugging Face
//! `tokenizer.json` (with `tokenizer_config.json`'s chat template when present).
//!
//! From GGUF, the tokenizer is written as a `tokenizer.json` document and loaded by
//! `tokenizers` itself, so the BPE, normalizers, pre-tokenizers and decoders are the library's.
//! Two vocabularies are read:
//!
//! - `gpt2` byte-level BPE (`tokens`, `merges`, `token_type`): control and user-defined tokens
//!   (`token_type` 3 and 4) become added tokens that are never split; `pre` `smollm`,
//!   `starcoder` and `refact` split digits one by one first, as their Hugging Face tokenizers
//!   do.
//! - `llama` SentencePiece BPE (`tokens`, `scores`, `token_type`, no merges): see
//!   `sentencepiece.rs`.
//!
//! `add_bos_token` (default true for `llama`, false for `gpt2`) and `add_eos_token` (default
//! false) say whether [`LlamaTokenizer::encode`] frames the ids.

use std::path::Path;

use anygrad_core::files::read_regular_file;
use anygrad_core::{Error, Result};
use serde_json::{json, Value};
use tokenizers::Tokenizer;

use crate::gguf::{GgufFile, MetadataValue};

use super::chat::ChatTemplate;
use super::sentencepiece::sentencepiece_document;

/// The largest `tokenizer.json` read: 64 MiB.
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// The largest `tokenizer_config.json` read: 4 MiB.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// A tokenizer with its special tokens and chat template.
pub struct LlamaTokenizer {
    tokenizer: Tokenizer,
    /// The beginning-of-sequence token.
    pub bos_token_id: Option<u32>,
    /// The end-of-sequence token.
    pub eos_token_id: Option<u32>,
    /// Whether [`LlamaTokenizer::encode`] puts the BOS token first.
    pub add_bos_token: bool,
    /// Whether [`LlamaTokenizer::encode`] puts the EOS token last.
    pub add_eos_token: bool,
    /// The chat template, when the model has one (its `bos_token`/`eos_token` set to this
    /// tokenizer's).
    pub chat_template: Option<ChatTemplate>,
}

fn tokenizer_error(context: &str, message: impl std::fmt::Display) -> Error {
    Error::format(context, format!("tokenizer: {message}"))
}

fn string_array<'a>(file: &'a GgufFile, key: &str) -> Result<Vec<&'a str>> {
    let values = file
        .metadata_value(key)
        .and_then(MetadataValue::as_array)
        .ok_or_else(|| {
            tokenizer_error(
                file.context(),
                format!("`{key}` is missing or not an array"),
            )
        })?;
    values
        .iter()
        .map(|v| {
            v.as_str().ok_or_else(|| {
                tokenizer_error(file.context(), format!("`{key}` holds a {}", v.type_name()))
            })
        })
        .collect()
}

/// The `tokenizer.json` document of a GGUF `gpt2` byte-level BPE vocabulary.
fn byte_level_document(file: &GgufFile, tokens: &[&str], types: &[i64]) -> Result<Value> {
    let merges = string_array(file, "tokenizer.ggml.merges")?;
    let mut vocab = serde_json::Map::with_capacity(tokens.len());
    let mut added = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        vocab.insert(token.to_string(), json!(id));
        let kind = types.get(id).copied().unwrap_or(1);
        if kind == 3 || kind == 4 {
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": kind == 3,
            }));
        }
    }
    let byte_level = json!({
        "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true
    });
    let pre = file
        .metadata_value("tokenizer.ggml.pre")
        .and_then(MetadataValue::as_str)
        .unwrap_or("default");
    let pre_tokenizer = if matches!(pre, "smollm" | "starcoder" | "refact") {
        json!({"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": true}, byte_level
        ]})
    } else {
        byte_level.clone()
    };
    let document = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": byte_level,
        "model": {
        "type": "BPE", "dropout": null, "unk_token": null,
        "continuing_subword_prefix": null, "end_of_word_suffix": null,
        "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
        "vocab": Value::Object(vocab), "merges": merges,
        },
    });
    Ok(document)
}

impl LlamaTokenizer {
    /// The tokenizer of a GGUF file's metadata (`tokenizer.ggml.model` `gpt2` or `llama`).
    pub fn from_gguf(file: &GgufFile) -> Result<LlamaTokenizer> {
        let context = file.context();
        let model = file.metadata_str("tokenizer.ggml.model")?;
        if !matches!(model, "gpt2" | "llama") {
            return Err(tokenizer_error(
                context,
                format!("tokenizer.ggml.model `{model}` is not supported (`gpt2` byte-level BPE and `llama` SentencePiece BPE are)"),
            ));
        }
        let tokens = string_array(file, "tokenizer.ggml.tokens")?;
        let types: Vec<i64> = match file
            .metadata_value("tokenizer.ggml.token_type")
            .and_then(MetadataValue::as_array)
        {
            Some(values) => values.iter().map(|v| v.as_i64().unwrap_or(1)).collect(),
            None => vec![1; tokens.len()],
        };
        let document = if model == "llama" {
            sentencepiece_document(file, &tokens, &types)?
        } else {
            byte_level_document(file, &tokens, &types)?
        };
        let tokenizer: Tokenizer = serde_json::from_value(document).map_err(|e| {
            tokenizer_error(
                context,
                format!("building the {model} tokenizer failed: {e}"),
            )
        })?;
        let token = |key: &str| -> Option<u32> {
            file.metadata_value(key)
                .and_then(MetadataValue::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|&v| (v as usize) < tokens.len())
        };
        let flag = |key: &str, default: bool| {
            file.metadata_value(key)
                .and_then(MetadataValue::as_bool)
                .unwrap_or(default)
        };
        let (bos_token_id, eos_token_id) = (
            token("tokenizer.ggml.bos_token_id"),
            token("tokenizer.ggml.eos_token_id"),
        );
        let text = |id: Option<u32>| id.map(|id| tokens[id as usize]);
        let chat_template = file
            .metadata_value("tokenizer.chat_template")
            .and_then(MetadataValue::as_str)
            .map(|source| {
                ChatTemplate::new(source)
                    .with_special_tokens(text(bos_token_id), text(eos_token_id))
            });
        Ok(LlamaTokenizer {
            tokenizer,
            bos_token_id,
            eos_token_id,
            add_bos_token: flag("tokenizer.ggml.add_bos_token", model == "llama"),
            add_eos_token: flag("tokenizer.ggml.add_eos_token", false),
            chat_template,
        })
    }

    /// The tokenizer of a Hugging Face folder: `tokenizer.json`, and from
    /// `tokenizer_config.json` (when present) the chat template and the BOS/EOS tokens.
    pub fn from_pretrained(dir: impl AsRef<Path>) -> Result<LlamaTokenizer> {
        let dir = dir.as_ref();
        let path = dir.join("tokenizer.json");
        let context = path.display().to_string();
        let bytes = read_regular_file(&path, MAX_TOKENIZER_BYTES, "tokenizer")?;
        let tokenizer = Tokenizer::from_bytes(&bytes).map_err(|e| tokenizer_error(&context, e))?;
        let config_path = dir.join("tokenizer_config.json");
        let config: Value = if config_path.is_file() {
            let bytes = read_regular_file(&config_path, MAX_CONFIG_BYTES, "tokenizer config")?;
            serde_json::from_slice(&bytes).map_err(|e| {
                tokenizer_error(&config_path.display().to_string(), format!("not JSON: {e}"))
            })?
        } else {
            Value::Null
        };
        let special_text = |key: &str| -> Option<String> {
            match config.get(key)? {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => Some(o.get("content")?.as_str()?.to_string()),
                _ => None,
            }
        };
        let (bos_text, eos_text) = (special_text("bos_token"), special_text("eos_token"));
        let special =
            |text: &Option<String>| text.as_deref().and_then(|t| tokenizer.token_to_id(t));
        Ok(LlamaTokenizer {
            bos_token_id: special(&bos_text),
            eos_token_id: special(&eos_text),
            add_bos_token: config
                .get("add_bos_token")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            add_eos_token: config
                .get("add_eos_token")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            chat_template: config
                .get("chat_template")
                .and_then(Value::as_str)
                .map(|source| {
                    ChatTemplate::new(source)
                        .with_special_tokens(bos_text.as_deref(), eos_text.as_deref())
                }),
            tokenizer,
        })
    }

    /// The token ids of `text` (special tokens written in the text are recognized), with the
    /// BOS token first and the EOS token last when the model asks for them.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::invalid("LlamaTokenizer::encode", e.to_string()))?;
        let mut ids = Vec::with_capacity(encoding.len() + 1);
        if self.add_bos_token {
            if let Some(bos) = self.bos_token_id {
                ids.push(bos);
            }
        }
        ids.extend_from_slice(encoding.get_ids());
        if self.add_eos_token {
            if let Some(eos) = self.eos_token_id {
                ids.push(eos);
            }
        }
        Ok(ids)
    }

    /// The text of `ids` (special tokens skipped when `skip_special`).
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.tokenizer
            .decode(ids, skip_special)
            .map_err(|e| Error::invalid("LlamaTokenizer::decode", e.to_string()))
    }

    /// The model's chat template, or ChatML ([`ChatTemplate::chatml`], with this tokenizer's
    /// special tokens) when the model ships none.
    pub fn chat_template_or_chatml(&self) -> ChatTemplate {
        self.chat_template.clone().unwrap_or_else(|| {
            let text = |id: Option<u32>| id.and_then(|id| self.tokenizer.id_to_token(id));
            ChatTemplate::chatml().with_special_tokens(
                text(self.bos_token_id).as_deref(),
                text(self.eos_token_id).as_deref(),
            )
        })
    }

    /// The number of tokens, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    /// The id of a token's text, if it is one token.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.tokenizer.token_to_id(token)
    }
}
