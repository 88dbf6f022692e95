//! LoRA (low-rank adaptation) for [`LlamaForCausalLM`]: a frozen projection `W` (`[out, in]`)
//! gains a trainable low-rank update, `y = x Wᵀ + (alpha / r) · (x Aᵀ) Bᵀ`, with `A` `[r, in]`
//! drawn like PEFT (`kaiming_uniform_(a = √5)`, i.e. `U(-1/√in, 1/√in)`) and `B` `[out, r]`
//! zero, so an adapted model starts out computing exactly what the base model computes.
//!
//! - [`LoraConfig`]: rank, alpha and the projections adapted, by name (`q_proj`, `k_proj`,
//!   `v_proj`, `o_proj`, `gate_proj`, `up_proj`, `down_proj`).
//! - [`LoraLinear`]: the projection type of the model: a base weight (a `Linear`, or a
//!   frozen quantized matrix: [`ProjectionWeight`]) and an optional [`LoraAdapter`]. Its
//!   parameter names are the base's (`weight`) and the adapter's (`lora_A.weight`,
//!   `lora_B.weight`), so the model's state dict is unchanged without adapters.
//! - [`LlamaForCausalLM::add_lora`] freezes every base parameter (`requires_grad` false: no
//!   gradient is computed or stored for them) and adds adapters;
//!   [`LlamaForCausalLM::lora_parameters`] lists the trainable ones for an optimizer.
//! - [`LlamaForCausalLM::store_frozen_projections_as`]: the frozen projections in f16 (half
//!   the memory), multiplied in f16 with the adapters in f32.
//! - [`LlamaForCausalLM::save_lora`] / [`LlamaForCausalLM::load_lora`]: PEFT's layout, a
//!   folder with `adapter_model.safetensors` (`base_model.model.model.layers.{i}.self_attn.
//!   q_proj.lora_A.weight`, ...) and `adapter_config.json`.

use std::collections::BTreeMap;
use std::path::Path;

use anygrad_core::files::read_regular_file;
use anygrad_core::{DType, Device, Error, Result, Tensor};
use anygrad_nn::{init, Kind, Module, Parameter};
use serde_json::{json, Value};

use super::model::LlamaForCausalLM;
use super::weights::ProjectionWeight;

/// The projections of a Llama layer that can carry an adapter, by their Hugging Face names.
pub const LORA_TARGETS: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// PEFT's file names inside an adapter folder.
const WEIGHTS_FILE: &str = "adapter_model.safetensors";
const CONFIG_FILE: &str = "adapter_config.json";
/// The prefix PEFT puts before a causal LM's parameter names.
const PEFT_PREFIX: &str = "base_model.model.";
/// The largest `adapter_config.json` read (1 MiB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Which projections get adapters, and their size.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraConfig {
    /// The rank `r` of the update (columns of `B`, rows of `A`).
    pub rank: usize,
    /// `lora_alpha`: the update is scaled by `alpha / rank`.
    pub alpha: f64,
    /// The projections adapted, among [`LORA_TARGETS`].
    pub target_modules: Vec<String>,
}

impl LoraConfig {
    /// Rank `rank`, alpha `alpha`, adapting the projections named in `targets`.
    pub fn new(rank: usize, alpha: f64, targets: &[&str]) -> LoraConfig {
        LoraConfig {
            rank,
            alpha,
            target_modules: targets.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// `alpha / rank`, the factor of the low-rank update.
    pub fn scaling(&self) -> f64 {
        self.alpha / self.rank as f64
    }

    /// Check a positive rank, a finite alpha and known, non-empty target names.
    pub fn validate(&self) -> Result<()> {
        if self.rank == 0 {
            return Err(Error::invalid("LoraConfig", "the rank must be at least 1"));
        }
        if !self.alpha.is_finite() {
            return Err(Error::invalid(
                "LoraConfig",
                format!("alpha must be finite, got {}", self.alpha),
            ));
        }
        if self.target_modules.is_empty() {
            return Err(Error::invalid("LoraConfig", "no target modules"));
        }
        for target in &self.target_modules {
            if !LORA_TARGETS.contains(&target.as_str()) {
                return Err(Error::invalid(
                    "LoraConfig",
                    format!(
                        "unknown target module `{target}`; Llama's projections are {}",
                        LORA_TARGETS.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// PEFT's `adapter_config.json` for these adapters.
    pub fn to_peft_json(&self) -> Value {
        // PEFT writes `lora_alpha` as an integer; keep a whole alpha one.
        let alpha = if self.alpha.fract() == 0.0 && self.alpha.abs() < 1e15 {
            json!(self.alpha as i64)
        } else {
            json!(self.alpha)
        };
        json!({
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "r": self.rank,
            "lora_alpha": alpha,
            "target_modules": self.target_modules,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": false,
            "inference_mode": true,
            "base_model_name_or_path": null,
        })
    }

    /// The configuration of a PEFT `adapter_config.json` (`peft_type` `LORA`, `r`,
    /// `lora_alpha`, `target_modules` as a list; `bias` must be `none`). `context` names the
    /// file in errors.
    pub fn from_peft_json(value: &Value, context: &str) -> Result<LoraConfig> {
        let field = |name: &str| {
            value.get(name).ok_or_else(|| {
                Error::format(context, format!("adapter_config.json has no `{name}`"))
            })
        };
        if field("peft_type")?.as_str() != Some("LORA") {
            return Err(Error::format(
                context,
                format!("peft_type is {}, not \"LORA\"", field("peft_type")?),
            ));
        }
        if let Some(bias) = value.get("bias").and_then(Value::as_str) {
            if bias != "none" {
                return Err(Error::format(
                    context,
                    format!("bias `{bias}` is not supported (only \"none\")"),
                ));
            }
        }
        let rank = field("r")?
            .as_u64()
            .ok_or_else(|| Error::format(context, "`r` is not a positive integer"))?;
        let alpha = field("lora_alpha")?
            .as_f64()
            .ok_or_else(|| Error::format(context, "`lora_alpha` is not a number"))?;
        let targets = field("target_modules")?
            .as_array()
            .ok_or_else(|| Error::format(context, "`target_modules` is not a list of names"))?
            .iter()
            .map(|t| {
                t.as_str().map(str::to_string).ok_or_else(|| {
                    Error::format(context, format!("target module {t} is not a string"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let config = LoraConfig {
            rank: usize::try_from(rank)
                .map_err(|_| Error::format(context, format!("`r` {rank} is too large")))?,
            alpha,
            target_modules: targets,
        };
        config
            .validate()
            .map_err(|e| Error::format(context, e.to_string()))?;
        Ok(config)
    }
}

/// The trainable low-rank update of one projection: `scaling · (x Aᵀ) Bᵀ`.
#[derive(Clone, Debug)]
pub struct LoraAdapter {
    /// `A`, `[rank, in]` (PEFT's `lora_A.weight`).
    pub lora_a: Parameter,
    /// `B`, `[out, rank]` (PEFT's `lora_B.weight`), zero at start.
    pub lora_b: Parameter,
    /// `alpha / rank`.
    pub scaling: f64,
}

impl LoraAdapter {
    /// A fresh adapter for a `[out, in]` projection on `device`: `A` drawn from
    /// `U(-1/√in, 1/√in)` (PEFT's `kaiming_uniform_(a = √5)`, from the global generator), `B`
    /// zero.
    pub fn new(
        [out, inputs]: [usize; 2],
        device: &Device,
        config: &LoraConfig,
    ) -> Result<LoraAdapter> {
        let lora_a = Tensor::zeros(&[config.rank, inputs], DType::F32, device)?;
        init::default_weight_(&lora_a)?;
        let lora_b = Tensor::zeros(&[out, config.rank], DType::F32, device)?;
        Ok(LoraAdapter {
            lora_a: Parameter::new(lora_a),
            lora_b: Parameter::new(lora_b),
            scaling: config.scaling(),
        })
    }

    /// `scaling · (x Aᵀ) Bᵀ` over the last dim of `x`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.linear(&self.lora_a.tensor(), None)?
            .linear(&self.lora_b.tensor(), None)?
            .mul_scalar(self.scaling)
    }
}

/// A projection of the model: a bias-free base weight `[out, in]` (dense, or quantized and
/// frozen) and, once LoRA is added, its adapter. Parameter names: `weight` (and `bias`) of a
/// dense base, then `lora_A.weight` and `lora_B.weight`.
#[derive(Clone, Debug)]
pub struct LoraLinear {
    /// The base projection (frozen once an adapter is added).
    pub base: ProjectionWeight,
    /// The low-rank update, if any.
    pub adapter: Option<LoraAdapter>,
}

impl LoraLinear {
    /// A projection without an adapter.
    pub fn new(base: ProjectionWeight) -> LoraLinear {
        LoraLinear {
            base,
            adapter: None,
        }
    }

    /// `x Wᵀ (+ b) + scaling · (x Aᵀ) Bᵀ`. A base stored in another dtype (f16 after
    /// [`LlamaForCausalLM::store_frozen_projections_as`], or quantized) gives its product in
    /// `x`'s dtype (see [`ProjectionWeight::forward`]).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = self.base.forward(x)?;
        match &self.adapter {
            Some(adapter) => y.add(&adapter.forward(x)?),
            None => Ok(y),
        }
    }

    /// The base weight's shape, `[out, in]`.
    pub fn shape(&self) -> [usize; 2] {
        self.base.shape()
    }
}

impl Module for LoraLinear {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        LoraLinear::forward(self, x)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.base.visit(prefix, visitor);
        if let Some(adapter) = &self.adapter {
            visitor(
                &format!("{prefix}lora_A.weight"),
                &adapter.lora_a,
                Kind::Parameter,
            );
            visitor(
                &format!("{prefix}lora_B.weight"),
                &adapter.lora_b,
                Kind::Parameter,
            );
        }
    }
}

impl LlamaForCausalLM {
    /// Every projection with its Hugging Face module name
    /// (`model.layers.{i}.self_attn.q_proj`) and its short name (`q_proj`).
    fn projections_mut(&mut self) -> Vec<(String, &'static str, &mut LoraLinear)> {
        let mut out = Vec::new();
        for (index, layer) in self.model.layers.iter_mut().enumerate() {
            let attention = format!("model.layers.{index}.self_attn");
            let mlp = format!("model.layers.{index}.mlp");
            let a = &mut layer.self_attn;
            for (name, projection) in [
                ("q_proj", &mut a.q_proj),
                ("k_proj", &mut a.k_proj),
                ("v_proj", &mut a.v_proj),
                ("o_proj", &mut a.o_proj),
            ] {
                out.push((format!("{attention}.{name}"), name, projection));
            }
            let m = &mut layer.mlp;
            for (name, projection) in [
                ("gate_proj", &mut m.gate_proj),
                ("up_proj", &mut m.up_proj),
                ("down_proj", &mut m.down_proj),
            ] {
                out.push((format!("{mlp}.{name}"), name, projection));
            }
        }
        out
    }

    /// Freeze every parameter of the model (`requires_grad` false, gradients cleared) and
    /// add a fresh adapter (see [`LoraAdapter::new`]) to each projection named in
    /// `config.target_modules`. The adapted model computes the same logits as before until
    /// the adapters are trained. Adding adapters twice is an error.
    pub fn add_lora(&mut self, config: &LoraConfig) -> Result<()> {
        config.validate()?;
        if let Some(existing) = &self.lora {
            return Err(Error::invalid(
                "add_lora",
                format!(
                    "the model already has LoRA adapters (rank {} on {})",
                    existing.rank,
                    existing.target_modules.join(", ")
                ),
            ));
        }
        for (_, parameter) in self.named_parameter_slots() {
            parameter.set_grad(None);
            parameter.tensor().requires_grad_(false);
        }
        for (_, short, projection) in self.projections_mut() {
            if config.target_modules.iter().any(|t| t == short) {
                let device = projection.base.device();
                projection.adapter = Some(LoraAdapter::new(projection.shape(), &device, config)?);
            }
        }
        self.lora = Some(config.clone());
        Ok(())
    }

    /// Store every frozen projection weight (and bias) in `dtype` (`F16` or `F32`):
    /// after [`Self::add_lora`], f16 halves the memory of the base's projections (about 70%
    /// of a Llama's weights) while the adapters, embeddings and norms stay f32. A projection
    /// that is still trainable (no adapters added yet) is refused.
    pub fn store_frozen_projections_as(&mut self, dtype: DType) -> Result<()> {
        if !matches!(dtype, DType::F16 | DType::F32) {
            return Err(Error::invalid(
                "store_frozen_projections_as",
                format!("{dtype} is not a float dtype for weights (use F16 or F32)"),
            ));
        }
        for (name, _, projection) in self.projections_mut() {
            // A quantized base is frozen and stays in its format.
            let ProjectionWeight::Dense(base) = &projection.base else {
                continue;
            };
            let slots = std::iter::once(&base.weight).chain(base.bias.as_ref());
            for slot in slots {
                let tensor = slot.tensor();
                if tensor.requires_grad() {
                    return Err(Error::invalid(
                        "store_frozen_projections_as",
                        format!("`{name}` is trainable: add LoRA adapters first (add_lora)"),
                    ));
                }
                if tensor.dtype() != dtype {
                    slot.set(tensor.to_dtype(dtype)?);
                }
            }
        }
        Ok(())
    }

    /// The LoRA configuration, once adapters were added.
    pub fn lora_config(&self) -> Option<&LoraConfig> {
        self.lora.as_ref()
    }

    /// The adapters' parameters (the only trainable ones after [`Self::add_lora`]) under
    /// PEFT's saved names (`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`),
    /// in layer order: what an optimizer takes.
    pub fn lora_parameters(&self) -> Vec<(String, Parameter)> {
        self.named_parameter_slots()
            .into_iter()
            .filter(|(name, _)| {
                name.ends_with(".lora_A.weight") || name.ends_with(".lora_B.weight")
            })
            .map(|(name, slot)| (format!("{PEFT_PREFIX}{name}"), slot))
            .collect()
    }

    /// Write the adapters to the folder `dir` (created if missing) in PEFT's layout:
    /// `adapter_model.safetensors` (f32 `lora_A.weight` `[r, in]` and `lora_B.weight`
    /// `[out, r]` under `base_model.model.` names) and `adapter_config.json`.
    pub fn save_lora(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let config = self
            .lora
            .as_ref()
            .ok_or_else(|| Error::invalid("save_lora", "the model has no LoRA adapters"))?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("save_lora: creating {}", dir.display()), e))?;
        let tensors: Vec<(String, Tensor)> = self
            .lora_parameters()
            .into_iter()
            .map(|(name, slot)| (name, slot.tensor().detach()))
            .collect();
        let metadata = BTreeMap::from([("format".to_string(), "pt".to_string())]);
        anygrad_nn::save_tensors(&tensors, &metadata, dir.join(WEIGHTS_FILE))?;
        let text = serde_json::to_string_pretty(&config.to_peft_json())
            .map_err(|e| Error::invalid("save_lora", format!("encoding the config: {e}")))?;
        let path = dir.join(CONFIG_FILE);
        std::fs::write(&path, text + "\n")
            .map_err(|e| Error::io(format!("save_lora: writing {}", path.display()), e))
    }

    /// Add the adapters saved in PEFT's layout in the folder `dir` (see [`Self::save_lora`];
    /// f16/bf16 tensors are converted to f32): the configuration from `adapter_config.json`,
    /// then every adapter's `A` and `B` from `adapter_model.safetensors`, shapes checked. A
    /// missing or extra tensor is an error. Returns the configuration. After an error in
    /// the weights file the model may hold partly loaded adapters: load onto a fresh model.
    pub fn load_lora(&mut self, dir: impl AsRef<Path>) -> Result<LoraConfig> {
        let dir = dir.as_ref();
        let config_path = dir.join(CONFIG_FILE);
        let context = config_path.display().to_string();
        let bytes = read_regular_file(&config_path, MAX_CONFIG_BYTES, "LoRA adapter config")?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::format(&context, format!("not JSON: {e}")))?;
        let config = LoraConfig::from_peft_json(&value, &context)?;
        let weights_path = dir.join(WEIGHTS_FILE);
        let context = weights_path.display().to_string();
        let (mut tensors, _) = anygrad_nn::load_tensors(&weights_path, &anygrad_core::Device::Cpu)?;
        self.add_lora(&config)?;
        for (name, slot) in self.lora_parameters() {
            let tensor = tensors.remove(&name).ok_or_else(|| {
                Error::format(&context, format!("the file has no tensor `{name}`"))
            })?;
            let expected = slot.shape();
            if tensor.shape() != expected.as_slice() {
                return Err(Error::format(
                    &context,
                    format!(
                        "tensor `{name}` has shape {:?}, the model needs {expected:?}",
                        tensor.shape()
                    ),
                ));
            }
            let device = slot.tensor().device().clone();
            slot.assign(&tensor.to_dtype(DType::F32)?.to_device(&device)?)?;
        }
        if let Some(extra) = tensors.keys().next() {
            return Err(Error::format(
                &context,
                format!(
                    "{} tensors the adapters do not have, such as `{extra}`",
                    tensors.len()
                ),
            ));
        }
        Ok(config)
    }
}
