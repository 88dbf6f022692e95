//! `mpirun -n N anygrad bench resnet18-train --distributed` (cargo feature `mpi`): ResNet-18
//! training with one rank per device (the rank's local index picks the GPU, or `--device`),
//! `--batch` images per rank (default 64). Every rank first times its device alone (all at
//! once, each on its own device), then the distributed steps: parameters broadcast from rank
//! 0, gradients averaged over MPI by `GradientReducer` (buckets exchanged by a communication
//! thread while backward runs). Rank 0 reports images/s over all ranks, the scaling over its
//! own single-device figure and the exchange per step; the other ranks print nothing.

use anygrad::models::ResNet;
use anygrad::nn::parallel::default_bucket_bytes;
use anygrad::nn::{
    broadcast_module, Collective, CrossEntropyLoss, GradientReducer, Module, Optimizer, Sgd,
    SgdConfig,
};
use anygrad::{DType, Device, Result, Tensor};

use super::{median, run_resnet18_train, BenchResult};

/// The bench as one MPI rank: initialize MPI, pick this rank's device (`device_text`, or
/// the GPU of its local index for `best`), run, and end the whole job if this rank fails.
pub fn run_as_rank(
    device_text: &str,
    batch: usize,
    amp: bool,
) -> std::result::Result<Vec<BenchResult>, String> {
    if amp {
        return Err("bench resnet18-train --distributed measures f32 training; drop --amp".into());
    }
    let mpi = crate::mpi::MpiCollective::init()?;
    let device = if device_text == "best" {
        Device::gpu(mpi.local_rank())
    } else {
        Device::parse(device_text)
    };
    match device.and_then(|device| run_resnet18_train_distributed(&device, batch, &mpi)) {
        Ok(results) => Ok(results),
        Err(error) => {
            eprintln!("error (rank {}): {error}", mpi.rank());
            mpi.abort(1)
        }
    }
}

/// Single-device and distributed ResNet-18 training steps on this rank's `device`; the
/// results are rank 0's (empty on other ranks).
pub fn run_resnet18_train_distributed(
    device: &Device,
    batch: usize,
    collective: &dyn Collective,
) -> Result<Vec<BenchResult>> {
    let mut results = run_resnet18_train(device, batch, false)?;
    let single_rate = results.first().map(|r| r.value).unwrap_or(f64::NAN);

    let model = ResNet::resnet18(1000, device)?;
    model.train();
    broadcast_module(&model, collective, 0)?;
    let reducer = GradientReducer::new(&model, default_bucket_bytes());
    let mut optimizer = Sgd::new(
        model.named_parameter_slots(),
        SgdConfig::new(0.01).momentum(0.9),
    )?;
    let images = Tensor::randn(&[batch, 3, 224, 224], DType::F32, device)?;
    let labels = Tensor::randint(0, 1000, &[batch], device)?;
    let loss_fn = CrossEntropyLoss::new();
    let mut step = || -> Result<()> {
        optimizer.zero_grad();
        let loss = loss_fn.forward(&model.forward(&images)?, &labels)?;
        reducer.backward(&loss, collective, device)?;
        optimizer.step()
    };
    for _ in 0..2 {
        step()?;
    }
    device.synchronize()?;
    let before = reducer.exchange_stats();
    let iterations = 8;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = std::time::Instant::now();
        step()?;
        device.synchronize()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let step_ms = median(&samples);
    let world = collective.world_size();
    let rate = (batch * world) as f64 / (step_ms * 1e-3);
    let after = reducer.exchange_stats();
    let steps = (after.steps - before.steps).max(1) as f64;
    let per_step = |later: f64, earlier: f64| (later - earlier) * 1e3 / steps;
    if collective.rank() != 0 {
        return Ok(Vec::new());
    }
    results.push(BenchResult {
        bench: "resnet18-train-mpi".into(),
        framework: "anygrad",
        device: format!("{world} MPI ranks, rank 0 on {}", device.description()),
        dtype: "float32".into(),
        size: format!("{batch}x{world}"),
        median_ms: step_ms,
        min_ms: samples.first().copied().unwrap_or(f64::NAN),
        max_ms: samples.last().copied().unwrap_or(f64::NAN),
        iterations: samples.len(),
        value: rate,
        unit: "images/s",
        peak_memory_bytes: None,
        peak_requested_bytes: None,
        note: Some(format!(
            "scaling {:.2}x over one device ({single_rate:.1} images/s on rank 0 alone); gradient exchange per step on rank 0: download {:.2} ms, all-reduce {:.2} ms, upload {:.2} ms (on the communication thread, overlapped with backward)",
            rate / single_rate,
            per_step(after.download_seconds, before.download_seconds),
            per_step(after.average_seconds, before.average_seconds),
            per_step(after.upload_seconds, before.upload_seconds),
        )),
    });
    Ok(results)
}
