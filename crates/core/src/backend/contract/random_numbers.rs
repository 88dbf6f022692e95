//! The backend contract's `RandomNumbers` family: counter-based random numbers (`random.rs`), the
//! same on every backend. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::random::Distribution;

/// Counter-based random numbers (`random.rs`), the same on every backend.
pub(crate) trait RandomNumbers: BackendStorage {
    /// Counter-based random floats (see `random.rs`): element `i` uses counter `offset + i`,
    /// so both backends draw the same numbers. Integer dtypes are `Unsupported`.
    fn random(
        device: &Self::Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self>;
}
