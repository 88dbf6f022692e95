//! Helpers shared by the backend tests (`primitives.rs`, `runtime.rs`, `vectorized.rs`,
//! `bad_layouts.rs`): the device under test (or a visible skip, also in a build without the
//! `gpu` feature), deterministic inputs, and CPU-versus-GPU comparison of storages.
#![allow(dead_code)]

use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::GpuDevice;
use crate::op::UnaryOp;
use crate::storage::Storage;
use crate::{DType, Device, Layout};

/// The GPU under test, or `None` (after printing a skip) when there is none.
pub fn gpu() -> Option<Device> {
    gpu_device().map(Device::Gpu)
}

/// The first GPU's handle, or `None` (after printing a skip) when there is none. Under
/// `ANYGRAD_REQUIRE_GPU=1` a missing adapter fails the test, except in a build without the
/// `gpu` feature, which has no GPU to require.
pub fn gpu_device() -> Option<GpuDevice> {
    if !crate::gpu::ENABLED {
        eprintln!("SKIP: anygrad-core was built without the `gpu` feature");
        return None;
    }
    match GpuDevice::open(0) {
        Ok(device) => Some(device),
        Err(error) => {
            if std::env::var("ANYGRAD_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("ANYGRAD_REQUIRE_GPU=1 but no GPU opened: {error}");
            }
            eprintln!("SKIP: no GPU adapter ({error})");
            None
        }
    }
}

/// The first GPU when it computes in f16; `None` (after printing a skip) otherwise.
pub fn f16_gpu_device() -> Option<GpuDevice> {
    let device = gpu_device()?;
    if device.supports_f16() {
        Some(device)
    } else {
        eprintln!("SKIP: no SHADER_F16");
        None
    }
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
    Storage::Cpu(CpuStorage::from_f64_values(values, dtype))
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
        DType::F32 | DType::F64 => (2e-5, 1e-6),
        DType::I32 | DType::U32 | DType::U8 | DType::Bool => (0.0, 0.0),
    }
}

pub fn float_dtypes(device: &Device) -> Vec<DType> {
    if device.supports_f16() {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
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
