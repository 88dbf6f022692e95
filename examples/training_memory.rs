//! Training memory, seen from the caching allocator: a small conv → batch norm → relu → max
//! pool network takes one step, and `memory_stats` shows what each phase keeps alive. The
//! forward keeps only what backward reads ("saved tensors"), `backward()` frees them as it
//! goes, and `backward_retain_graph()` keeps them for a second backward.
//!
//! Run: `cargo run --release -p anygrad --example training_memory` (best device; the CPU has no
//! caching allocator, so there only the steps run and no figures print).

use anygrad::nn::{BatchNorm2d, Conv2d, Conv2dOptions, MaxPool2d, Module, ReLU, Sequential};
use anygrad::prelude::*;

fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn report(device: &Device, phase: &str) -> Result<()> {
    device.synchronize()?;
    if let Some(stats) = anygrad::memory_stats(device) {
        println!(
            "{phase:<28} requested {:>8.1} MB   allocated {:>8.1} MB   peak {:>8.1} MB",
            megabytes(stats.requested_bytes),
            megabytes(stats.allocated_bytes),
            megabytes(stats.peak_allocated_bytes)
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let (device, _) = Device::best_available();
    println!("device: {}", device.description());
    let model = Sequential::new()
        .add(Conv2d::new(
            3,
            32,
            (3, 3),
            Conv2dOptions::default(),
            &device,
        )?)
        .add(BatchNorm2d::new_2d(32, &device)?)
        .add(ReLU)
        .add(MaxPool2d::new(2));
    let images = Tensor::randn(&[32, 3, 64, 64], DType::F32, &device)?;
    let activation = 32 * 32 * 62 * 62 * 4;
    println!(
        "one conv output is {:.1} MB; the composite ops would keep several of them",
        megabytes(activation)
    );
    report(&device, "before the step")?;

    let loss = model.forward(&images)?.square()?.mean_all()?;
    report(&device, "after forward")?;
    loss.backward_retain_graph()?;
    report(&device, "after backward (retained)")?;
    loss.backward()?;
    report(&device, "after a second backward")?;
    match loss.backward() {
        Ok(()) => println!("a third backward ran (unexpected)"),
        Err(error) => println!("a third backward is refused: {error}"),
    }
    let conv_weight_grad = model
        .parameters()
        .first()
        .and_then(|parameter| parameter.grad())
        .map(|grad| grad.shape().to_vec());
    println!(
        "the conv weight's gradient has shape {conv_weight_grad:?} (two backwards accumulated)"
    );
    Ok(())
}
