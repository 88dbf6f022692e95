//! ResNet-18 throughput: inference (eval mode, no graph) per batch size with peak device
//! memory and the speed-up over anygrad's own CPU backend, `--batch auto` (double the batch
//! until the device runs out of memory), and one SGD training step per iteration. An
//! out-of-memory case is reported as a result and the run continues.

use anygrad::models::ResNet;
use anygrad::nn::{CrossEntropyLoss, GradScaler, Module, Optimizer, Sgd, SgdConfig};
use anygrad::{
    autocast, empty_cache, memory_stats, no_grad, reset_peak_memory, DType, Device, Error, Result,
    Tensor,
};

use super::{median, time_iterations, time_pipelined, BenchResult, Pipelined};

fn result(
    bench: &str,
    device: &Device,
    size: String,
    samples: &[f64],
    value: f64,
    unit: &'static str,
) -> BenchResult {
    BenchResult {
        bench: bench.into(),
        framework: "anygrad",
        device: device.description(),
        dtype: "float32".into(),
        size,
        median_ms: median(samples),
        min_ms: samples.first().copied().unwrap_or(f64::NAN),
        max_ms: samples.last().copied().unwrap_or(f64::NAN),
        iterations: samples.len(),
        value,
        unit,
        peak_memory_bytes: None,
        peak_requested_bytes: None,
        note: None,
    }
}

fn inference_samples(
    model: &ResNet,
    device: &Device,
    batch: usize,
    iterations: usize,
    amp: bool,
    pipelined: bool,
) -> Result<(Vec<f64>, Option<Pipelined>)> {
    let images = Tensor::randn(&[batch, 3, 224, 224], DType::F32, device)?;
    let _guard = no_grad();
    let _autocast = if amp {
        Some(autocast(DType::F16, device)?)
    } else {
        None
    };
    // The peak counts from after two passes: the first runs each new shape's heuristic kernel,
    // the second times its kernel candidates (the autotuner, on hardware GPUs), whose scratch
    // buffers are not inference's memory.
    for _ in 0..2 {
        model.forward(&images)?;
    }
    device.synchronize()?;
    // Before the peak is reset: batches in flight together are not the peak of one.
    let pipelined = pipelined
        .then(|| time_pipelined(device, iterations, || model.forward(&images).map(drop)))
        .transpose()?;
    reset_peak_memory(device);
    let samples = time_iterations(device, 1, iterations, || model.forward(&images).map(drop))?;
    Ok((samples, pipelined))
}

/// The note's account of [`time_pipelined`]'s figures.
fn pipelined_note((host, total): Pipelined) -> String {
    format!("host {host:.2} ms to issue a batch; {total:.2} ms a batch without a synchronize between batches")
}

/// Images per second of ResNet-18 inference on the CPU (measured once at a small batch: CPU
/// throughput hardly depends on the batch).
fn cpu_images_per_second() -> Result<f64> {
    let cpu = Device::Cpu;
    let model = ResNet::resnet18(1000, &cpu)?;
    model.eval();
    let batch = 8;
    let (samples, _) = inference_samples(&model, &cpu, batch, 3, false, false)?;
    Ok(batch as f64 / (median(&samples) * 1e-3))
}

/// The largest batch `--batch auto` tries on a GPU.
const GPU_AUTO_BATCH_LIMIT: usize = 4096;

/// A generous bound on the host memory one image of ResNet-18 inference needs on the CPU
/// backend (activations, im2col columns and the input: about 20 MB at 224×224).
const CPU_BYTES_PER_IMAGE: u64 = 32 << 20;

/// The memory `--batch auto` may plan for when the system does not say (4 GiB).
const CPU_FALLBACK_MEMORY: u64 = 4 << 30;

/// Bytes of memory available for new allocations: `MemAvailable` of `/proc/meminfo` on
/// Linux, a fixed 4 GiB elsewhere or when it cannot be read.
fn available_memory() -> u64 {
    super::host_memory::meminfo_bytes("MemAvailable:").unwrap_or(CPU_FALLBACK_MEMORY)
}

/// The largest batch `--batch auto` tries on the CPU: half the available memory at
/// [`CPU_BYTES_PER_IMAGE`] per image (at least 16, the first candidate, and at most the GPU
/// bound).
fn cpu_auto_batch_limit(available_bytes: u64) -> usize {
    let images = available_bytes / 2 / CPU_BYTES_PER_IMAGE;
    (images.min(GPU_AUTO_BATCH_LIMIT as u64) as usize).max(16)
}

/// Inference at each batch size (`0` = auto: double from 16 until out of memory, bounded by
/// the available memory on the CPU).
pub fn run_resnet18(
    device: &Device,
    batches: &[usize],
    with_cpu_baseline: bool,
    amp: bool,
) -> Result<Vec<BenchResult>> {
    let model = ResNet::resnet18(1000, device)?;
    model.eval();
    let cpu_rate = if with_cpu_baseline && device.is_gpu() {
        Some(cpu_images_per_second()?)
    } else {
        None
    };
    let mut results = Vec::new();
    let run_one = |batch: usize, results: &mut Vec<BenchResult>| -> Result<bool> {
        reset_peak_memory(device);
        match inference_samples(&model, device, batch, 10, amp, true) {
            Ok((samples, pipelined)) => {
                let rate = batch as f64 / (median(&samples) * 1e-3);
                let mut r = result(
                    "resnet18",
                    device,
                    batch.to_string(),
                    &samples,
                    rate,
                    "images/s",
                );
                if amp {
                    r.dtype = "float16-amp".into();
                }
                let stats = memory_stats(device);
                r.peak_memory_bytes = stats.as_ref().map(|m| m.peak_allocated_bytes);
                r.peak_requested_bytes = stats.map(|m| m.peak_requested_bytes);
                let cpu_note = cpu_rate
                    .map(|cpu| format!("{:.1}x anygrad cpu ({cpu:.1} images/s)", rate / cpu));
                r.note = [cpu_note, pipelined.map(pipelined_note)]
                    .into_iter()
                    .flatten()
                    .reduce(|first, second| format!("{first}; {second}"));
                results.push(r);
                Ok(true)
            }
            Err(error) => {
                let note = match error {
                    Error::OutOfMemory { requested, .. } => format!(
                        "OOM at batch {batch} (a {requested}-byte allocation failed)"
                    ),
                    Error::BufferTooLarge {
                        op,
                        requested,
                        limit,
                        ..
                    } => format!(
                        "batch {batch} needs a {requested}-byte tensor ({op}), above this adapter's per-buffer limit of {limit} bytes (not out of memory)"
                    ),
                    other => return Err(other),
                };
                empty_cache(device);
                let mut r = result("resnet18", device, batch.to_string(), &[], 0.0, "images/s");
                r.note = Some(note);
                results.push(r);
                Ok(false)
            }
        }
    };
    for &batch in batches {
        if batch == 0 {
            // A GPU reports out of memory; the CPU would swap or be killed first, so its
            // doubling stops at what the available memory can hold.
            let limit = if device.is_cpu() {
                cpu_auto_batch_limit(available_memory())
            } else {
                GPU_AUTO_BATCH_LIMIT
            };
            let mut candidate = 16;
            let mut largest = None;
            while candidate <= limit {
                let mut scratch = Vec::new();
                if !run_one(candidate, &mut scratch)? {
                    break;
                }
                largest = scratch.pop();
                candidate *= 2;
            }
            if let Some(mut best) = largest {
                best.size = format!("auto={}", best.size);
                results.push(best);
            }
        } else {
            run_one(batch, &mut results)?;
        }
    }
    Ok(results)
}

/// One SGD step (forward, loss, backward, update) per iteration.
pub fn run_resnet18_train(device: &Device, batch: usize, amp: bool) -> Result<Vec<BenchResult>> {
    let model = ResNet::resnet18(1000, device)?;
    model.train();
    let mut optimizer = Sgd::new(
        model.named_parameter_slots(),
        SgdConfig::new(0.01).momentum(0.9),
    )?;
    let images = Tensor::randn(&[batch, 3, 224, 224], DType::F32, device)?;
    let labels = Tensor::randint(0, 1000, &[batch], device)?;
    let loss_fn = CrossEntropyLoss::new();
    let mut scaler = GradScaler::default();
    // Host milliseconds of recording each optimizer step (under autocast: after unscaling; the
    // step reads the inf/NaN flag on the device).
    let mut update_ms = Vec::new();
    let mut step = || -> Result<()> {
        optimizer.zero_grad();
        if amp {
            let loss = {
                let _autocast = autocast(DType::F16, device)?;
                loss_fn.forward(&model.forward(&images)?, &labels)?
            };
            scaler.scale(&loss)?.backward()?;
            scaler.unscale(&optimizer)?;
            let start = std::time::Instant::now();
            scaler.step(&mut optimizer)?;
            update_ms.push(start.elapsed().as_secs_f64() * 1e3);
            scaler.update();
            Ok(())
        } else {
            let loss = loss_fn.forward(&model.forward(&images)?, &labels)?;
            loss.backward()?;
            let start = std::time::Instant::now();
            optimizer.step()?;
            update_ms.push(start.elapsed().as_secs_f64() * 1e3);
            Ok(())
        }
    };
    // The peak counts from after two steps: on a hardware GPU the second times every kernel
    // candidate of each new shape (the autotuner; the first ran the heuristic's kernels),
    // whose scratch buffers are not part of training's memory.
    step()?;
    step()?;
    device.synchronize()?;
    reset_peak_memory(device);
    let samples = time_iterations(device, 1, 8, &mut step)?;
    let rate = batch as f64 / (median(&samples) * 1e-3);
    let mut r = result(
        "resnet18-train",
        device,
        batch.to_string(),
        &samples,
        rate,
        "images/s",
    );
    if amp {
        r.dtype = "float16-amp".into();
    }
    let stats = memory_stats(device);
    r.peak_memory_bytes = stats.as_ref().map(|m| m.peak_allocated_bytes);
    r.peak_requested_bytes = stats.map(|m| m.peak_requested_bytes);
    let pipelined = pipelined_note(time_pipelined(device, 8, &mut step)?);
    r.note = Some(format!(
        "{pipelined}; optimizer step {:.2} ms on the host",
        median(&update_ms)
    ));
    Ok(vec![r])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_auto_batch_is_bounded_by_memory() {
        assert_eq!(cpu_auto_batch_limit(0), 16);
        assert_eq!(cpu_auto_batch_limit(4 << 30), 64);
        assert_eq!(cpu_auto_batch_limit(u64::MAX), GPU_AUTO_BATCH_LIMIT);
        assert!(available_memory() > 0);
    }
}
