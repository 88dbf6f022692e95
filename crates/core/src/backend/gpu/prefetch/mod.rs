//! Kernel family `Prefetch`: read a buffer ahead of the kernel that needs it, so that its
//! lines come from the L2 cache instead of device memory.
//! Key: [`PrefetchKernel`] (`kernel.rs`); params: [`PrefetchParams`]; source: `shaders/prefetch.wgsl`.
//!
//! Why: a convolution with large weights (ResNet-18's later stages: 1.2-4.7 MB a layer in f16)
//! runs few workgroups, each stepping through K in lock-step with its neighbours; when the
//! weights are not in L2 (the activations of the layers before evicted them), every step
//! waits on device memory's latency. On an H200 the same kernels took 15-55 µs longer inside
//! a ResNet-18 forward than when the tuner timed them with the weights cached
//! (docs/PERFORMANCE.md). Streaming the weights once at full bandwidth beforehand costs a few
//! µs and leaves them in L2 for the convolution. The dot-product matmul (`matmul/dot.rs`,
//! a classifier head) steps through its weight rows the same way and prefetches them too.

pub(crate) mod kernel;

use crate::backend::gpu::prefetch::kernel::PrefetchKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::error::Result;

kernel_params! {
    /// Parameters of `shaders/prefetch.wgsl`.
    struct PrefetchParams {
        /// 16-byte vectors to read.
        vectors: u32,
        /// Vectors each invocation reads.
        per_invocation: u32,
        /// Vectors between one invocation's reads (the number of invocations).
        stride: u32,
        /// 1 only in tests: the sink's write stays dead at run time, live for the compiler.
        never: u32,
    }
}

/// Vectors each invocation reads (64 bytes in flight per invocation).
const PER_INVOCATION: usize = 4;

/// Buffers smaller than this are not prefetched: the first workgroups bring them into L2
/// for the rest, and the dispatch would cost more than it saves.
pub(crate) const MIN_BYTES: usize = 256 * 1024;

/// Buffers larger than this are not prefetched: they would not stay in L2 (50 MB on an
/// H200) until the kernel reads them.
pub(crate) const MAX_BYTES: usize = 32 * 1024 * 1024;

/// The kernel's WGSL.
pub(crate) fn source() -> String {
    [
        PrefetchParams::WGSL,
        COMMON,
        include_str!("../shaders/prefetch.wgsl"),
    ]
    .concat()
}

/// Record a read of `storage` into the L2 cache where it is [`MIN_BYTES`] to [`MAX_BYTES`]
/// long (`ANYGRAD_PREFETCH=off` turns it off).
pub(crate) fn prefetch(storage: &GpuStorage) -> Result<()> {
    let bytes = storage.len * storage.dtype.size_in_bytes();
    if !(MIN_BYTES..=MAX_BYTES).contains(&bytes) || !enabled() {
        return Ok(());
    }
    let context = storage.device.context();
    launch(storage, bytes, context.prefetch_sink(), false)
}

/// Record the prefetch of the first `bytes` bytes (whole 16-byte vectors) of `storage`;
/// `write` (tests) XORs every word read into the sink's first word.
fn launch(storage: &GpuStorage, bytes: usize, sink: &wgpu::Buffer, write: bool) -> Result<()> {
    let vectors = bytes / 16;
    let invocations = vectors.div_ceil(PER_INVOCATION);
    let header = PrefetchParams {
        vectors: word(vectors)?,
        per_invocation: PER_INVOCATION as u32,
        stride: word(invocations)?,
        never: u32::from(write),
    };
    GpuStorage::launch(
        &storage.device,
        &PrefetchKernel,
        &Params::with_header(&header, 0),
        &[storage.raw()?, sink],
        invocations,
    )
}

/// `ANYGRAD_PREFETCH` is not `off` (read once).
fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("ANYGRAD_PREFETCH").map_or(true, |v| v != "off"))
}

#[cfg(test)]
mod tests {
    use super::launch;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::backend::tests::support::gpu_device;

    /// The kernel reads every whole vector exactly once (an XOR over the words read equals
    /// the host's: a vector read twice or missed would change it) and writes nothing else.
    #[test]
    fn prefetch_reads_every_vector_once() {
        let Some(device) = gpu_device() else { return };
        // Not a multiple of the vectors a workgroup reads, with a partial last vector.
        let words: Vec<u32> = (0..70_003u32)
            .map(|i| i.wrapping_mul(2_654_435_761).rotate_left(i % 31))
            .collect();
        let source = GpuStorage::from_cpu(
            &device,
            &CpuStorage::U32(crate::backend::cpu::HostBuffer::from(words.clone())),
        )
        .unwrap();
        let sink = GpuStorage::from_cpu(
            &device,
            &CpuStorage::U32(crate::backend::cpu::HostBuffer::from(vec![0; 4])),
        )
        .unwrap();
        launch(&source, words.len() * 4, sink.raw().unwrap(), true).unwrap();
        let whole = words.len() / 4 * 4;
        let expected = words[..whole].iter().fold(0, |acc, word| acc ^ word);
        let CpuStorage::U32(read) = sink.to_cpu().unwrap() else {
            panic!("the sink is u32")
        };
        assert_eq!(read.into_vec(), vec![expected, 0, 0, 0]);
        assert_eq!(
            source.to_cpu().unwrap(),
            CpuStorage::U32(crate::backend::cpu::HostBuffer::from(words))
        );
    }
}
