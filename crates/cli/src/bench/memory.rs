//! Memory-bound workloads: `a*b + a` on 64M f32 elements (reported as effective bandwidth of
//! the minimal traffic, 12 bytes per element) and a device-to-device copy (8 bytes per
//! element), the ceiling elementwise kernels are measured against.

use anygrad::{DType, Device, Result, Tensor};

use super::{median, time_iterations, BenchResult};

fn result(
    bench: &str,
    device: &Device,
    elements: usize,
    bytes_per_element: f64,
    samples: &[f64],
) -> BenchResult {
    let med = median(samples);
    BenchResult {
        bench: bench.into(),
        framework: "anygrad",
        device: device.description(),
        dtype: "float32".into(),
        size: elements.to_string(),
        median_ms: med,
        min_ms: samples[0],
        max_ms: samples[samples.len() - 1],
        iterations: samples.len(),
        value: bytes_per_element * elements as f64 / (med * 1e-3) / 1e9,
        unit: "GB/s",
        peak_memory_bytes: None,
        note: None,
    }
}

/// `a*b + a` and a copy over `elements` f32 values.
pub fn run_elementwise(
    device: &Device,
    elements: usize,
    iterations: usize,
) -> Result<Vec<BenchResult>> {
    let a = Tensor::rand(&[elements], DType::F32, device)?;
    let b = Tensor::rand(&[elements], DType::F32, device)?;
    let fused = time_iterations(device, 3, iterations, || a.mul(&b)?.add(&a).map(drop))?;
    let copy = time_iterations(device, 3, iterations, || a.copy().map(drop))?;
    Ok(vec![
        result("elementwise", device, elements, 12.0, &fused),
        result("copy", device, elements, 8.0, &copy),
    ])
}
