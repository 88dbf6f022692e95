//! The backend contract's `BatchNormalization` family: batch normalization's one-pass statistics
//! and gradients. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// Batch normalization's one-pass statistics and gradients.
pub(crate) trait BatchNormalization: BackendStorage {
    /// Batch-norm statistics in one pass: for `self` of shape `[n, c, ...]` (rank >= 2, F32
    /// or F16), a contiguous F32 `[2, c]`: row 0 the mean of each channel over every other dim,
    /// row 1 its biased variance (computed in f32 or wider, without an f32 copy of an F16
    /// input). An empty channel gives NaN, as `mean` does.
    fn batch_norm_stats(&self, layout: &Layout) -> Result<Self>;

    /// Batch norm's backward sums in one pass: `self` the output gradient `g` and `input` the
    /// forward's input (same shape `[n, c, ...]`, same dtype), `mean` the F32 `[c]` batch
    /// mean; a contiguous F32 `[2, c]`: row 0 `sum(g)`, row 1 `sum(g * (input - mean))` per
    /// channel over every other dim.
    fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        mean: &Self,
        mean_layout: &Layout,
    ) -> Result<Self>;

    /// Batch norm's input gradient in one pass: `self` the output gradient `g` and `input` the
    /// forward's input (same shape `[n, c, ...]`, same dtype, F32 or F16), `coefficients` an
    /// F32 `[4, c]` whose rows are per channel the mean μ, the scale k, the mean gradient ḡ
    /// and the slope s; a contiguous `k·(g − ḡ − (x − μ)·s)` in the input's dtype, computed in
    /// f32 or wider.
    fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &Self,
        input_layout: &Layout,
        coefficients: &Self,
        coefficients_layout: &Layout,
    ) -> Result<Self>;
}
