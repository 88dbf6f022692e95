//! `anygrad bench`: warm up, run many timed iterations (synchronizing the device so GPU work
//! is really finished), report the median and the spread, as a table or as JSON lines that
//! `bench/compare.py` joins with PyTorch's figures from `bench/pytorch_reference.py`.

mod attention;
mod host_memory;
mod matmul;
mod matmul_limits;
mod memory;
mod minilm;
mod mlp;
mod onnx;
mod overhead;
mod resnet;
#[cfg(feature = "mpi")]
mod resnet_distributed;
mod resnet_parallel;

use std::time::{Duration, Instant};

use anygrad::{Device, Result};
use serde::Serialize;

pub use attention::{run_attention, AttentionWorkload};
pub use matmul::run_matmul;
pub use memory::run_elementwise;
pub use minilm::{random_minilm, run_minilm, run_minilm_train, MinilmOptions};
pub use mlp::run_mlp;
pub use onnx::run_onnx;
pub use overhead::run_overhead;
pub use resnet::{run_resnet18, run_resnet18_train};
pub use resnet_parallel::run_resnet18_train_parallel;

/// `bench resnet18-train --distributed`: one MPI rank's part (see `resnet_distributed.rs`).
#[cfg(feature = "mpi")]
pub fn run_resnet18_train_distributed(
    device: &str,
    batch: usize,
    amp: bool,
) -> std::result::Result<Vec<BenchResult>, String> {
    resnet_distributed::run_as_rank(device, batch, amp)
}

/// Without the `mpi` feature there is no distributed bench; say how to get one.
#[cfg(not(feature = "mpi"))]
pub fn run_resnet18_train_distributed(
    _device: &str,
    _batch: usize,
    _amp: bool,
) -> std::result::Result<Vec<BenchResult>, String> {
    Err(
        "--distributed needs MPI, and this build has none: install OpenMPI (openmpi-bin \
         libopenmpi-dev libclang-dev), build with `cargo build --release -p anygrad-cli \
         --features mpi` and run `mpirun -n 2 anygrad bench resnet18-train --distributed`"
            .into(),
    )
}

/// One measured result.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    pub bench: String,
    pub framework: &'static str,
    pub device: String,
    pub dtype: String,
    pub size: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub iterations: usize,
    /// The headline figure (GFLOPS, GB/s, images/s, µs per op ...), named by `unit`.
    pub value: f64,
    pub unit: &'static str,
    /// Peak device memory during the case (GPU only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// The peak of what tensors asked for, before the caching allocator's size-class
    /// rounding (GPU only); the gap to `peak_memory_bytes` is mostly rounding waste.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_requested_bytes: Option<u64>,
    /// Extra information (speed-up over the CPU, "OOM at batch N").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How long the untimed runs of [`time_iterations`] last at least (when it is asked for any).
/// A GPU's clock rises only under load: on the H200 it fell from 1,980 to 345 MHz after about
/// 3.5 s of idling while a process compiled its kernels, and a first benchmark process that
/// warmed up for two runs then measured attention at 1.0–1.4 ms a step instead of 0.37 (its
/// later processes, whose kernels the driver had cached, never let the clock fall); the
/// clock was back at 1,980 MHz within 250 ms of load (`nvidia-smi`, docs/PERFORMANCE.md,
/// 2026-12-04).
pub const MIN_WARMUP: Duration = Duration::from_millis(300);

/// Time `work` (which must leave the device idle: it synchronizes) `iterations` times after
/// `warmup` untimed runs, repeated until [`MIN_WARMUP`] has passed when `warmup` is not
/// zero; returns per-iteration milliseconds, sorted.
pub fn time_iterations(
    device: &Device,
    warmup: usize,
    iterations: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    let started = Instant::now();
    let mut runs = 0;
    while runs < warmup || (warmup > 0 && started.elapsed() < MIN_WARMUP) {
        work()?;
        device.synchronize()?;
        runs += 1;
    }
    device.synchronize()?;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        work()?;
        device.synchronize()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    Ok(samples)
}

/// `(host, total)` milliseconds per call of [`time_pipelined`].
pub type Pipelined = (f64, f64);

/// Milliseconds per call of `count` calls issued back to back with one synchronize at the
/// end: `(host, total)`, the host's time to issue a call and the time per call with the GPU
/// kept busy (no synchronize between calls). A host time near the total says the workload is
/// bound by recording, not by the GPU. Untimed rounds first, for at least [`MIN_WARMUP`]:
/// calls in flight together hold more buffers than one call at a time, and the caching
/// allocator reuses a freed buffer only after the work that used it was submitted, so the
/// first round allocates; and the GPU's clock rises only under load.
pub fn time_pipelined(
    device: &Device,
    count: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<Pipelined> {
    let started = Instant::now();
    loop {
        for _ in 0..count {
            work()?;
        }
        device.synchronize()?;
        if started.elapsed() >= MIN_WARMUP {
            break;
        }
    }
    let start = Instant::now();
    for _ in 0..count {
        work()?;
    }
    let host = start.elapsed().as_secs_f64() * 1e3;
    device.synchronize()?;
    let total = start.elapsed().as_secs_f64() * 1e3;
    let count = count.max(1) as f64;
    Ok((host / count, total / count))
}

/// Median of sorted samples.
pub fn median(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

/// Print results as an aligned table or as JSON lines.
pub fn report(results: &[BenchResult], json: bool) {
    if json {
        for result in results {
            match serde_json::to_string(result) {
                Ok(line) => println!("{line}"),
                Err(error) => eprintln!("error: cannot serialize a result: {error}"),
            }
        }
        return;
    }
    println!(
        "{:<14} {:<26} {:<6} {:>12} {:>11} {:>11} {:>11} {:>14}",
        "bench", "device", "dtype", "size", "median ms", "min ms", "max ms", "result"
    );
    for r in results {
        let memory = r
            .peak_memory_bytes
            .map(|b| format!("  peak {:.0} MiB", b as f64 / 1048576.0))
            .unwrap_or_default();
        let note = r
            .note
            .as_ref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        println!(
            "{:<14} {:<26} {:<6} {:>12} {:>11.3} {:>11.3} {:>11.3} {:>9.1} {}{memory}{note}",
            r.bench, r.device, r.dtype, r.size, r.median_ms, r.min_ms, r.max_ms, r.value, r.unit
        );
    }
}
