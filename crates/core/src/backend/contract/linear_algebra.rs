//! The backend contract's `LinearAlgebra` family: matrix products. The rules every primitive keeps
//! are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// Matrix products.
pub(crate) trait LinearAlgebra: BackendStorage {
    /// Batched matrix product: layouts are rank 3, `[batch, m, k]` and `[batch, k, n]` (a
    /// batch stride may be 0); output `[batch, m, n]`; one dtype (checked by the dispatcher).
    fn matmul(&self, layout: &Layout, rhs: &Self, rhs_layout: &Layout) -> Result<Self>;
}
