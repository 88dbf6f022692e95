//! Rotary position embeddings (RoPE) in Hugging Face's "rotate half" layout: the rotated
//! part's two halves are the pairs rotated together, `x · cos + rotate_half(x) · sin` with
//! `rotate_half(x) = [-x₂, x₁]` and angle `p · f_i` for position `p` and pair `i`, where
//! `f_i = θ^(-2i/d)` unless the model scales its frequencies ([`RopeScaling`]). With a partial
//! rotary factor only the first `rotary_dim` values of each head are rotated; the rest pass
//! through. The angles are computed on the host in f32 as `transformers` does, only for the
//! positions of each call (no table of the whole context is kept).

use anygrad_core::{Device, Error, Result, Tensor};

use super::config::LlamaConfig;
use super::rope_scaling::{default_inverse_frequencies, RopeScaling};

/// The angles' inverse frequencies of a head size and base: `1 / θ^(2i/d)`, `i < d/2`, in f32
/// as `transformers`' default RoPE computes them.
pub fn inverse_frequencies(head_dim: usize, theta: f64) -> Vec<f32> {
    default_inverse_frequencies(head_dim, theta)
}

/// `(cos, sin)`, each `[positions, head_dim]` (the half-size table repeated twice, as
/// `transformers`' `cat((freqs, freqs), -1)`), for positions `start..start + count`, without
/// scaling.
pub fn cos_sin(
    head_dim: usize,
    theta: f64,
    start: usize,
    count: usize,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    RotaryEmbedding::new(head_dim, theta, RopeScaling::None).cos_sin(start, count, device)
}

/// A model's rotary embedding: the rotated size of each head, the base and the scaling.
#[derive(Clone, Debug, PartialEq)]
pub struct RotaryEmbedding {
    /// The leading values of each head that are rotated (even; the head size unless the
    /// model has a partial rotary factor).
    pub rotary_dim: usize,
    /// The base `θ`.
    pub theta: f64,
    /// How the frequencies are scaled.
    pub scaling: RopeScaling,
}

impl RotaryEmbedding {
    /// The embedding rotating `rotary_dim` values per head with base `theta` and `scaling`.
    pub fn new(rotary_dim: usize, theta: f64, scaling: RopeScaling) -> RotaryEmbedding {
        RotaryEmbedding {
            rotary_dim,
            theta,
            scaling,
        }
    }

    /// The embedding of a model's configuration.
    pub fn from_config(config: &LlamaConfig) -> RotaryEmbedding {
        RotaryEmbedding::new(
            config.rotary_dim,
            config.rope_theta,
            config.rope_scaling.clone(),
        )
    }

    /// The inverse frequencies of the rotated pairs for a call ending at position
    /// `sequence_length - 1`.
    pub fn inverse_frequencies(&self, sequence_length: usize) -> Vec<f32> {
        self.scaling
            .inverse_frequencies(self.rotary_dim, self.theta, sequence_length)
    }

    /// `(cos, sin)`, each `[count, rotary_dim]`, for positions `start..start + count`, times
    /// the scaling's attention factor.
    pub fn cos_sin(&self, start: usize, count: usize, device: &Device) -> Result<(Tensor, Tensor)> {
        let inverse = self.inverse_frequencies(start + count);
        let scale = self.scaling.attention_factor() as f32;
        let width = 2 * inverse.len();
        let mut cos = Vec::with_capacity(count * width);
        let mut sin = Vec::with_capacity(count * width);
        for position in start..start + count {
            for _ in 0..2 {
                for &frequency in &inverse {
                    let angle = position as f32 * frequency;
                    if scale == 1.0 {
                        cos.push(angle.cos());
                        sin.push(angle.sin());
                    } else {
                        cos.push(angle.cos() * scale);
                        sin.push(angle.sin() * scale);
                    }
                }
            }
        }
        Ok((
            Tensor::from_vec(cos, &[count, width], device)?,
            Tensor::from_vec(sin, &[count, width], device)?,
        ))
    }
}

/// `x · cos + rotate_half(x) · sin` for `x` `[.., positions, head_dim]` and `cos`, `sin`
/// `[positions, rotary_dim]`: the first `rotary_dim` values of each head are rotated, the
/// others pass through (the core's `Tensor::rotary_embedding`: one GPU kernel in inference,
/// differentiable ops when a gradient is recorded).
pub fn apply_rotary(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let head_dim = x.shape().last().copied().unwrap_or(0);
    let rotary_dim = cos.shape().last().copied().unwrap_or(0);
    if rotary_dim == 0 || !rotary_dim.is_multiple_of(2) || rotary_dim > head_dim {
        return Err(Error::invalid(
            "apply_rotary",
            format!(
                "x {:?}, cos {:?}: the rotated size must be even and at most the head size",
                x.shape(),
                cos.shape()
            ),
        ));
    }
    x.rotary_embedding(cos, sin)
}
