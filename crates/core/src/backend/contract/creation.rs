//! The backend contract's `Creation` family: new storages from nothing but a size and a dtype:
//! constant fills and ranges. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::dtype::DType;
use crate::error::Result;

/// New storages from nothing but a size and a dtype: constant fills and ranges.
pub(crate) trait Creation: BackendStorage {
    /// `numel` elements of `dtype`, all equal to `value` (converted like `as`).
    fn full(device: &Self::Device, numel: usize, dtype: DType, value: f64) -> Result<Self>;

    /// `start + i * step` for `i in 0..numel`, computed in f64 and converted to `dtype`
    /// (both backends give the same numbers).
    fn arange(
        device: &Self::Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Self>;
}
