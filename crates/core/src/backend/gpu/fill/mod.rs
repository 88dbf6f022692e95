//! Kernel family `Fill`: write one 32-bit pattern into every word of a buffer (`full`; an f16
//! value is packed twice into the pattern, so one kernel serves every dtype).
//! Key: `KernelKey::Fill`; params: [`FillParams`]; source: `shaders/fill.wgsl`.

use super::kernels::KernelKey;
use super::GpuDevice;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::error::Result;

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

/// The catalogue entry (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<KernelKey>) {
    keys.push(KernelKey::Fill);
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
        &KernelKey::Fill,
        &Params::with_header(&header, 0),
        &[storage.raw()?],
        words,
    )
}
