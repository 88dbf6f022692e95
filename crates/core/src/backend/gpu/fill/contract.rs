//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Creation —
//! constant fills (`GpuStorage::full`) and ranges (`GpuStorage::arange`, in the runtime's storage).

use crate::backend::contract::Creation;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;

impl Creation for GpuStorage {
    fn full(device: &Self::Device, numel: usize, dtype: DType, value: f64) -> Result<Self> {
        GpuStorage::full(device, numel, dtype, value)
    }

    fn arange(
        device: &Self::Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Self> {
        GpuStorage::arange(device, start, step, numel, dtype)
    }
}
