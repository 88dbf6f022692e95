//! The backend contract's `Indexing` family: reads and sums at integer indices along one dim. The
//! rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// Reads and sums at integer indices along one dim.
pub(crate) trait Indexing: BackendStorage {
    /// Entries of `dim` picked by `indices` (an integer storage of any rank, read flat): the
    /// output shape is the input's with `dim` replaced by the number of indices.
    /// Out-of-range indices are `Error::InvalidArgument`, never a panic or a wild read.
    fn index_select(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// [`Indexing::index_select`] where a signed index in `[-size, 0)` counts from the end of
    /// `dim` (Python's and NumPy's rule for `x[idx]`); other indices are checked as there.
    fn index_select_wrapping(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// `out[i][j][k] = self[i][indices[i][j][k]][k]` for `dim = 1` (likewise for any dim): the
    /// output has the indices' shape. Out-of-range indices are `Error::InvalidArgument`.
    fn gather(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// Classification's pick: for `[n, c]` scores (`self`, a contiguous view at any offset)
    /// and `n` integer class indices `target`, a contiguous `[2, n]` of this dtype whose row 0
    /// is `w[t_i] · self[i, t_i]` and row 1 is `w[t_i]` (`w`: the `[c]` class weights of this
    /// dtype, or 1), both 0 where `t_i == ignore`. Other indices outside `[0, c)` are
    /// `Error::InvalidArgument` (on a GPU at the next readback). Products in f32 (f64 for F64).
    fn class_pick(
        &self,
        layout: &Layout,
        target: (&Self, &Layout),
        weight: Option<(&Self, &Layout)>,
        ignore: Option<i64>,
    ) -> Result<Self>;

    /// The gradient of [`Indexing::class_pick`]'s row 0 with respect to the scores: for the
    /// `[n]` gradient `self` (a contiguous view), a contiguous `[n, classes]` of its dtype
    /// holding `w[t_i] · self[i]` at `(i, t_i)` and 0 elsewhere (and on ignored rows).
    fn class_pick_backward(
        &self,
        layout: &Layout,
        target: (&Self, &Layout),
        weight: Option<(&Self, &Layout)>,
        ignore: Option<i64>,
        classes: usize,
    ) -> Result<Self>;

    /// A copy of `self` (the base) with `src` added at `indices` along `dim`:
    /// `out[i][indices[i][j][k]][k] += src[i][j][k]` for `dim = 1`; the output has the base's
    /// shape, `src` the base's dtype. Out-of-range indices are `Error::InvalidArgument`, never
    /// a wild write.
    fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;

    /// `index_add` (PyTorch's `index_add`): a copy of `self` (the base) with `src` added at
    /// the 1-D integer `indices` along `dim`: `out[.., indices[j], ..] += src[.., j, ..]`.
    /// `src` has the base's shape with `dim` replaced by the number of indices, and the base's
    /// dtype; repeated indices sum up (floats in f32). Rows never indexed keep the base's
    /// value. Out-of-range or negative indices are `Error::InvalidArgument`, never a wild
    /// write. The GPU's sum is deterministic (same bits every run, no float atomics).
    fn index_add(
        &self,
        layout: &Layout,
        indices: &Self,
        indices_layout: &Layout,
        src: &Self,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Self>;
}
