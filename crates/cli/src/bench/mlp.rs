//! The digits MLP epoch (the training issue's figure): 64-128-64-10, Adam, batch 32, data
//! resident on the device; milliseconds per epoch, median over several epochs after warm-up.

use anygrad::train::{
    build_model, build_optimizer, load_data, train_epoch, OptimizerKind, TrainConfig,
};
use anygrad::{Device, Result};

use super::{median, BenchResult};

/// Median epoch time of the tutorial MLP on digits.
pub fn run_mlp(device: &Device, epochs: usize) -> Result<Vec<BenchResult>> {
    let config = TrainConfig::default();
    let data = load_data(&config, device)?;
    let model = build_model(config.model, &data, device)?;
    let mut optimizer = build_optimizer(OptimizerKind::Adam, config.learning_rate, model.as_ref())?;
    let mut samples = Vec::new();
    for epoch in 0..epochs + 2 {
        let start = std::time::Instant::now();
        train_epoch(
            model.as_ref(),
            optimizer.as_mut(),
            &data.train,
            epoch,
            None,
            &mut |_| {},
        )?;
        device.synchronize()?;
        if epoch >= 2 {
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
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
        note: None,
    }])
}
