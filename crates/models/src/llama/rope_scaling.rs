//! [`RopeScaling`]: the ways a Llama-family model stretches its rotary position embeddings
//! beyond the context it was trained on, as `transformers` defines them
//! (`modeling_rope_utils.py`) and llama.cpp stores them in GGUF metadata:
//!
//! - `linear`: every inverse frequency divided by `factor` (positions divided by it).
//! - `dynamic` (NTK-aware): once a call reaches a sequence length `L` beyond the original
//!   context `C`, the base becomes `θ · (factor · L / C − (factor − 1))^(d / (d − 2))`.
//! - `llama3` (Llama 3.1): frequencies whose wavelength `2π / f` is longer than
//!   `C / low_freq_factor` are divided by `factor`, those shorter than `C / high_freq_factor`
//!   are kept, and those between are blended with `s = (C / wavelength − low) / (high − low)`:
//!   `(1 − s) · f / factor + s · f`.
//! - `yarn`: each pair `i` blends the interpolated `f / factor` and the original `f` with a
//!   linear ramp over the pairs between the correction dims of `beta_fast` and `beta_slow`
//!   rotations in `C` positions; cos and sin are multiplied by an attention factor
//!   (`attention_factor`, else from `mscale` / `mscale_all_dim`, else `0.1 · ln factor + 1`).
//! - per-frequency divisors (llama.cpp's `rope_freqs.weight` tensor of Llama 3.1 files): each
//!   inverse frequency divided by its divisor.
//!
//! The inverse frequencies are computed in f32, operation by operation as `transformers` does
//! on its float32 tensors; the parameters it computes in Python floats are f64 here.

use anygrad_core::{Error, Result};
use serde_json::Value;

use crate::gguf::GgufFile;

/// The longest context length accepted (2⁴⁰ positions, beyond any model).
const MAX_CONTEXT: u64 = 1 << 40;

/// How a model scales its RoPE frequencies (`rope_scaling` of a `config.json`,
/// `{arch}.rope.scaling.*` or `rope_freqs.weight` of a GGUF file).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum RopeScaling {
    /// No scaling (`default`, `none` or no `rope_scaling`).
    #[default]
    None,
    /// Positions divided by `factor`.
    Linear {
        /// The divisor, at least 1.
        factor: f64,
    },
    /// NTK-aware base rescaling for sequences longer than the original context.
    Dynamic {
        /// The scale factor, at least 1.
        factor: f64,
        /// The context the base is kept for.
        original_max_position_embeddings: usize,
    },
    /// Llama 3.1's per-frequency smoothing.
    Llama3 {
        /// The divisor of the low frequencies, at least 1.
        factor: f64,
        /// Wavelengths above `original / low_freq_factor` are scaled fully.
        low_freq_factor: f64,
        /// Wavelengths below `original / high_freq_factor` are kept.
        high_freq_factor: f64,
        /// The context the model was pretrained with.
        original_max_position_embeddings: usize,
    },
    /// YaRN: ramped interpolation and an attention factor on cos and sin.
    Yarn {
        /// The interpolation divisor, at least 1.
        factor: f64,
        /// The context the model was pretrained with.
        original_max_position_embeddings: usize,
        /// Rotations that bound the extrapolated (unscaled) pairs (default 32).
        beta_fast: f64,
        /// Rotations that bound the interpolated pairs (default 1).
        beta_slow: f64,
        /// The factor applied to cos and sin.
        attention_factor: f64,
        /// Whether the correction range is rounded out to whole pairs (default true).
        truncate: bool,
    },
    /// Per-frequency divisors, one per rotated pair (llama.cpp's `rope_freqs.weight`).
    FrequencyDivisors(Vec<f32>),
}

/// YaRN's magnitude scale of a factor: `0.1 · mscale · ln(scale) + 1`, 1 for scales up to 1.
fn yarn_magnitude(scale: f64, mscale: f64) -> f64 {
    if scale <= 1.0 {
        1.0
    } else {
        0.1 * mscale * scale.ln() + 1.0
    }
}

/// The unscaled inverse frequencies `1 / θ^(2i/d)` of `rotary_dim` `d`, in f32.
pub(crate) fn default_inverse_frequencies(rotary_dim: usize, theta: f64) -> Vec<f32> {
    (0..rotary_dim / 2)
        .map(|i| 1.0 / (theta as f32).powf((2 * i) as f32 / rotary_dim as f32))
        .collect()
}

fn scaling_error(context: &str, message: impl std::fmt::Display) -> Error {
    Error::format(context, format!("rope_scaling: {message}"))
}

/// A number of a `rope_scaling` object, `None` when absent or null.
fn json_number(object: &Value, key: &str, context: &str) -> Result<Option<f64>> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .map(Some)
            .ok_or_else(|| scaling_error(context, format!("`{key}` is {value}, not a number"))),
    }
}

/// A number of a `rope_scaling` object that must be there.
fn required_number(object: &Value, key: &str, kind: &str, context: &str) -> Result<f64> {
    json_number(object, key, context)?
        .ok_or_else(|| scaling_error(context, format!("type `{kind}` needs `{key}`")))
}

/// A context length: a positive whole number.
fn context_length(value: f64, key: &str, context: &str) -> Result<usize> {
    if value.is_finite() && value >= 1.0 && value.fract() == 0.0 && value <= MAX_CONTEXT as f64 {
        Ok(value as usize)
    } else {
        Err(scaling_error(
            context,
            format!("`{key}` is {value}; it must be a positive whole number"),
        ))
    }
}

impl RopeScaling {
    /// The scaling of a Hugging Face `rope_scaling` (or `rope_parameters`) object: its type in
    /// `rope_type` or `type`; `original_max_position_embeddings` defaults to
    /// `max_position_embeddings` (as `transformers` 5 does). Unknown types and bad factors are
    /// errors naming `context`.
    pub fn from_hugging_face(
        value: &Value,
        max_position_embeddings: usize,
        context: &str,
    ) -> Result<RopeScaling> {
        if value.is_null() {
            return Ok(RopeScaling::None);
        }
        if !value.is_object() {
            return Err(scaling_error(context, format!("{value} is not an object")));
        }
        let kind = match value.get("rope_type").or_else(|| value.get("type")) {
            None | Some(Value::Null) => "default",
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(scaling_error(
                    context,
                    format!("type {other} is not a string"),
                ))
            }
        };
        let original = match json_number(value, "original_max_position_embeddings", context)? {
            Some(v) => context_length(v, "original_max_position_embeddings", context)?,
            None => max_position_embeddings,
        };
        let scaling = match kind {
            "default" | "none" => RopeScaling::None,
            "linear" => RopeScaling::Linear {
                factor: required_number(value, "factor", kind, context)?,
            },
            "dynamic" => RopeScaling::Dynamic {
                factor: required_number(value, "factor", kind, context)?,
                original_max_position_embeddings: original,
            },
            "llama3" => RopeScaling::Llama3 {
                factor: required_number(value, "factor", kind, context)?,
                low_freq_factor: required_number(value, "low_freq_factor", kind, context)?,
                high_freq_factor: required_number(value, "high_freq_factor", kind, context)?,
                original_max_position_embeddings: original,
            },
            "yarn" => {
                let factor = required_number(value, "factor", kind, context)?;
                // As in `transformers`, a zero or absent beta takes the default.
                let beta_fast = json_number(value, "beta_fast", context)?
                    .filter(|&b| b != 0.0)
                    .unwrap_or(32.0);
                let beta_slow = json_number(value, "beta_slow", context)?
                    .filter(|&b| b != 0.0)
                    .unwrap_or(1.0);
                let mscale = json_number(value, "mscale", context)?.filter(|&m| m != 0.0);
                let mscale_all_dim =
                    json_number(value, "mscale_all_dim", context)?.filter(|&m| m != 0.0);
                let attention_factor = match json_number(value, "attention_factor", context)? {
                    Some(given) => given,
                    None => match (mscale, mscale_all_dim) {
                        (Some(m), Some(all)) => {
                            yarn_magnitude(factor, m) / yarn_magnitude(factor, all)
                        }
                        _ => yarn_magnitude(factor, 1.0),
                    },
                };
                let truncate = match value.get("truncate") {
                    None | Some(Value::Null) => true,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => {
                        return Err(scaling_error(
                            context,
                            format!("`truncate` is {other}, not a boolean"),
                        ))
                    }
                };
                RopeScaling::Yarn {
                    factor,
                    original_max_position_embeddings: original,
                    beta_fast,
                    beta_slow,
                    attention_factor,
                    truncate,
                }
            }
            other => {
                return Err(scaling_error(
                    context,
                    format!("type `{other}` is not supported (default, linear, dynamic, llama3 and yarn are)"),
                ))
            }
        };
        Ok(scaling)
    }

    /// The scaling of a GGUF file's `{arch}.rope.scaling.type` (`none`, `linear`, `yarn`),
    /// `.factor` (or the older `{arch}.rope.scale_linear`), `.original_context_length`
    /// (default `context_length`), `.attn_factor` (default 1; YaRN's attention factor is
    /// `attn_factor · (0.1 · ln factor + 1)` as in llama.cpp), `.yarn_beta_fast` /
    /// `.yarn_beta_slow`, and the per-frequency divisors of a `rope_freqs.weight` tensor
    /// (`rotary_dim / 2` positive values).
    pub fn from_gguf(
        file: &GgufFile,
        arch: &str,
        context_length: usize,
        rotary_dim: usize,
    ) -> Result<RopeScaling> {
        let context = file.context();
        let key = |name: &str| format!("{arch}.rope.{name}");
        let number = |name: &str| -> Result<Option<f64>> {
            match file.metadata_value(&key(name)) {
                None => Ok(None),
                Some(_) => file.metadata_f64(&key(name)).map(Some),
            }
        };
        let kind = match file.metadata_value(&key("scaling.type")) {
            None => None,
            Some(value) => Some(value.as_str().ok_or_else(|| {
                scaling_error(
                    context,
                    format!("`{}` holds a {}", key("scaling.type"), value.type_name()),
                )
            })?),
        };
        let factor = match number("scaling.factor")? {
            Some(factor) => Some(factor),
            None => number("scale_linear")?,
        };
        let needs_factor = |kind: &str| {
            factor.ok_or_else(|| {
                scaling_error(
                    context,
                    format!("type `{kind}` needs `{}`", key("scaling.factor")),
                )
            })
        };
        let original = match file.metadata_value(&key("scaling.original_context_length")) {
            Some(_) => {
                let value = file.metadata_u64(&key("scaling.original_context_length"))?;
                context_length_of(value, context)?
            }
            None => context_length,
        };
        let scaling = match kind {
            None if factor.is_some_and(|f| f != 1.0) => RopeScaling::Linear {
                factor: needs_factor("linear")?,
            },
            None | Some("none") => RopeScaling::None,
            Some("linear") => RopeScaling::Linear {
                factor: needs_factor("linear")?,
            },
            Some("yarn") => {
                let factor = needs_factor("yarn")?;
                let attn_factor = number("scaling.attn_factor")?.unwrap_or(1.0);
                RopeScaling::Yarn {
                    factor,
                    original_max_position_embeddings: original,
                    beta_fast: number("scaling.yarn_beta_fast")?.unwrap_or(32.0),
                    beta_slow: number("scaling.yarn_beta_slow")?.unwrap_or(1.0),
                    attention_factor: attn_factor * yarn_magnitude(factor, 1.0),
                    truncate: true,
                }
            }
            Some(other) => {
                return Err(scaling_error(
                    context,
                    format!(
                        "`{}` `{other}` is not supported (none, linear and yarn are)",
                        key("scaling.type")
                    ),
                ))
            }
        };
        if file.tensor_info("rope_freqs.weight").is_none() {
            return Ok(scaling);
        }
        if scaling != RopeScaling::None {
            return Err(scaling_error(
                context,
                "`rope_freqs.weight` together with a scaling type is not supported",
            ));
        }
        let (divisors, _) = file.tensor_f32("rope_freqs.weight")?;
        if divisors.len() != rotary_dim / 2 {
            return Err(scaling_error(
                context,
                format!(
                    "`rope_freqs.weight` has {} values; the rotated head size {rotary_dim} needs {}",
                    divisors.len(),
                    rotary_dim / 2
                ),
            ));
        }
        Ok(RopeScaling::FrequencyDivisors(divisors))
    }

    /// Check the parameters: factors at least 1 and finite, `high_freq_factor` above a
    /// positive `low_freq_factor`, positive betas with `beta_fast` above `beta_slow`, a
    /// non-negative attention factor, positive per-frequency divisors, one per rotated pair.
    pub fn validate(&self, rotary_dim: usize, context: &str) -> Result<()> {
        let factor_ok = |name: &str, factor: f64| -> Result<()> {
            if factor.is_finite() && factor >= 1.0 {
                Ok(())
            } else {
                Err(scaling_error(
                    context,
                    format!("{name} is {factor}; it must be a finite number of at least 1"),
                ))
            }
        };
        match self {
            RopeScaling::None => Ok(()),
            RopeScaling::Linear { factor } | RopeScaling::Dynamic { factor, .. } => {
                factor_ok("factor", *factor)
            }
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                ..
            } => {
                factor_ok("factor", *factor)?;
                if !(low_freq_factor.is_finite()
                    && high_freq_factor.is_finite()
                    && *low_freq_factor > 0.0
                    && high_freq_factor > low_freq_factor)
                {
                    return Err(scaling_error(
                        context,
                        format!("low_freq_factor {low_freq_factor} and high_freq_factor {high_freq_factor}: they must be positive and high above low"),
                    ));
                }
                Ok(())
            }
            RopeScaling::Yarn {
                factor,
                beta_fast,
                beta_slow,
                attention_factor,
                ..
            } => {
                factor_ok("factor", *factor)?;
                if !(beta_fast.is_finite()
                    && beta_slow.is_finite()
                    && *beta_slow > 0.0
                    && beta_fast > beta_slow)
                {
                    return Err(scaling_error(
                        context,
                        format!("beta_fast {beta_fast} and beta_slow {beta_slow}: they must be positive and beta_fast above beta_slow"),
                    ));
                }
                if !(attention_factor.is_finite() && *attention_factor >= 0.0) {
                    return Err(scaling_error(
                        context,
                        format!("attention factor {attention_factor} must be non-negative"),
                    ));
                }
                Ok(())
            }
            RopeScaling::FrequencyDivisors(divisors) => {
                if divisors.len() != rotary_dim / 2 {
                    return Err(scaling_error(
                        context,
                        format!(
                            "{} frequency divisors for {} rotated pairs",
                            divisors.len(),
                            rotary_dim / 2
                        ),
                    ));
                }
                match divisors.iter().find(|d| !(d.is_finite() && **d > 0.0)) {
                    Some(bad) => Err(scaling_error(
                        context,
                        format!("frequency divisor {bad} must be positive"),
                    )),
                    None => Ok(()),
                }
            }
        }
    }

    /// The factor cos and sin are multiplied by (YaRN's; 1 for the other types).
    pub fn attention_factor(&self) -> f64 {
        match self {
            RopeScaling::Yarn {
                attention_factor, ..
            } => *attention_factor,
            _ => 1.0,
        }
    }

    /// The inverse frequencies of the `rotary_dim / 2` rotated pairs for base `theta`, for a
    /// call whose last position is `sequence_length - 1` (only `dynamic` depends on it).
    pub fn inverse_frequencies(
        &self,
        rotary_dim: usize,
        theta: f64,
        sequence_length: usize,
    ) -> Vec<f32> {
        match self {
            RopeScaling::None => default_inverse_frequencies(rotary_dim, theta),
            RopeScaling::Linear { factor } => default_inverse_frequencies(rotary_dim, theta)
                .into_iter()
                .map(|f| f / *factor as f32)
                .collect(),
            RopeScaling::Dynamic {
                factor,
                original_max_position_embeddings,
            } => {
                let original = *original_max_position_embeddings as f64;
                let length = (sequence_length as f64).max(original);
                let dim = rotary_dim as f64;
                let base =
                    theta * (factor * length / original - (factor - 1.0)).powf(dim / (dim - 2.0));
                default_inverse_frequencies(rotary_dim, base)
            }
            RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings,
            } => {
                let original = *original_max_position_embeddings as f64;
                let low_wavelength = (original / low_freq_factor) as f32;
                let high_wavelength = (original / high_freq_factor) as f32;
                let (factor32, low32) = (*factor as f32, *low_freq_factor as f32);
                let span = (high_freq_factor - low_freq_factor) as f32;
                default_inverse_frequencies(rotary_dim, theta)
                    .into_iter()
                    .map(|f| {
                        let wavelength = (1.0 / f) * (2.0 * std::f64::consts::PI) as f32;
                        if wavelength > low_wavelength {
                            f / factor32
                        } else if wavelength < high_wavelength {
                            f
                        } else {
                            let smooth = ((1.0 / wavelength) * original as f32 - low32) / span;
                            (1.0 - smooth) * f / factor32 + smooth * f
                        }
                    })
                    .collect()
            }
            RopeScaling::Yarn {
                factor,
                original_max_position_embeddings,
                beta_fast,
                beta_slow,
                truncate,
                ..
            } => {
                let dim = rotary_dim as f64;
                let original = *original_max_position_embeddings as f64;
                // The pair index at which `rotations` full turns fit in the original context.
                let correction = |rotations: f64| {
                    dim * (original / (rotations * 2.0 * std::f64::consts::PI)).ln()
                        / (2.0 * theta.ln())
                };
                let (mut low, mut high) = (correction(*beta_fast), correction(*beta_slow));
                if *truncate {
                    low = low.floor();
                    high = high.ceil();
                }
                let low = low.max(0.0);
                let mut high = high.min(dim - 1.0);
                if low == high {
                    high += 0.001;
                }
                let (low32, span32) = (low as f32, (high - low) as f32);
                let factor32 = *factor as f32;
                (0..rotary_dim / 2)
                    .map(|i| {
                        let position_frequency =
                            (theta as f32).powf((2 * i) as f32 / rotary_dim as f32);
                        let extrapolated = 1.0 / position_frequency;
                        let interpolated = 1.0 / (factor32 * position_frequency);
                        let ramp = ((i as f32 - low32) / span32).clamp(0.0, 1.0);
                        let keep = 1.0 - ramp;
                        interpolated * (1.0 - keep) + extrapolated * keep
                    })
                    .collect()
            }
            RopeScaling::FrequencyDivisors(divisors) => {
                default_inverse_frequencies(rotary_dim, theta)
                    .into_iter()
                    .zip(divisors)
                    .map(|(f, d)| f / d)
                    .collect()
            }
        }
    }
}

fn context_length_of(value: u64, context: &str) -> Result<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v > 0 && value <= MAX_CONTEXT)
        .ok_or_else(|| {
            scaling_error(
                context,
                format!("original context length {value} must be positive"),
            )
        })
}
