//! SentencePiece BPE vocabularies of GGUF files (`tokenizer.ggml.model` `llama`), written as a
//! Hugging Face `tokenizer.json` document the way `transformers` converts a SentencePiece
//! model for `LlamaTokenizerFast`:
//!
//! - a BPE model over the pieces with byte fallback (a character outside the vocabulary
//!   becomes its UTF-8 bytes' `<0xAB>` tokens), the unknown token fused, and merges derived from
//!   the vocabulary: every split of a piece into two pieces, ranked by the merged piece's score
//!   (highest first; ties by the longer left, then the longer right part, then vocabulary
//!   order), which is SentencePiece's own rule of merging the best-scoring pair first;
//! - a normalizer that puts `▁` before the text (when `add_space_prefix`, the default) and
//!   replaces every space by `▁`;
//! - a decoder that turns `▁` back into spaces, byte tokens into raw bytes, fuses them, and
//!   strips the one leading space the prefix added;
//! - unknown, control and user-defined tokens (`token_type` 2, 3, 4) as added tokens, never
//!   split (control and unknown ones special).

use std::collections::HashMap;

use anygrad_core::Result;
use serde_json::{json, Value};

use crate::gguf::{GgufFile, MetadataValue};

/// `token_type` of an unknown token.
const UNKNOWN: i64 = 2;
/// `token_type` of a control token (`<s>`, `</s>`).
const CONTROL: i64 = 3;
/// `token_type` of a user-defined token.
const USER_DEFINED: i64 = 4;

/// The merges of a SentencePiece BPE vocabulary (`pieces` by id, their `scores`): each piece
/// that splits into two pieces gives a merge per split, ordered by the piece's score
/// (descending), then the left part's length and the right part's length in characters
/// (descending), then the piece's id and the parts' ids.
pub(crate) fn sentencepiece_merges(pieces: &[&str], scores: &[f32]) -> Vec<(String, String)> {
    // A repeated piece takes its last id, as `transformers`' dictionaries do.
    let ids: HashMap<&str, usize> = pieces
        .iter()
        .enumerate()
        .map(|(id, piece)| (*piece, id))
        .collect();
    // (score, left length, right length, piece id, left id, right id, left, right)
    let mut merges = Vec::new();
    for (id, piece) in pieces.iter().enumerate() {
        let score = scores.get(id).copied().unwrap_or(0.0);
        let mut local = Vec::new();
        for (split, _) in piece.char_indices().skip(1) {
            let (left, right) = piece.split_at(split);
            if let (Some(&left_id), Some(&right_id)) = (ids.get(left), ids.get(right)) {
                local.push((left_id, right_id, left, right));
            }
        }
        local.sort_by_key(|&(left_id, right_id, _, _)| (left_id, right_id));
        for (left_id, right_id, left, right) in local {
            merges.push((
                score,
                left.chars().count(),
                right.chars().count(),
                id,
                left_id,
                right_id,
                left,
                right,
            ));
        }
    }
    // A stable sort keeps the vocabulary order among equal keys.
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
    merges
        .into_iter()
        .map(|m| (m.6.to_string(), m.7.to_string()))
        .collect()
}

/// The `tokenizer.json` document of a GGUF `llama` vocabulary: `tokens`, `scores`, `types`
/// (1 when absent), the unknown token id (else the first token of type 2, else `<unk>` when
/// present), and `tokenizer.ggml.add_space_prefix` (default true).
pub(crate) fn sentencepiece_document(
    file: &GgufFile,
    tokens: &[&str],
    types: &[i64],
) -> Result<Value> {
    let scores: Vec<f32> = match file
        .metadata_value("tokenizer.ggml.scores")
        .and_then(MetadataValue::as_array)
    {
        Some(values) => values
            .iter()
            .map(|v| v.as_f64().unwrap_or(0.0) as f32)
            .collect(),
        None => vec![0.0; tokens.len()],
    };
    let add_space_prefix = file
        .metadata_value("tokenizer.ggml.add_space_prefix")
        .and_then(MetadataValue::as_bool)
        .unwrap_or(true);
    let unknown = file
        .metadata_value("tokenizer.ggml.unknown_token_id")
        .and_then(MetadataValue::as_u64)
        .and_then(|id| tokens.get(id as usize).copied())
        .or_else(|| {
            types
                .iter()
                .position(|&t| t == UNKNOWN)
                .and_then(|id| tokens.get(id).copied())
        })
        .or_else(|| tokens.iter().copied().find(|t| *t == "<unk>"));

    let mut vocab = serde_json::Map::with_capacity(tokens.len());
    let mut added = Vec::new();
    for (id, token) in tokens.iter().enumerate() {
        vocab.insert(token.to_string(), json!(id));
        let kind = types.get(id).copied().unwrap_or(1);
        if matches!(kind, UNKNOWN | CONTROL | USER_DEFINED) {
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": kind != USER_DEFINED,
            }));
        }
    }
    let merges: Vec<Value> = sentencepiece_merges(tokens, &scores)
        .into_iter()
        .map(|(left, right)| json!([left, right]))
        .collect();
    let replace_spaces = json!({"type": "Replace", "pattern": {"String": " "}, "content": "▁"});
    let normalizer = if add_space_prefix {
        json!({"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"}, replace_spaces
        ]})
    } else {
        replace_spaces
    };
    let mut decoders = vec![
        json!({"type": "Replace", "pattern": {"String": "▁"}, "content": " "}),
        json!({"type": "ByteFallback"}),
        json!({"type": "Fuse"}),
    ];
    if add_space_prefix {
        decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    }
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": null,
        "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE", "dropout": null, "unk_token": unknown,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": true, "byte_fallback": true, "ignore_merges": false,
            "vocab": Value::Object(vocab), "merges": merges,
        },
    }))
}
