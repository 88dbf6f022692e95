//! Square matmul throughput: 2·n³ floating-point operations per product, each timed with a
//! synchronize (like `bench/pytorch_reference.py`); the note gives the rate with products
//! issued back to back, without the submission and synchronization latency of single calls.

use anygrad::{DType, Device, Result, Tensor};

use super::matmul_limits::MatmulLimits;
use super::{median, time_iterations, time_pipelined, BenchResult};

/// Products issued back to back for the note's rate.
const PIPELINED: usize = 16;

/// Benchmark `n x n` products for each size; dtype f32 or f16. Every size is checked against
/// the device's per-buffer binding limit and memory first (`matmul_limits.rs`).
pub fn run_matmul(
    device: &Device,
    sizes: &[usize],
    dtype: DType,
    seconds_per_case: f64,
) -> Result<Vec<BenchResult>> {
    MatmulLimits::of(device).check(sizes, dtype)?;
    let mut results = Vec::new();
    for &n in sizes {
        let a = Tensor::randn(&[n, n], dtype, device)?;
        let b = Tensor::randn(&[n, n], dtype, device)?;
        // One untimed product to size the iteration count to about `seconds_per_case`.
        let probe = time_iterations(device, 1, 1, || a.matmul(&b).map(drop))?;
        let iterations = ((seconds_per_case * 1e3 / probe[0].max(1e-3)) as usize).clamp(3, 500);
        let samples = time_iterations(device, 2, iterations, || a.matmul(&b).map(drop))?;
        let med = median(&samples);
        let flops = 2.0 * (n as f64).powi(3);
        let (_, pipelined) = time_pipelined(device, PIPELINED, || a.matmul(&b).map(drop))?;
        results.push(BenchResult {
            bench: "matmul".into(),
            framework: "anygrad",
            device: device.description(),
            dtype: dtype.name().into(),
            size: n.to_string(),
            median_ms: med,
            min_ms: samples[0],
            max_ms: samples[samples.len() - 1],
            iterations,
            value: flops / (med * 1e-3) / 1e9,
            unit: "GFLOPS",
            peak_memory_bytes: None,
            peak_requested_bytes: None,
            note: Some(format!(
                "{:.1} TFLOPS with {PIPELINED} products issued back to back",
                flops / (pipelined * 1e-3) / 1e12
            )),
        });
    }
    Ok(results)
}
