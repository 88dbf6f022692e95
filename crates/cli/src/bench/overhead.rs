//! Per-op host overhead: 1,000 chained small elementwise ops (`x = x + 1` on 256 elements),
//! timed from the first call to the end of a final synchronize. On a GPU this measures how
//! cheaply an op is recorded and submitted, which is what small models are bound by.

use anygrad::{DType, Device, Result, Tensor};

use super::{median, time_iterations, BenchResult};

/// Microseconds per op over a chain of `ops` small adds.
pub fn run_overhead(device: &Device, ops: usize, repeats: usize) -> Result<Vec<BenchResult>> {
    let start = Tensor::zeros(&[256], DType::F32, device)?;
    let samples = time_iterations(device, 2, repeats, || {
        let mut x = start.clone();
        for _ in 0..ops {
            x = x.add_scalar(1.0)?;
        }
        Ok(())
    })?;
    // Check the chain really ran.
    let mut x = start.clone();
    for _ in 0..ops {
        x = x.add_scalar(1.0)?;
    }
    let last = x.to_vec::<f32>()?[0];
    if last != ops as f32 {
        return Err(anygrad::Error::invalid(
            "bench overhead",
            format!("chain computed {last}, expected {ops}"),
        ));
    }
    let med = median(&samples);
    let per_op = |ms: f64| ms * 1e3 / ops as f64;
    Ok(vec![BenchResult {
        bench: "overhead".into(),
        framework: "anygrad",
        device: device.description(),
        dtype: "float32".into(),
        size: format!("{ops}x256"),
        median_ms: med,
        min_ms: samples[0],
        max_ms: samples[samples.len() - 1],
        iterations: samples.len(),
        value: per_op(med),
        unit: "us/op",
        peak_memory_bytes: None,
        note: None,
    }])
}
