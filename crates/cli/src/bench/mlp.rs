//! The digits MLP epoch (the training issue's figure): 64-128-64-10, Adam, batch 32, data
//! resident on the device, reshuffled every epoch; milliseconds per epoch, median over several
//! epochs after warm-up. The loop is the same as `bench/pytorch_reference.py`'s: zero_grad,
//! forward, loss, backward, step — no per-batch readback or metrics.

use anygrad::nn::{CrossEntropyLoss, Module};
use anygrad::train::{build_model, build_optimizer, load_data, OptimizerKind, TrainConfig};
use anygrad::{Device, Result};

use super::{median, BenchResult};

/// Median epoch time of the tutorial MLP on digits.
pub fn run_mlp(device: &Device, epochs: usize) -> Result<Vec<BenchResult>> {
    let config = TrainConfig::default();
    let data = load_data(&config, device)?;
    let model = build_model(config.model, &data, device)?;
    let mut optimizer = build_optimizer(OptimizerKind::Adam, config.learning_rate, model.as_ref())?;
    let loss_fn = CrossEntropyLoss::new();
    let mut samples = Vec::new();
    let mut last_loss = None;
    for epoch in 0..epochs + 2 {
        let start = std::time::Instant::now();
        for batch in data.train.iter_epoch(epoch as u64) {
            let (inputs, labels) = batch?;
            optimizer.zero_grad();
            let loss = loss_fn.forward(&model.forward(&inputs)?, &labels)?;
            loss.backward()?;
            optimizer.step()?;
            last_loss = Some(loss);
        }
        device.synchronize()?;
        if epoch >= 2 {
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    // The training really ran: the final loss is a finite number well below ln(10).
    let final_loss = last_loss
        .map(|l| l.item_f64())
        .transpose()?
        .unwrap_or(f64::NAN);
    if !(final_loss.is_finite() && final_loss < 2.0) {
        return Err(anygrad::Error::invalid(
            "bench mlp",
            format!("training diverged (loss {final_loss})"),
        ));
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let med = median(&samples);
    Ok(vec![BenchResult {
        bench: "mlp".into(),
        framework: "anygrad",
        device: device.description(),
        dtype: "float32".into(),
        size: "digits-b32".into(),
        median_ms: med,
        min_ms: samples[0],
        max_ms: samples[samples.len() - 1],
        iterations: samples.len(),
        value: med,
        unit: "ms/epoch",
        peak_memory_bytes: None,
        peak_requested_bytes: None,
        note: None,
    }])
}
