//! Test support shared by every anygrad crate. A test body takes `&Device`;
//! `anygrad_testing::device_tests!(a, b, ...)` generates `on_cpu::a` and `on_gpu::a` tests from
//! it. Without a GPU adapter the GPU variant prints a visible `SKIP`, unless
//! `ANYGRAD_REQUIRE_GPU=1` (set in CI with lavapipe), where a missing adapter fails the test.
//! A core built without its `gpu` feature skips the GPU variants even then: it has no GPU to
//! require. Every skip goes through [`skip()`] (`skip.rs`), which also appends it to the file
//! `ANYGRAD_SKIP_LOG` names; `ANYGRAD_REQUIRE_F16`, `ANYGRAD_REQUIRE_COOP` and the other
//! [`Requirement`]s fail instead of skipping, like `ANYGRAD_REQUIRE_GPU`. Beside the device
//! plumbing: float comparison (`assert_close`), tensor shorthands
//! (`values`, `tensor`), temporary directories, gzip, a reference convolution
//! (`conv_reference`), loader fuzzing (`fuzz`) and heap measurement (`memory`).

pub mod conv_reference;
pub mod features;
pub mod fuzz;
pub mod memory;
pub mod quantized_blocks;
pub mod skip;

pub use features::gpu_has_or_skip;
pub use quantized_blocks::random_quantized_blocks;
pub use skip::{current_test, skip, skip_unless_required, Requirement};

use std::io::Write;

use anygrad_core::{Device, Tensor};

pub use anygrad_core::Device as TestDevice;

/// The GPU device for tests, or `None` (after printing SKIP) when none exists and none is
/// required.
pub fn gpu_or_skip(test: &str) -> Option<Device> {
    if !anygrad_core::gpu::ENABLED {
        skip(test, "anygrad-core was built without the `gpu` feature");
        return None;
    }
    match Device::gpu(0) {
        Ok(device) => Some(device),
        Err(error) => {
            skip_unless_required(Requirement::Gpu, test, &format!("no GPU adapter ({error})"));
            None
        }
    }
}

/// Whether `device` computes in f16. Where it does not, skips `test` naming the missing
/// feature: the adapter lacks `SHADER_F16` (a failure under `ANYGRAD_REQUIRE_F16=1`), or
/// `ANYGRAD_DISABLE_FEATURES` turned it off (CI's reduced-feature run). Tests that cannot run
/// without f16 return early on `false`; tests that check f16 beside f32 leave that part out.
pub fn f16_or_skip(device: &Device, test: &str) -> bool {
    match device {
        Device::Cpu => true,
        Device::Gpu(gpu) => gpu_has_or_skip(gpu, Requirement::F16, test),
    }
}

/// Serializes the GPU variants within one test binary, so that concurrent tests do not
/// compete for the (often software) GPU and each GPU variant's timing stays bounded.
pub static GPU_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Serializes the tests of one binary that seed and draw from anygrad's process-wide random
/// generator (`manual_seed`, as `torch.manual_seed`): run concurrently, each reseeds it under
/// the other and both draw from one interleaved stream, so neither sees its seed's numbers.
static GLOBAL_RNG_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the process-wide random generator for one test until the guard drops (see
/// `GLOBAL_RNG_LOCK`); a test that failed while holding it does not block the others.
pub fn global_rng_lock() -> std::sync::MutexGuard<'static, ()> {
    GLOBAL_RNG_LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Generate `on_cpu::<name>` and `on_gpu::<name>` tests from `fn name(device: &Device)`.
///
/// Names after `; gpu_only:` get only the `on_gpu` test: for tests of what exists on the GPU
/// alone (its caching allocator, its fused kernels' memory), which would check nothing on the
/// CPU. `device_tests!(a, b; gpu_only: c)` makes `on_cpu::a`, `on_cpu::b`, `on_gpu::a`,
/// `on_gpu::b` and `on_gpu::c`.
#[macro_export]
macro_rules! device_tests {
    ($($name:ident),* $(,)? ; gpu_only: $($gpu:ident),* $(,)?) => {
        mod on_cpu {
            $(
                #[test]
                fn $name() {
                    super::$name(&$crate::TestDevice::Cpu);
                }
            )*
        }
        mod on_gpu {
            $(
                #[test]
                fn $name() {
                    let _serial = $crate::GPU_LOCK.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(device) = $crate::gpu_or_skip(stringify!($name)) {
                        super::$name(&device);
                    }
                }
            )*
            $(
                #[test]
                fn $gpu() {
                    let _serial = $crate::GPU_LOCK.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(device) = $crate::gpu_or_skip(stringify!($gpu)) {
                        super::$gpu(&device);
                    }
                }
            )*
        }
    };
    ($($name:ident),* $(,)?) => {
        $crate::device_tests!($($name),* ; gpu_only:);
    };
}

/// Assert two float slices agree within `atol + rtol * |expected|`. Non-finite expected
/// values are matched exactly: NaN only by NaN, an infinity only by the infinity of the same
/// sign (a tolerance relative to an infinite value would accept anything).
pub fn assert_close(actual: &[f32], expected: &[f32], atol: f32, rtol: f32, what: &str) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: length {} vs {}",
        actual.len(),
        expected.len()
    );
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() {
            a.is_nan()
        } else if e.is_infinite() {
            a == e
        } else {
            (a - e).abs() <= atol + rtol * e.abs()
        };
        assert!(ok, "{what}: element {i}: got {a}, expected {e}\nactual   {actual:?}\nexpected {expected:?}");
    }
}

/// Values of a tensor as f32 (any dtype, read back from any device).
pub fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().expect("readback")
}

/// `count` deterministic values in [-1, 1) for `seed` (xorshift; the same on every device and
/// run).
pub fn pseudo_random(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A tensor of `shape` on `device` holding [`pseudo_random`] values for `seed`.
pub fn random_tensor(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    let count = shape.iter().product();
    Tensor::from_vec(pseudo_random(count, seed), shape, device).expect("random tensor")
}

/// An f32 tensor from values and a shape.
pub fn tensor(values: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_slice(values, shape, device).expect("tensor")
}

/// `bytes` gzip-compressed (fast level), for tests of readers that accept `.gz` files.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// A fresh temporary directory for one test.
pub fn temp_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("anygrad-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Bytes that live tensors asked the device's caching allocator for, after waiting for the
/// device (`None` on the CPU, which has no caching allocator). Memory tests compare it before
/// and after the code they measure.
pub fn requested_bytes(device: &Device) -> Option<u64> {
    device.synchronize().expect("synchronize");
    anygrad_core::memory_stats(device).map(|stats| stats.requested_bytes)
}
