//! Loading a Hugging Face BERT directory as it is: `config.json` gives the architecture and
//! `model.safetensors` the weights, under Hugging Face's names. Tensors the encoder does not
//! use are skipped by name: the `embeddings.position_ids` buffer (int64 `0..max_positions`,
//! which the encoder recomputes) and the `pooler.*` dense layer (a tanh projection of `[CLS]`
//! that sentence embeddings do not use). A `bert.` prefix (checkpoints of `BertFor...` task
//! models) is removed. Every other tensor must match the model exactly (strict load: the
//! error lists every missing, unexpected and mis-shaped name); bf16, f16 and f64 tensors are
//! converted to the model's f32 and integer tensors narrowed, all on load.

use std::path::Path;

use anygrad_core::{Device, Error, Result};
use anygrad_nn::load_safetensors_mapped;

use super::config::BertConfig;
use super::model::BertModel;

/// The file name of the weights inside a Hugging Face model directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The file name of the architecture inside a Hugging Face model directory.
pub const CONFIG_FILE: &str = "config.json";

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
    /// strictly into it. The model is returned in eval mode (no dropout), like
    /// `transformers`' `from_pretrained`; call `train()` to fine-tune.
    pub fn from_pretrained(dir: impl AsRef<Path>, device: &Device) -> Result<BertModel> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(Error::format(
                dir.display().to_string(),
                "not a directory; give a Hugging Face model directory (config.json, model.safetensors)",
            ));
        }
        let config = BertConfig::from_file(dir.join(CONFIG_FILE))?;
        let model = BertModel::new(&config, device)?;
        model.load_weights(dir.join(WEIGHTS_FILE))?;
        anygrad_nn::Module::eval(&model);
        Ok(model)
    }

    /// Load a Hugging Face BERT `model.safetensors` strictly into this model (see the module
    /// documentation for the names skipped).
    pub fn load_weights(&self, path: impl AsRef<Path>) -> Result<()> {
        load_safetensors_mapped(self, path, true, hugging_face_name).map(|_| ())
    }
}
