//! The backend contract's `Reduction` family: reductions over dims. The rules every primitive keeps
//! are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::ReduceOp;

/// Reductions over dims.
pub(crate) trait Reduction: BackendStorage {
    /// Reduction over `dims` (sorted, unique, in range): the output has the input's shape
    /// with each reduced dim set to 1 (keepdim). Arg reductions take exactly one dim and
    /// return `I32`. Reducing an empty dim is an error except for `Sum` (zeros).
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self>;
}
