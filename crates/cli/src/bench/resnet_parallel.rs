//! `anygrad bench resnet18-train --devices LIST`: ResNet-18 training with `DataParallel`,
//! `--batch` images per device (default 64). Reports the single-device figure (the first
//! device alone) and the data-parallel one: images/s, the scaling over one device, and the
//! gradient exchange per step (also visible in the profiler as `gradient_exchange`): the part
//! left after backward, and the host phases (download, average, upload). Each device gets its
//! own pre-made batch, as each rank of a distributed job loads its own data. With `--amp`,
//! f16 autocast and one gradient scaler for all replicas.

use anygrad::models::ResNet;
use anygrad::nn::{CrossEntropyLoss, DataParallel, GradScaler, Module, Optimizer, Sgd, SgdConfig};
use anygrad::train::parse_devices;
use anygrad::{autocast, DType, Device, Error, Result, Tensor};

use super::{median, run_resnet18_train, BenchResult};

fn synchronize_all(devices: &[Device]) -> Result<()> {
    for device in devices {
        device.synchronize()?;
    }
    Ok(())
}

/// Host seconds of a data-parallel step's phases, summed over steps.
#[derive(Default)]
struct HostPhases {
    forward_backward: f64,
    optimizer: f64,
    final_wait: f64,
}

/// Single-device and data-parallel ResNet-18 training steps.
pub fn run_resnet18_train_parallel(
    devices: &str,
    batch_per_device: usize,
    amp: bool,
) -> Result<Vec<BenchResult>> {
    let devices = parse_devices(devices)?;
    if amp {
        if let Some(device) = devices.iter().find(|d| !d.supports_f16()) {
            return Err(Error::invalid(
                "bench resnet18-train --amp",
                format!("{device} cannot compute in f16"),
            ));
        }
    }
    let mut results = run_resnet18_train(&devices[0], batch_per_device, amp)?;
    let single_rate = results.first().map(|r| r.value).unwrap_or(f64::NAN);

    let model = DataParallel::new(&devices, |device| {
        Ok(Box::new(ResNet::resnet18(1000, device)?) as Box<dyn Module>)
    })?;
    model.train();
    let mut optimizer = model.optimizer(|parameters| {
        Ok(Box::new(Sgd::new(parameters, SgdConfig::new(0.01).momentum(0.9))?) as _)
    })?;
    let images = devices
        .iter()
        .map(|d| Tensor::randn(&[batch_per_device, 3, 224, 224], DType::F32, d))
        .collect::<Result<Vec<_>>>()?;
    let labels = devices
        .iter()
        .map(|d| Tensor::randint(0, 1000, &[batch_per_device], d))
        .collect::<Result<Vec<_>>>()?;
    let loss_fn = CrossEntropyLoss::new();
    // Under --amp one scaler for every replica (they hold the same averaged gradients, so its
    // overflow check agrees for all and every replica skips the same steps).
    let mut scaler = GradScaler::default();
    // Host time of the step's phases, summed over the timed steps: the replicas' forward and
    // backward with the exchange (until every gradient is averaged), and the optimizer step.
    let mut host = HostPhases::default();
    // f32 steps apply the optimizer bucket by bucket during the exchange
    // (`forward_backward_step`) unless ANYGRAD_OVERLAP_OPTIMIZER=0 asks for the step after it.
    let overlap_optimizer =
        std::env::var("ANYGRAD_OVERLAP_OPTIMIZER").map_or(true, |v| v.trim() != "0");
    let mut step = |host: &mut HostPhases| -> Result<()> {
        optimizer.zero_grad();
        let started = std::time::Instant::now();
        if amp {
            let scale = scaler.scale_value();
            {
                let _autocast = autocast(DType::F16, &devices[0])?;
                model.forward_backward_scattered(&images, &labels, |output, target| {
                    loss_fn.forward(output, target)?.mul_scalar(scale)
                })?;
            }
            let exchanged = std::time::Instant::now();
            host.forward_backward += (exchanged - started).as_secs_f64();
            scaler.step(&mut optimizer)?;
            host.optimizer += exchanged.elapsed().as_secs_f64();
            scaler.update();
            Ok(())
        } else {
            if overlap_optimizer {
                model.forward_backward_step_scattered(
                    &images,
                    &labels,
                    |output, target| loss_fn.forward(output, target),
                    &mut optimizer,
                )?;
                host.forward_backward += started.elapsed().as_secs_f64();
            } else {
                model.forward_backward_scattered(&images, &labels, |output, target| {
                    loss_fn.forward(output, target)
                })?;
                let exchanged = std::time::Instant::now();
                host.forward_backward += (exchanged - started).as_secs_f64();
                optimizer.step()?;
                host.optimizer += exchanged.elapsed().as_secs_f64();
            }
            Ok(())
        }
    };
    for _ in 0..2 {
        step(&mut host)?;
    }
    host = HostPhases::default();
    synchronize_all(&devices)?;
    model.reset_exchange_stats();
    let iterations = 8;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = std::time::Instant::now();
        step(&mut host)?;
        let recorded = std::time::Instant::now();
        synchronize_all(&devices)?;
        host.final_wait += recorded.elapsed().as_secs_f64();
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let step_ms = median(&samples);
    let count = devices.len();
    let rate = (batch_per_device * count) as f64 / (step_ms * 1e-3);
    let exchange = model.exchange_stats();
    let per_step = |seconds: f64| seconds * 1e3 / exchange.steps.max(1) as f64;
    let names: Vec<String> = devices.iter().map(|d| d.description()).collect();
    results.push(BenchResult {
        bench: "resnet18-train-dp".into(),
        framework: "anygrad",
        device: format!("{count} devices: {}", names.join(", ")),
        dtype: if amp { "float16-amp" } else { "float32" }.into(),
        size: format!("{batch_per_device}x{count}"),
        median_ms: step_ms,
        min_ms: samples.first().copied().unwrap_or(f64::NAN),
        max_ms: samples.last().copied().unwrap_or(f64::NAN),
        iterations: samples.len(),
        value: rate,
        unit: "images/s",
        peak_memory_bytes: None,
        peak_requested_bytes: None,
        note: Some(format!(
            "scaling {:.2}x over one device ({single_rate:.1} images/s); gradient exchange after backward {:.2} ms/step ({:.0}% of the step, {:.1} MB of f32 gradients in {} buckets, overlapped with backward); host phases per step: download {:.2} ms, average {:.2} ms, upload {:.2} ms, optimizer during the exchange {:.2} ms; the step's host time: forward, backward and exchange {:.2} ms, optimizer {:.2} ms, final device wait {:.2} ms",
            rate / single_rate,
            exchange.mean_ms(),
            100.0 * exchange.mean_ms() / step_ms,
            exchange.bytes_per_step as f64 / 1e6,
            model.bucket_count(),
            per_step(exchange.download_seconds),
            per_step(exchange.average_seconds),
            per_step(exchange.upload_seconds),
            per_step(exchange.optimizer_seconds),
            host.forward_backward * 1e3 / iterations as f64,
            host.optimizer * 1e3 / iterations as f64,
            host.final_wait * 1e3 / iterations as f64,
        )),
    });
    Ok(results)
}
