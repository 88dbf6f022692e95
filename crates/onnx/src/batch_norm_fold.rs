//! An inference-form BatchNormalization after a convolution folded into the per-channel
//! scale and shift of the fused convolution (`conv_fusion.rs`):
//! `scale = γ / √(σ² + ε)`, `shift = β + (bias − μ) · scale` (the convolution's bias, 0
//! without one). The fold is kept across runs while it stays valid — the same source tensors
//! (ids), no tensor written in place since (`mutation_epoch`: an optimizer step or
//! `load_safetensors` changes the initializers in place), the same ε — so an inference loop
//! folds each batch norm once instead of running five small kernels per run, as the native
//! `BatchNorm`'s fold cache does. Where gradients are recorded through the parameters
//! (fine-tuning) nothing is kept: each run needs its own graph.

use std::sync::Mutex;

use anygrad_core::{is_grad_enabled, mutation_epoch, Result, Tensor, TensorId};

/// A batch norm's parameters and the convolution bias before it, each `[channels]`.
pub(crate) struct BatchNormSources<'a> {
    /// γ, the scale.
    pub gamma: &'a Tensor,
    /// β, the bias.
    pub beta: &'a Tensor,
    /// μ, the running mean.
    pub mean: &'a Tensor,
    /// σ², the running variance.
    pub variance: &'a Tensor,
    /// The convolution's bias, if it has one.
    pub conv_bias: Option<&'a Tensor>,
    /// ε.
    pub epsilon: f64,
}

/// A fold and what it was made from.
struct Folded {
    sources: Vec<TensorId>,
    epoch: u64,
    epsilon: u64,
    scale: Tensor,
    shift: Tensor,
}

/// The last fold of one chain's batch norm, kept while valid.
#[derive(Default)]
pub(crate) struct FoldCache {
    kept: Mutex<Option<Folded>>,
}

impl FoldCache {
    /// `(scale, shift)` of `sources`, from the cache where it is still valid.
    pub fn scale_shift(&self, sources: &BatchNormSources) -> Result<(Tensor, Tensor)> {
        let tensors: Vec<&Tensor> = [sources.gamma, sources.beta, sources.mean, sources.variance]
            .into_iter()
            .chain(sources.conv_bias)
            .collect();
        let cacheable = !is_grad_enabled() || tensors.iter().all(|t| !t.requires_grad());
        if !cacheable {
            return fold(sources);
        }
        let ids: Vec<TensorId> = tensors.iter().map(|t| t.id()).collect();
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(folded) = kept.as_ref() {
            if folded.sources == ids
                && folded.epoch == mutation_epoch()
                && folded.epsilon == sources.epsilon.to_bits()
            {
                return Ok((folded.scale.clone(), folded.shift.clone()));
            }
        }
        let epoch = mutation_epoch();
        let (scale, shift) = fold(sources)?;
        *kept = Some(Folded {
            sources: ids,
            epoch,
            epsilon: sources.epsilon.to_bits(),
            scale: scale.clone(),
            shift: shift.clone(),
        });
        Ok((scale, shift))
    }
}

/// The fold, as tensor ops (autograd records them where the sources require gradients).
fn fold(sources: &BatchNormSources) -> Result<(Tensor, Tensor)> {
    let scale = sources
        .variance
        .add_scalar(sources.epsilon)?
        .rsqrt()?
        .mul(sources.gamma)?;
    let shift = match sources.conv_bias {
        Some(bias) => bias.sub(sources.mean)?.mul(&scale)?.add(sources.beta)?,
        None => sources.beta.sub(&sources.mean.mul(&scale)?)?,
    };
    Ok((scale, shift))
}
