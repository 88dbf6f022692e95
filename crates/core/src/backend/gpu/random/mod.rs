//! Kernel family `Random`: counter-based uniform or normal draws, the same integer hash as
//! `random.rs` of the crate, so element i of a draw is the same number on the CPU and on any
//! GPU. Key: `RandomKernel::Random`; params: [`RandomParams`]; source: `shaders/random.wgsl`.

mod contract;
pub(crate) mod kernel;

use crate::backend::gpu::random::kernel::RandomKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{storage_type, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::random::{seed_key, Distribution};

kernel_params! {
    /// Parameters of `shaders/random.wgsl`.
    struct RandomParams {
        /// Elements to draw.
        numel: u32,
        /// The seed's key (`random::seed_key`).
        key: u32,
        /// Counter of element 0 (the draw's offset in the stream).
        first_counter: u32,
        /// f32 bits of the low bound (uniform) or the mean (normal).
        a_bits: u32,
        /// f32 bits of the high bound (uniform) or the standard deviation (normal).
        b_bits: u32,
    }
}

/// The kernel's WGSL (after `enable f16;` where needed) for `dtype` and the distribution.
pub(crate) fn source(dtype: DType, normal: bool) -> String {
    let mut text = format!(
        "alias S = {};\nconst NORMAL: bool = {normal};\n",
        storage_type(dtype)
    );
    text.push_str(RandomParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/random.wgsl"));
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<RandomKernel>, dtype: DType) {
    if dtype.is_float() {
        for normal in [false, true] {
            keys.push(RandomKernel::Random { dtype, normal });
        }
    }
}

/// Record `numel` draws into `storage` (`a`, `b`: low/high or mean/std).
pub(crate) fn launch(
    device: &GpuDevice,
    storage: &GpuStorage,
    numel: usize,
    normal: bool,
    key: u32,
    first_counter: u32,
    (a, b): (f32, f32),
) -> Result<()> {
    let header = RandomParams {
        numel: word(numel)?,
        key,
        first_counter,
        a_bits: a.to_bits(),
        b_bits: b.to_bits(),
    };
    GpuStorage::launch(
        device,
        &RandomKernel::Random {
            dtype: storage.dtype,
            normal,
        },
        &Params::with_header(&header, 0),
        &[storage.raw()?],
        numel,
    )
}

impl GpuStorage {
    /// Counter-based random values, the same numbers as the CPU (see `random.rs`).
    pub fn random(
        device: &GpuDevice,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<GpuStorage> {
        if !dtype.is_float() {
            return Err(Error::Unsupported {
                op: "random",
                dtype,
                device: format!("gpu:{}", device.ordinal()),
                hint: "; draw floats and convert".into(),
            });
        }
        if GpuStorage::exceeds_binding(device, numel, dtype) {
            return GpuStorage::build_in_pieces(device, numel, dtype, |start, len| {
                GpuStorage::random(
                    device,
                    len,
                    dtype,
                    distribution,
                    seed,
                    offset + start as u64,
                )
            });
        }
        let storage = GpuStorage::allocate(device, "random", numel, dtype)?;
        let (normal, a, b) = match distribution {
            Distribution::Uniform { low, high } => (false, low as f32, high as f32),
            Distribution::Normal { mean, std } => (true, mean as f32, std as f32),
        };
        launch(
            device,
            &storage,
            numel,
            normal,
            seed_key(seed),
            offset as u32,
            (a, b),
        )?;
        Ok(storage)
    }
}
