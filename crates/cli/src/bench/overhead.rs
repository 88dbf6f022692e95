//! Per-op host overhead: 1,000 chained small elementwise ops (`x = x + 1` on 256 elements),
//! timed from the first call to the end of a final synchronize. On a GPU this measures how
//! cheaply an op is recorded and submitted, which is what small models are bound by. A GPU
//! fuses such a chain (each op is deferred, runs of them become one kernel), so the bench
//! reports the chain as written (`overhead`) and with fusion off (`overhead-unfused`: one
//! dispatch per op).

use std::time::Instant;

use anygrad::{DType, Device, Result, Tensor};

use super::{median, time_iterations, BenchResult};

/// Microseconds per op over a chain of `ops` small adds, with fusion as configured and, on a
/// GPU, with fusion off.
pub fn run_overhead(device: &Device, ops: usize, repeats: usize) -> Result<Vec<BenchResult>> {
    let mut results = run_chain(device, ops, repeats)?;
    if matches!(device, Device::Gpu(_)) {
        let was_enabled = anygrad::elementwise_fusion_enabled();
        anygrad::set_elementwise_fusion(false);
        let unfused = run_chain(device, ops, repeats);
        anygrad::set_elementwise_fusion(was_enabled);
        for mut result in unfused? {
            result.bench = result.bench.replacen("overhead", "overhead-unfused", 1);
            let note = result
                .note
                .take()
                .map(|n| format!("; {n}"))
                .unwrap_or_default();
            result.note = Some(format!("fusion off: one dispatch per op{note}"));
            results.push(result);
        }
    }
    Ok(results)
}

/// Time the chain: end to end (issue + final synchronize) and the issue alone (the host's
/// part: recording, and the submits made along the way).
fn run_chain(device: &Device, ops: usize, repeats: usize) -> Result<Vec<BenchResult>> {
    let start = Tensor::zeros(&[256], DType::F32, device)?;
    let mut issue_samples = Vec::with_capacity(repeats);
    let samples = time_iterations(device, 2, repeats, || {
        let issue_start = Instant::now();
        let mut x = start.clone();
        for _ in 0..ops {
            x = x.add_scalar(1.0)?;
        }
        issue_samples.push(issue_start.elapsed().as_secs_f64() * 1e3);
        Ok(())
    })?;
    // The warm-up calls pushed samples too; keep the timed ones.
    let issue_samples = sorted(issue_samples[issue_samples.len() - samples.len()..].to_vec());
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
    let result = |bench: &str, samples: &[f64], note: &str| {
        let med = median(samples);
        BenchResult {
            bench: bench.into(),
            framework: "anygrad",
            device: device.description(),
            dtype: "float32".into(),
            size: format!("{ops}x256"),
            median_ms: med,
            min_ms: samples[0],
            max_ms: samples[samples.len() - 1],
            iterations: samples.len(),
            value: med * 1e3 / ops as f64,
            unit: "us/op",
            peak_memory_bytes: None,
            peak_requested_bytes: None,
            note: (!note.is_empty()).then(|| note.to_string()),
        }
    };
    Ok(vec![
        result("overhead", &samples, ""),
        result(
            "overhead-host",
            &issue_samples,
            "host time to issue the ops (no final synchronize)",
        ),
    ])
}

fn sorted(mut samples: Vec<f64>) -> Vec<f64> {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples
}
