//! Loading a Hugging Face BERT directory as it is: `config.json` gives the architecture and
//! `model.safetensors` the weights, under Hugging Face's names. Tensors the encoder does not
//! use are skipped by name: the `embeddings.position_ids` buffer (int64 `0..max_positions`,
//! which the encoder recomputes) and the `pooler.*` dense layer (a tanh projection of `[CLS]`
//! that sentence embeddings do not use). A `bert.` prefix (checkpoints of `BertFor...` task
//! models) is removed. Every other tensor must match the model exactly (strict load: the
//! error lists every missing, unexpected and mis-shaped name); bf16, f16 and f64 tensors are
//! converted to the model's f32 and integer tensors narrowed, all on load.
//!
//! Nothing is trusted before it is checked: every file is opened through
//! `anygrad_core::files` (a regular file, not a FIFO, device or directory, within a size
//! bound), and `config.json` is checked against the safetensors header of the weights (names
//! and shapes, read without the data) before the model is allocated, so an absurd layer count
//! or vocabulary is an error naming the config field instead of memory running out.

use std::path::Path;

use anygrad_core::files::regular_file_metadata;
use anygrad_core::{Device, Error, Result};
use anygrad_nn::load_safetensors_mapped;

use super::config::BertConfig;
use super::header::WeightsHeader;
use super::model::BertModel;

/// The file name of the weights inside a Hugging Face model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The file name of the architecture inside a Hugging Face model directory.
pub const CONFIG_FILE: &str = "config.json";
/// The largest JSON configuration read (`config.json`, `modules.json`,
/// `1_Pooling/config.json`, `sentence_bert_config.json`, `tokenizer_config.json`): 4 MiB.
pub const MAX_CONFIG_BYTES: u64 = 4 << 20;
/// The largest `tokenizer.json` read: 64 MiB (multilingual vocabularies take a few MiB).
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// The largest `model.safetensors` read: 64 GiB.
pub const MAX_WEIGHTS_BYTES: u64 = 64 << 30;

/// The model's name for a tensor of a Hugging Face BERT file, or `None` to skip it.
pub fn hugging_face_name(name: &str) -> Option<String> {
    let name = name.strip_prefix("bert.").unwrap_or(name);
    if name == "embeddings.position_ids" || name.starts_with("pooler.") {
        return None;
    }
    Some(name.to_string())
}

impl BertModel {
    /// Build the model of `dir/config.json` on `device` and load `dir/model.safetensors`
    /// strictly into it. The configuration is first checked against the weights' header
    /// (layer count, hidden, intermediate and vocabulary sizes, positions, token types), so
    /// nothing is allocated for a configuration the weights do not match. The model is
    /// returned in eval mode (no dropout), like `transformers`' `from_pretrained`; call
    /// `train()` to fine-tune.
    pub fn from_pretrained(dir: impl AsRef<Path>, device: &Device) -> Result<BertModel> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(Error::format(
                dir.display().to_string(),
                "not a directory; give a Hugging Face model directory (config.json, model.safetensors)",
            ));
        }
        let config_path = dir.join(CONFIG_FILE);
        let weights_path = dir.join(WEIGHTS_FILE);
        let config = BertConfig::from_file(&config_path)?;
        let header = WeightsHeader::read(&weights_path, MAX_WEIGHTS_BYTES, "model weights")?;
        config.check_against_weights(
            &header,
            &config_path.display().to_string(),
            &weights_path.display().to_string(),
        )?;
        let model = BertModel::new(&config, device)?;
        model.load_weights(&weights_path)?;
        anygrad_nn::Module::eval(&model);
        Ok(model)
    }

    /// Load a Hugging Face BERT `model.safetensors` strictly into this model (see the module
    /// documentation for the names skipped). The file must be a regular file of at most
    /// [`MAX_WEIGHTS_BYTES`].
    pub fn load_weights(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        regular_file_metadata(path, MAX_WEIGHTS_BYTES, "model weights")?;
        load_safetensors_mapped(self, path, true, hugging_face_name).map(|_| ())
    }
}
