//! Tensors larger than one GPU buffer. A GPU kernel binds whole buffers of at most the
//! adapter's largest storage binding (2 GiB on an H200, 128 MiB on lavapipe and many
//! integrated GPUs); anygrad stores a larger tensor in several buffers and runs each op on
//! slices of it, so only memory limits the batch. This program lowers that limit to 16 MiB
//! (`ANYGRAD_MAX_BINDING_BYTES`, unless you set it yourself) so that a modest batch takes the
//! multi-buffer path on any GPU, trains one step of a small CNN on it, and checks the loss and
//! a gradient against the CPU.
//!
//! Run: `cargo run --release -p anygrad --example large_tensors` (best device; on the CPU
//! there is no buffer limit and both runs are the CPU).

use anygrad::nn::{
    cross_entropy, BatchNorm2d, Conv2d, Conv2dOptions, Flatten, Linear, MaxPool2d, Module, ReLU,
    Sequential,
};
use anygrad::prelude::*;

/// The same small CNN on every device (same seed, so the same initial weights).
fn network(device: &Device) -> Result<Sequential> {
    anygrad::manual_seed(3);
    Ok(Sequential::new()
        .add(Conv2d::new(
            3,
            32,
            (3, 3),
            Conv2dOptions::default().padding(1),
            device,
        )?)
        .add(BatchNorm2d::new_2d(32, device)?)
        .add(ReLU)
        .add(MaxPool2d::new(2))
        .add(Flatten::default())
        .add(Linear::new(32 * 32 * 32, 10, true, device)?))
}

/// One forward and backward on `device`: the loss and the first conv's weight gradient.
fn step(device: &Device, images: &Tensor, labels: &Tensor) -> Result<(f32, Vec<f32>)> {
    let model = network(device)?;
    model.train();
    let loss = cross_entropy(
        &model.forward(&images.to_device(device)?)?,
        &labels.to_device(device)?,
    )?;
    loss.backward()?;
    let weight = &model.named_parameters()[0].1;
    let grad = weight
        .grad()
        .ok_or_else(|| Error::invalid("large_tensors", "no gradient"))?;
    Ok((loss.item::<f32>()?, grad.to_vec::<f32>()?))
}

fn main() -> Result<()> {
    if std::env::var("ANYGRAD_MAX_BINDING_BYTES").is_err() {
        std::env::set_var("ANYGRAD_MAX_BINDING_BYTES", (16u64 << 20).to_string());
    }
    let (device, _) = Device::best_available();
    println!("device: {}", device.description());
    // 64 images of 3×64×64: the first activation is 64·32·64·64 f32 = 33.5 MB, two buffers
    // of at most 16 MiB on a GPU.
    anygrad::manual_seed(1);
    let images = Tensor::randn(&[64, 3, 64, 64], DType::F32, &Device::Cpu)?;
    let labels = Tensor::randint(0, 10, &[64], &Device::Cpu)?;
    let (loss, grad) = step(&device, &images, &labels)?;
    let (cpu_loss, cpu_grad) = step(&Device::Cpu, &images, &labels)?;
    let worst = grad
        .iter()
        .zip(&cpu_grad)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f32, f32::max);
    println!("loss on {device}: {loss:.6}   on the CPU: {cpu_loss:.6}");
    println!("largest relative difference of the conv weight gradient: {worst:.2e}");
    if let Some(stats) = anygrad::memory_stats(&device) {
        println!(
            "peak allocated on {device}: {:.1} MB",
            stats.peak_allocated_bytes as f64 / 1e6
        );
    }
    if (loss - cpu_loss).abs() > 1e-3 * (1.0 + cpu_loss.abs()) || worst > 1e-2 {
        return Err(Error::invalid(
            "large_tensors",
            "the device and the CPU disagree",
        ));
    }
    Ok(())
}
