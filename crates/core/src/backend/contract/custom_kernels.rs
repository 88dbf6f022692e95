//! The backend contract's `CustomKernels` family: a user's WGSL kernel (`custom_op.rs`) run
//! over a backend's storages. Optional like attention: the default refuses, and a custom op
//! then runs its CPU function. The GPU implements it in `backend/gpu/custom/`.

use super::BackendStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// User kernels written in WGSL.
pub(crate) trait CustomKernels: BackendStorage {
    /// Run the user kernel `wgsl` over `numel` output elements of F32. Every input must be F32
    /// data starting at element 0 of its storage (the caller passes contiguous copies).
    fn custom_kernel(
        _device: &Self::Device,
        _wgsl: &str,
        _inputs: &[&Self],
        _numel: usize,
    ) -> Result<Self> {
        Err(Error::Unsupported {
            op: "custom kernel",
            dtype: DType::F32,
            device: Self::NAME.into(),
            hint: "; WGSL kernels run on GPUs only (a custom op's CPU function runs here)".into(),
        })
    }
}
