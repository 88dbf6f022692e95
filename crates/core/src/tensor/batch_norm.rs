//! Batch norm's per-channel reductions as tensor ops, each one pass over the activation (one
//! GPU kernel reading F16 directly): the statistics of the forward and the two sums of the
//! backward. `nn`'s training-mode batch norm is built on them. Neither is recorded by
//! autograd: they serve a batch norm that is one autograd node with its own backward.

use super::Tensor;
use crate::error::Result;

impl Tensor {
    /// Per-channel mean and biased variance of `[n, c, ...]` (channels in dim 1, F32 or F16),
    /// as two F32 `[c]` tensors, in one pass (like `torch.batch_norm_stats`, which returns the
    /// inverse standard deviation instead). Not differentiable.
    pub fn batch_norm_stats(&self) -> Result<(Tensor, Tensor)> {
        split_rows(self.batch_norm_stats_rows()?)
    }

    /// [`Tensor::batch_norm_stats`] as one F32 `[2, c]` tensor: row 0 the mean, row 1 the
    /// biased variance (for a kernel that reads both from one buffer).
    pub fn batch_norm_stats_rows(&self) -> Result<Tensor> {
        let storage = self.storage().batch_norm_stats(self.layout())?;
        Ok(Tensor::from_storage(storage, &[2, self.dim(1)?], None))
    }

    /// Batch norm's backward sums per channel: `Σ g` and `Σ g · (input − mean)` over every dim
    /// but 1, where `self` is the output gradient `g` (the input's shape and dtype) and `mean`
    /// the F32 `[c]` batch mean; two F32 `[c]` tensors from one pass. Not differentiable.
    pub fn batch_norm_backward_sums(
        &self,
        input: &Tensor,
        mean: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        split_rows(self.batch_norm_backward_sums_rows(input, mean)?)
    }

    /// [`Tensor::batch_norm_backward_sums`] as one F32 `[2, c]` tensor: row 0 `Σ g`, row 1
    /// `Σ g · (input − mean)`.
    pub fn batch_norm_backward_sums_rows(&self, input: &Tensor, mean: &Tensor) -> Result<Tensor> {
        self.same_device("batch_norm_backward_sums", input)?;
        self.same_device("batch_norm_backward_sums", mean)?;
        let storage = self.storage().batch_norm_backward_sums(
            self.layout(),
            &input.storage(),
            input.layout(),
            &mean.storage(),
            mean.layout(),
        )?;
        Ok(Tensor::from_storage(storage, &[2, self.dim(1)?], None))
    }
}

impl Tensor {
    /// Batch norm's input gradient in one pass: `self` is the output gradient `g`, `input` the
    /// forward's input (same shape `[n, c, ...]` and dtype, F32 or F16), `coefficients` an F32
    /// `[4, c]` with rows mean μ, scale k, mean gradient ḡ and slope s per channel; returns
    /// `k·(g − ḡ − (input − μ)·s)` in the input's dtype, computed in f32 (an F16 pair is read
    /// as it is, without f32 copies). Not differentiable.
    pub fn batch_norm_backward_input(
        &self,
        input: &Tensor,
        coefficients: &Tensor,
    ) -> Result<Tensor> {
        self.same_device("batch_norm_backward_input", input)?;
        self.same_device("batch_norm_backward_input", coefficients)?;
        let storage = self.storage().batch_norm_backward_input(
            self.layout(),
            &input.storage(),
            input.layout(),
            &coefficients.storage(),
            coefficients.layout(),
        )?;
        Ok(Tensor::from_storage(storage, self.shape(), None))
    }
}

/// Rows 0 and 1 of a `[2, c]` tensor.
fn split_rows(pair: Tensor) -> Result<(Tensor, Tensor)> {
    let c = pair.shape()[1];
    Ok((
        pair.narrow(0, 0, 1)?.reshape([c])?,
        pair.narrow(0, 1, 1)?.reshape([c])?,
    ))
}
