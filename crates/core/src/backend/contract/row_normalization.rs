//! The backend contract's `RowNormalization` family: softmax and log-softmax (with their
//! input gradients), layer normalization and RMS normalization over the last dim, row by row,
//! and the rotary position embedding of rows (each row rotated by its position's angles). The
//! rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// The optional `(weight, bias)` of `RowNormalization::layer_norm_last`, each with its view.
pub(crate) type Affine<'a, S> = Option<((&'a S, &'a Layout), (&'a S, &'a Layout))>;

/// Softmax, layer normalization and RMS normalization over the last dim, row by row.
pub(crate) trait RowNormalization: BackendStorage {
    /// Softmax over the view's last dim (`exp(x - max) / sum` per row, computed in f32 for
    /// F16); output contiguous, the view's shape. Float dtypes only. With `safe` the sum is
    /// clamped below at 0.5: a row of only `-inf` gives zeros rather than NaN (every other
    /// row's sum is at least 1), as masked attention needs.
    fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<Self>;

    /// Log-softmax over the view's last dim (`x - max - log(sum(exp(x - max)))` per row,
    /// computed in f32 for F16); output contiguous, the view's shape. Float dtypes only. A
    /// row of only `-inf` gives NaN, as PyTorch's.
    fn log_softmax_last(&self, layout: &Layout) -> Result<Self>;

    /// The input gradient of `softmax_last` (`log` false) or `log_softmax_last` (`log` true)
    /// from this storage, the forward's output, and the output gradient `grad` (the same
    /// shape and dtype): `y * (g - sum(g * y))` or `g - exp(y) * sum(g)` per row; output
    /// contiguous, the view's shape. Float dtypes only.
    fn softmax_last_backward(
        &self,
        layout: &Layout,
        grad: (&Self, &Layout),
        log: bool,
    ) -> Result<Self>;

    /// Layer normalization over the view's last dim: `(x - mean) * rsqrt(var + eps)` per row
    /// (biased variance), then `* weight + bias` where `affine` gives them (`[length]` views
    /// of this dtype); output contiguous, the view's shape. Float dtypes only.
    fn layer_norm_last(&self, layout: &Layout, affine: Affine<'_, Self>, eps: f64) -> Result<Self>;

    /// RMS normalization over the view's last dim: `x * rsqrt(mean(x²) + eps)` per row, then
    /// `* weight` where given (a `[length]` view of this dtype); output contiguous, the view's
    /// shape, computed in f32 for F16. Float dtypes only.
    fn rms_norm_last(
        &self,
        layout: &Layout,
        weight: Option<(&Self, &Layout)>,
        eps: f64,
    ) -> Result<Self>;

    /// Rotary position embedding in the "rotate half" layout over the view's last dim: the
    /// view is `[.., positions, head_dim]`, `cos` and `sin` are `[positions, rotary_dim]`
    /// views of this dtype (`rotary_dim` even, at most `head_dim`; `h = rotary_dim / 2`). A
    /// row at position `p` (its second-last index) becomes, for `i < h`,
    /// `x[i] * cos[p, i] + (-x[i + h]) * sin[p, i]`, for `h <= i < rotary_dim`,
    /// `x[i] * cos[p, i] + x[i - h] * sin[p, i]`, and `x[i]` past `rotary_dim`. Output
    /// contiguous, the view's shape. Float dtypes only.
    fn rotary_last(
        &self,
        layout: &Layout,
        cos: (&Self, &Layout),
        sin: (&Self, &Layout),
    ) -> Result<Self>;
}
