//! The backend contract's `Scan` family: running sums along one dim (`cumsum`). The rules every
//! primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;

/// Prefix operations along one dim.
pub(crate) trait Scan: BackendStorage {
    /// The inclusive running sum of the view along `dim` (in range): `out[.., i, ..] =
    /// sum(x[.., 0..=i, ..])`, contiguous, the view's shape and dtype. Floats sum in f32 or
    /// wider (F16 in f32, rounded once per element); I32 and U32 wrap like two's complement.
    /// Other dtypes are `Error::Unsupported` (the tensor layer widens them first).
    fn cumsum(&self, layout: &Layout, dim: usize) -> Result<Self>;
}
