//! Kernel family `Fill`: write one 32-bit pattern into every word of a buffer (`full`; an f16
//! value is packed twice into the pattern, so one kernel serves every dtype).
//! Key: [`FillKernel`] (`kernel.rs`); params: [`FillParams`]; source: `shaders/fill.wgsl`.

mod contract;
pub(crate) mod kernel;

use crate::backend::gpu::fill::kernel::FillKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::dtype::DType;
use crate::error::Result;
use half::f16;

kernel_params! {
    /// Parameters of `shaders/fill.wgsl`.
    struct FillParams {
        /// 32-bit words to write.
        words: u32,
        /// The pattern written into each.
        pattern: u32,
    }
}

/// The kernel's WGSL.
pub(crate) fn source() -> String {
    [
        FillParams::WGSL,
        COMMON,
        include_str!("../shaders/fill.wgsl"),
    ]
    .concat()
}

/// Record the fill of the first `words` words of `storage` with `pattern`.
pub(crate) fn launch(
    device: &GpuDevice,
    storage: &GpuStorage,
    words: usize,
    pattern: u32,
) -> Result<()> {
    let header = FillParams {
        words: word(words)?,
        pattern,
    };
    GpuStorage::launch(
        device,
        &FillKernel,
        &Params::with_header(&header, 0),
        &[storage.raw()?],
        words,
    )
}

impl GpuStorage {
    /// `numel` copies of `value` (converted like the CPU's `as`).
    pub fn full(device: &GpuDevice, numel: usize, dtype: DType, value: f64) -> Result<GpuStorage> {
        if GpuStorage::exceeds_binding(device, numel, dtype) {
            return GpuStorage::build_in_pieces(device, numel, dtype, |_, len| {
                GpuStorage::full(device, len, dtype, value)
            });
        }
        let storage = GpuStorage::allocate(device, "full", numel, dtype)?;
        let pattern: u32 = match dtype {
            DType::F32 | DType::F64 => (value as f32).to_bits(),
            DType::F16 => {
                let bits = f16::from_f64(value).to_bits() as u32;
                bits | (bits << 16)
            }
            DType::BF16 => {
                let bits = crate::dtype::bf16_from_f32(value as f32).to_bits() as u32;
                bits | (bits << 16)
            }
            DType::I32 => (value as i32) as u32,
            DType::U32 => value as u32,
            DType::U8 => (value as u8) as u32,
            DType::Bool => (value != 0.0) as u32,
        };
        let words = storage.byte_len().div_ceil(4);
        if words == 0 {
            return Ok(storage);
        }
        if pattern == 0 {
            device.context().clear_buffer(storage.raw()?, words * 4)?;
        } else {
            launch(device, &storage, words as usize, pattern)?;
        }
        Ok(storage)
    }
}
