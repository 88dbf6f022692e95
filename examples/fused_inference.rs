//! Fused inference kernels: a ResNet-style convolution with its eval-mode batch norm, the
//! block's shortcut and ReLU (`conv_batch_norm`, one `conv2d_epilogue` kernel), layer
//! normalization and softmax (one kernel each). The program runs each fused and as the modules
//! or composites it replaces, prints the ops the profiler saw and the largest difference, and
//! times both; under f16 autocast it shows the weight's kept f16 copy (one cast, first call).
//!
//! Run: `cargo run --release -p anygrad --example fused_inference` (uses the best device).

use std::time::Instant;

use anygrad::nn::{conv_batch_norm, BatchNorm2d, Conv2d, Conv2dOptions, LayerNorm, Module};
use anygrad::prelude::*;
use anygrad::profiler::profile;
use anygrad::EpilogueActivation;

/// The ops one call of `work` records, and its result.
fn recorded(work: &dyn Fn() -> Result<Tensor>) -> Result<(Tensor, Vec<String>)> {
    let (out, profile) = profile(work)?;
    Ok((out, profile.events.into_iter().map(|e| e.name).collect()))
}

/// Milliseconds per call of `work` (20 calls after a warm-up).
fn time(device: &Device, work: &dyn Fn() -> Result<Tensor>) -> Result<f64> {
    drop(work()?);
    device.synchronize()?;
    let start = Instant::now();
    for _ in 0..20 {
        drop(work()?);
    }
    device.synchronize()?;
    Ok(start.elapsed().as_secs_f64() * 1e3 / 20.0)
}

/// Runs `fused` and `plain`, prints their ops, difference and times.
fn compare(
    name: &str,
    device: &Device,
    fused: &dyn Fn() -> Result<Tensor>,
    plain: &dyn Fn() -> Result<Tensor>,
) -> Result<()> {
    let (fast, fast_ops) = recorded(fused)?;
    let (slow, slow_ops) = recorded(plain)?;
    let difference = fast.sub(&slow)?.abs()?.max_all()?.item_f64()?;
    println!("{name}");
    println!("  fused ops:     {fast_ops:?}");
    println!("  composite ops: {slow_ops:?}");
    println!("  largest difference {difference:.2e}");
    println!(
        "  {:.3} ms fused, {:.3} ms composite per call",
        time(device, fused)?,
        time(device, plain)?
    );
    Ok(())
}

fn main() -> Result<()> {
    let (device, _) = Device::best_available();
    println!("device: {}", device.description());
    let _inference = no_grad();

    // A ResNet block's second convolution: conv, batch norm (eval mode), + shortcut, relu.
    let options = Conv2dOptions::default().padding(1).bias(false);
    let conv = Conv2d::square(64, 64, 3, options, &device)?;
    let bn = BatchNorm2d::new_2d(64, &device)?;
    bn.running_var
        .set(Tensor::rand(&[64], DType::F32, &device)?.add_scalar(0.5)?);
    bn.eval();
    let x = Tensor::randn(&[16, 64, 28, 28], DType::F32, &device)?;
    let shortcut = Tensor::randn(&[16, 64, 28, 28], DType::F32, &device)?;
    compare(
        "conv + batch norm + shortcut + relu",
        &device,
        &|| conv_batch_norm(&x, &conv, &bn, Some(&shortcut), EpilogueActivation::Relu),
        &|| bn.forward(&conv.forward(&x)?)?.add(&shortcut)?.relu(),
    )?;

    // Under f16 autocast, inference keeps the parameters' f16 copies between calls: the first
    // call casts the input, the shortcut and the weight, the next ones only the input and the
    // shortcut, until a parameter is written in place or `clear_autocast_cache` is called.
    if device.supports_f16() {
        let _autocast = autocast(DType::F16, &device)?;
        let block = || conv_batch_norm(&x, &conv, &bn, Some(&shortcut), EpilogueActivation::Relu);
        for call in ["first call", "second call", "after clear_autocast_cache"] {
            if call.starts_with("after") {
                anygrad::clear_autocast_cache();
            }
            let (_, ops) = recorded(&block)?;
            let casts = ops.iter().filter(|op| *op == "cast").count();
            println!("autocast, {call}: {casts} casts ({ops:?})");
        }
    }

    // Layer normalization and softmax over rows of 384 and 128.
    let norm = LayerNorm::new(&[384], &device)?;
    let hidden = Tensor::randn(&[64, 128, 384], DType::F32, &device)?;
    compare("layer norm", &device, &|| norm.forward(&hidden), &|| {
        let mean = hidden.mean(&[-1], true)?;
        let centered = hidden.sub(&mean)?;
        let var = centered.square()?.mean(&[-1], true)?;
        centered.mul(&var.add_scalar(1e-5)?.rsqrt()?)
    })?;
    let scores = Tensor::randn(&[64, 12, 128, 128], DType::F32, &device)?;
    compare("softmax", &device, &|| scores.softmax(-1), &|| {
        let exp = scores.sub(&scores.max(&[-1], true)?)?.exp()?;
        exp.div(&exp.sum(&[-1], true)?)
    })?;
    Ok(())
}
