//! Helpers shared by the backend tests (`primitives.rs`, `runtime.rs`, `vectorized.rs`,
//! `bad_layouts.rs`) and the kernel tests under `backend/gpu/`: the device under test (or a
//! visible, recorded skip through `skip.rs`, also in a build without the `gpu` feature; a
//! failure where `ANYGRAD_REQUIRE_GPU`, `ANYGRAD_REQUIRE_F16`, ... say the capability must be
//! there), deterministic inputs, and CPU-versus-GPU comparison of storages.
#![allow(dead_code)]

use super::skip::{current_test, skip, skip_unless_required};
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::GpuDevice;
use crate::op::UnaryOp;
use crate::storage::Storage;
use crate::{DType, Device, Layout};

pub use super::skip::Requirement;

/// The GPU under test, or `None` (after a skip) when there is none.
pub fn gpu() -> Option<Device> {
    gpu_device().map(Device::Gpu)
}

/// The first GPU's handle, or `None` (after a skip) when there is none. Under
/// `ANYGRAD_REQUIRE_GPU=1` a missing adapter fails the test, except in a build without the
/// `gpu` feature, which has no GPU to require.
pub fn gpu_device() -> Option<GpuDevice> {
    if !crate::gpu::ENABLED {
        skip(
            &current_test(),
            "anygrad-core was built without the `gpu` feature",
        );
        return None;
    }
    match GpuDevice::open(0) {
        Ok(device) => Some(device),
        Err(error) => {
            let reason = format!("no GPU adapter ({error})");
            skip_unless_required(Requirement::Gpu, &current_test(), &reason);
            None
        }
    }
}

/// The first GPU when it computes in f16; `None` (after a skip, or a failure under
/// `ANYGRAD_REQUIRE_F16=1`) otherwise.
pub fn f16_gpu_device() -> Option<GpuDevice> {
    let device = gpu_device()?;
    if device.supports_f16() {
        Some(device)
    } else {
        skip_missing(&device, Requirement::F16, "the test");
        None
    }
}

/// Skip `part` of the running test (`"the test"` for all of it) because `device` lacks
/// `requirement`, or fail where the requirement's variable is `1`. The reason says whether
/// `ANYGRAD_DISABLE_FEATURES` turned the feature off or the adapter lacks it.
pub fn skip_missing(device: &GpuDevice, requirement: Requirement, part: &str) {
    let (feature, lacking) = match requirement {
        Requirement::F16 => ("f16", "the adapter has no SHADER_F16"),
        Requirement::Coop => ("coop", "no usable 16x16x16 f16 -> f32 cooperative matrices"),
        Requirement::FloatAtomics => ("float-atomics", "the adapter adds no f32 atomically"),
        Requirement::Timestamps => ("timestamps", "the adapter has no timestamp queries"),
        Requirement::Gpu | Requirement::Data => ("", "missing"),
    };
    let info = device.info();
    let why = if info.disabled_features.iter().any(|f| f == feature) {
        format!("{feature} turned off by ANYGRAD_DISABLE_FEATURES")
    } else {
        format!("no {feature}: {lacking} ({})", info.name)
    };
    skip_unless_required(requirement, &current_test(), &format!("{part}: {why}"));
}

/// Whether `device` has `requirement`'s feature; where it does not, skips `part` of the
/// running test (see [`skip_missing`]) and returns `false`.
pub fn has_or_skip(device: &GpuDevice, requirement: Requirement, part: &str) -> bool {
    let has = match requirement {
        Requirement::F16 => device.supports_f16(),
        // The adapter's own word; the kernel tests ask their kernels' narrower conditions
        // (`context().coop.available`, `cooperative_attention()`) and call `skip_missing`.
        Requirement::Coop => device.has_cooperative_f16_f32(),
        Requirement::FloatAtomics => device.info().float_atomics,
        Requirement::Timestamps => device.info().timestamp_query,
        Requirement::Gpu | Requirement::Data => true,
    };
    if !has {
        skip_missing(device, requirement, part);
    }
    has
}

/// Deterministic pseudo-random values in [-scale, scale).
pub fn values(count: usize, seed: u64, scale: f64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
        })
        .collect()
}

/// Awkward float values: NaN, ±inf, ±0, tiny, large, and ordinary ones.
pub fn special_values() -> Vec<f64> {
    let mut v = vec![
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        1e30,
        -1e30,
        100.0,
        -100.0,
        88.0,
        -88.0,
        20.0,
        -20.0,
        1.0,
        -1.0,
        0.5,
        -2.0,
        3.0,
    ];
    v.extend(values(44, 7, 6.0));
    v
}

pub fn cpu_storage(values: &[f64], dtype: DType) -> Storage {
    Storage::from(CpuStorage::from_f64_values(values, dtype))
}

pub fn to_gpu(storage: &Storage, device: &Device) -> Storage {
    storage
        .to_device(device)
        .unwrap_or_else(|error| panic!("upload: {error}"))
}

pub fn flat(storage: &Storage) -> Vec<f64> {
    let cpu = storage
        .to_cpu()
        .unwrap_or_else(|error| panic!("readback: {error}"));
    cpu.to_f64_vec(&Layout::contiguous(&[cpu.len()]))
        .unwrap_or_else(|error| panic!("conversion: {error}"))
}

/// Compare a GPU result with the CPU reference: same dtype and length, values within
/// `atol + rtol * |cpu|`, NaN where the CPU has NaN, infinities of the same sign.
pub fn assert_close(what: &str, cpu: &Storage, gpu: &Storage, rtol: f64, atol: f64) {
    if let Some(failure) = check_close(what, cpu, gpu, rtol, atol) {
        panic!("{failure}");
    }
}

/// Like `assert_close`, but returns the first mismatch instead of panicking.
pub fn check_close(
    what: &str,
    cpu: &Storage,
    gpu: &Storage,
    rtol: f64,
    atol: f64,
) -> Option<String> {
    if cpu.dtype() != gpu.dtype() {
        return Some(format!("{what}: dtype {} vs {}", cpu.dtype(), gpu.dtype()));
    }
    let (a, b) = (flat(cpu), flat(gpu));
    if a.len() != b.len() {
        return Some(format!("{what}: length {} vs {}", a.len(), b.len()));
    }
    for (i, (&x, &y)) in a.iter().zip(&b).enumerate() {
        let ok = if x.is_nan() {
            y.is_nan()
        } else if x.is_infinite() {
            x == y
        } else {
            (x - y).abs() <= atol + rtol * x.abs()
        };
        if !ok {
            return Some(format!("{what}: element {i}: cpu {x} vs gpu {y}"));
        }
    }
    None
}

pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F16 => (2e-3, 2e-3),
        DType::BF16 => (1e-2, 1e-2),
        DType::F32 | DType::F64 => (2e-5, 1e-6),
        DType::I32 | DType::U32 | DType::U8 | DType::Bool => (0.0, 0.0),
    }
}

/// The float dtypes to check on `device`: F32, and F16 where the device computes in it (a GPU
/// without f16 skips that part visibly, or fails under `ANYGRAD_REQUIRE_F16=1`).
pub fn float_dtypes(device: &Device) -> Vec<DType> {
    if f16_or_skip(device, "the f16 cases") {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
    }
}

/// Whether `device` computes in f16 (the CPU always does); where a GPU does not, skips `part`
/// of the running test (see [`skip_missing`]) and returns `false`.
pub fn f16_or_skip(device: &Device, part: &str) -> bool {
    match device {
        Device::Cpu => true,
        Device::Gpu(gpu) => has_or_skip(gpu, Requirement::F16, part),
    }
}

pub const INTEGER_DTYPES: [DType; 4] = [DType::I32, DType::U32, DType::U8, DType::Bool];

pub fn integer_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        1.0,
        -1.0,
        2.0,
        -7.0,
        255.0,
        300.0,
        2147483647.0,
        -2147483648.0,
        5.0,
        3.0,
        0.0,
    ];
    v.extend(values(36, 3, 50.0).into_iter().map(f64::round));
    v
}

/// Inputs for a unary op, a multiple of 8 long. Two known differences are left out:
/// GPU sin/cos are only accurate for moderate arguments (no exact range reduction of 1e30),
/// and the CPU reference's relu(-inf) is NaN (`-inf * 0`) where the GPU (and PyTorch) give 0.
pub fn unary_inputs(dtype: DType, op: UnaryOp) -> Vec<f64> {
    let mut data = if dtype.is_float() {
        special_values()
    } else {
        integer_values()
    };
    match op {
        UnaryOp::Sin | UnaryOp::Cos => data.retain(|v| v.is_nan() || v.abs() <= 1e4),
        UnaryOp::Relu => data.retain(|&v| v.is_nan() || v > -65504.0),
        _ => {}
    }
    while data.len() % 8 != 0 {
        data.push(0.5);
    }
    data
}
