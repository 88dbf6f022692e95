//! Where the host time of a training step goes: the digits MLP (64-128-64-10, Adam, batch
//! 32, data resident on the device) timed phase by phase — zero_grad, forward and loss,
//! backward, optimizer step — with no synchronization inside the step, so each figure is the
//! time the host spends recording that phase (on a GPU the kernels run behind it). The same
//! loop as `anygrad bench mlp` and `bench/step_phases.py`, which times it from Python (on
//! anygrad's package or on PyTorch) for a side-by-side reading.
//!
//! Run: `cargo run --release -p anygrad --example step_phases -- [DEVICE] [ignore]`
//! (`DEVICE`: cpu, gpu, gpu:N or best, default best; `ignore`: the loss skips targets equal
//! to -100, PyTorch's default, instead of ignoring nothing).

use std::time::Instant;

use anygrad::nn::{CrossEntropyLoss, Module};
use anygrad::train::{build_model, build_optimizer, load_data, OptimizerKind, TrainConfig};
use anygrad::{Device, Result};

fn main() -> Result<()> {
    let name = std::env::args().nth(1).unwrap_or_else(|| "best".into());
    let device = Device::parse(&name)?;
    let ignore = std::env::args().nth(2).as_deref() == Some("ignore");
    let config = TrainConfig::default();
    let data = load_data(&config, &device)?;
    let model = build_model(config.model, &data, &device)?;
    let mut optimizer = build_optimizer(OptimizerKind::Adam, config.learning_rate, model.as_ref())?;
    let loss_fn = if ignore {
        CrossEntropyLoss::new().ignore_index(-100)
    } else {
        CrossEntropyLoss::new()
    };
    let (warm_up, measured) = (2, 10);
    let mut phases = [0f64; 4];
    let (mut steps, mut total) = (0usize, 0f64);
    for epoch in 0..warm_up + measured {
        let started = Instant::now();
        for batch in data.train.iter_epoch(epoch as u64) {
            let (inputs, labels) = batch?;
            let mut marks = [Instant::now(); 5];
            optimizer.zero_grad();
            marks[1] = Instant::now();
            let loss = loss_fn.forward(&model.forward(&inputs)?, &labels)?;
            marks[2] = Instant::now();
            loss.backward()?;
            marks[3] = Instant::now();
            optimizer.step()?;
            marks[4] = Instant::now();
            if epoch >= warm_up {
                for (phase, pair) in phases.iter_mut().zip(marks.windows(2)) {
                    *phase += (pair[1] - pair[0]).as_secs_f64();
                }
                steps += 1;
            }
        }
        device.synchronize()?;
        if epoch >= warm_up {
            total += started.elapsed().as_secs_f64();
        }
    }
    let per_step = |seconds: f64| seconds / steps as f64 * 1e6;
    println!(
        "rust {} (ignore_index {}): µs a step: zero_grad {:.1}, forward and loss {:.1}, backward {:.1}, step {:.1}; epoch {:.2} ms",
        device.description(),
        if ignore { "-100" } else { "none" },
        per_step(phases[0]),
        per_step(phases[1]),
        per_step(phases[2]),
        per_step(phases[3]),
        total / measured as f64 * 1e3
    );
    Ok(())
}
