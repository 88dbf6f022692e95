//! Rotary position embeddings (RoPE) in Hugging Face's "rotate half" layout: the head's two
//! halves are the pairs rotated together, `x · cos + rotate_half(x) · sin` with
//! `rotate_half(x) = [-x₂, x₁]` and angle `p · θ^(-2i/d)` for position `p` and pair `i`. The
//! angles are computed on the host in f32 as `transformers` does, only for the positions of
//! each call (no table of the whole context is kept).

use anygrad_core::{Device, Error, Result, Tensor};

/// The angles' inverse frequencies of a head size and base: `1 / θ^(2i/d)`, `i < d/2`, in f32
/// as `transformers`' default RoPE computes them.
pub fn inverse_frequencies(head_dim: usize, theta: f64) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| 1.0 / (theta as f32).powf((2 * i) as f32 / head_dim as f32))
        .collect()
}

/// `(cos, sin)`, each `[positions, head_dim]` (the half-size table repeated twice, as
/// `transformers`' `cat((freqs, freqs), -1)`), for positions `start..start + count`.
pub fn cos_sin(
    head_dim: usize,
    theta: f64,
    start: usize,
    count: usize,
    device: &Device,
) -> Result<(Tensor, Tensor)> {
    let inverse = inverse_frequencies(head_dim, theta);
    let mut cos = Vec::with_capacity(count * head_dim);
    let mut sin = Vec::with_capacity(count * head_dim);
    for position in start..start + count {
        for _ in 0..2 {
            for &frequency in &inverse {
                let angle = position as f32 * frequency;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
    }
    Ok((
        Tensor::from_vec(cos, &[count, head_dim], device)?,
        Tensor::from_vec(sin, &[count, head_dim], device)?,
    ))
}

/// `x · cos + rotate_half(x) · sin` for `x` `[.., positions, head_dim]` and `cos`, `sin`
/// `[positions, head_dim]`.
pub fn apply_rotary(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let head_dim = x.shape().last().copied().unwrap_or(0);
    if head_dim == 0 || !head_dim.is_multiple_of(2) {
        return Err(Error::invalid(
            "apply_rotary",
            format!("x {:?}: the last dim must be an even head size", x.shape()),
        ));
    }
    let half = head_dim / 2;
    let first = x.narrow(-1, 0, half)?;
    let second = x.narrow(-1, half, half)?;
    let rotated = Tensor::cat(&[&second.neg()?, &first], -1)?;
    x.mul(cos)?.add(&rotated.mul(sin)?)
}
