//! A `config.json` checked against the weights it comes with, before the model is built: the
//! configuration decides how much is allocated (a `num_hidden_layers` of a million builds a
//! million layers), so each size it gives must be the size the weights' safetensors header
//! declares. Together with the header's own check (shapes fit the file's bytes), a model that
//! passes allocates no more than its weights file holds.
//!
//! | config field | checked against |
//! |---|---|
//! | `vocab_size`, `hidden_size` | `embeddings.word_embeddings.weight` `[vocab, hidden]` |
//! | `max_position_embeddings` | `embeddings.position_embeddings.weight` rows |
//! | `type_vocab_size` | `embeddings.token_type_embeddings.weight` rows |
//! | `num_hidden_layers` | the number of `encoder.layer.N` blocks |
//! | `intermediate_size` | `encoder.layer.0.intermediate.dense.weight` rows |
//! | `num_attention_heads` | divides `hidden_size` (checked with the configuration) |
//!
//! Names are compared after [`hugging_face_name`] (a `bert.` prefix removed).

use std::collections::{BTreeMap, BTreeSet};

use anygrad_core::{Error, Result};

use super::config::BertConfig;
use super::header::WeightsHeader;
use super::loading::hugging_face_name;

const WORD_EMBEDDINGS: &str = "embeddings.word_embeddings.weight";
const POSITION_EMBEDDINGS: &str = "embeddings.position_embeddings.weight";
const TYPE_EMBEDDINGS: &str = "embeddings.token_type_embeddings.weight";
const LAYER_PREFIX: &str = "encoder.layer.";
const FIRST_INTERMEDIATE: &str = "encoder.layer.0.intermediate.dense.weight";

impl BertConfig {
    /// Check every size of this configuration against the tensors `header` declares.
    /// `config_context` names the configuration (its path) and `weights_context` the weights
    /// file in the error, which gives the config field, its value and what the weights hold.
    pub fn check_against_weights(
        &self,
        header: &WeightsHeader,
        config_context: &str,
        weights_context: &str,
    ) -> Result<()> {
        let shapes: BTreeMap<String, &[usize]> = header
            .tensors
            .iter()
            .filter_map(|(name, entry)| {
                hugging_face_name(name).map(|mapped| (mapped, entry.shape.as_slice()))
            })
            .collect();
        let refuse = |field: &str, value: usize, holds: String| {
            Error::format(
                config_context,
                format!("{field} is {value}, but the weights ({weights_context}) hold {holds}"),
            )
        };
        let matrix = |name: &str, field: &str, value: usize| -> Result<[usize; 2]> {
            match shapes.get(name) {
                Some(&[rows, columns]) => Ok([*rows, *columns]),
                Some(shape) => Err(refuse(
                    field,
                    value,
                    format!("`{name}` of shape {shape:?}, not a matrix"),
                )),
                None => Err(refuse(field, value, format!("no tensor `{name}`"))),
            }
        };
        let [vocab, hidden] = matrix(WORD_EMBEDDINGS, "vocab_size", self.vocab_size)?;
        let compare = |field: &str, value: usize, held: usize, what: String| -> Result<()> {
            if value == held {
                Ok(())
            } else {
                Err(refuse(field, value, format!("{held} ({what})")))
            }
        };
        compare(
            "vocab_size",
            self.vocab_size,
            vocab,
            format!("rows of `{WORD_EMBEDDINGS}`"),
        )?;
        compare(
            "hidden_size",
            self.hidden_size,
            hidden,
            format!("columns of `{WORD_EMBEDDINGS}`"),
        )?;
        let [positions, _] = matrix(
            POSITION_EMBEDDINGS,
            "max_position_embeddings",
            self.max_position_embeddings,
        )?;
        compare(
            "max_position_embeddings",
            self.max_position_embeddings,
            positions,
            format!("rows of `{POSITION_EMBEDDINGS}`"),
        )?;
        let [types, _] = matrix(TYPE_EMBEDDINGS, "type_vocab_size", self.type_vocab_size)?;
        compare(
            "type_vocab_size",
            self.type_vocab_size,
            types,
            format!("rows of `{TYPE_EMBEDDINGS}`"),
        )?;
        let layers: BTreeSet<usize> = shapes
            .keys()
            .filter_map(|name| name.strip_prefix(LAYER_PREFIX))
            .filter_map(|rest| rest.split('.').next()?.parse().ok())
            .collect();
        compare(
            "num_hidden_layers",
            self.num_hidden_layers,
            layers.len(),
            match (layers.first(), layers.last()) {
                (Some(first), Some(last)) => {
                    format!("encoder layers, {LAYER_PREFIX}{first} to {LAYER_PREFIX}{last}")
                }
                _ => "encoder layers".into(),
            },
        )?;
        let [intermediate, _] = matrix(
            FIRST_INTERMEDIATE,
            "intermediate_size",
            self.intermediate_size,
        )?;
        compare(
            "intermediate_size",
            self.intermediate_size,
            intermediate,
            format!("rows of `{FIRST_INTERMEDIATE}`"),
        )?;
        // `num_attention_heads` has no tensor of its own: it must divide `hidden_size`, which
        // the configuration's own check enforces, and `hidden_size` is checked above.
        if self.num_attention_heads == 0 || !hidden.is_multiple_of(self.num_attention_heads) {
            return Err(refuse(
                "num_attention_heads",
                self.num_attention_heads,
                format!("a hidden size of {hidden}, which it must divide"),
            ));
        }
        Ok(())
    }
}
