//! The backend contract's `Sorting` family: stable sorting along one dim. The rules every primitive
//! keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// Stable sorting along one dim.
pub(crate) trait Sorting: BackendStorage {
    /// The positions along `dim` that sort each row of the view, stable (equal values keep
    /// their order), ascending or `descending`; NaN counts as larger than every number and
    /// `-0.0` equals `0.0`. Output: contiguous `I32` of the view's shape (`sort`, `topk`
    /// gather the values with these).
    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Self>;
}
