//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: RandomNumbers
//! — counter-based random numbers.

use crate::backend::contract::RandomNumbers;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::random::Distribution;

impl RandomNumbers for GpuStorage {
    fn random(
        device: &Self::Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Self> {
        GpuStorage::random(device, numel, dtype, distribution, seed, offset)
    }
}
