//! Mixed precision on tensor cores, seen from the user's side: where the GPU has cooperative
//! matrices (16x16x16 f16 x f16 -> f32), f16 matmuls and, under `autocast`, convolutions and
//! their gradients run on them. The program prints what the device offers, times a 2048³
//! matmul in f32 and f16, then one forward + backward step of a ResNet-style convolution in
//! f32 and under autocast, counts the tensor-core convolution dispatches of that step, and
//! checks the autocast step's weight gradient against the f32 one, and profiles that step: its
//! ops, then their kernels one by one.
//!
//! `ANYGRAD_COOP_MATMUL` and `ANYGRAD_COOP_CONV=off` turn the kernels off to compare.
//!
//! Run: `cargo run --release -p anygrad --example tensor_cores` (the first GPU; on a machine
//! without one it says so and stops).

use std::time::Instant;

use anygrad::nn::{Conv2d, Conv2dOptions, Module};
use anygrad::prelude::*;

/// Milliseconds per call of `work` (10 calls after a warm-up that also lets the autotuner
/// time the candidates of each new shape).
fn time(device: &Device, work: &dyn Fn() -> Result<()>) -> Result<f64> {
    work()?;
    device.synchronize()?;
    let start = Instant::now();
    for _ in 0..10 {
        work()?;
    }
    device.synchronize()?;
    Ok(start.elapsed().as_secs_f64() * 1e3 / 10.0)
}

fn main() -> Result<()> {
    let device = match Device::gpu(0) {
        Ok(device) => device,
        Err(error) => {
            println!("no GPU ({error}): tensor cores need one");
            return Ok(());
        }
    };
    let Device::Gpu(gpu) = &device else {
        return Ok(());
    };
    println!("device: {}", device.description());
    println!(
        "16x16x16 f16 -> f32 cooperative matrices: {}",
        gpu.has_cooperative_f16_f32()
    );
    println!("f16 matmul kernel: {:?}", gpu.cooperative_matmul());
    println!(
        "channels-last tensor-core convolutions: {}",
        gpu.channels_last_conv()
    );

    // A square matmul in f32 and f16.
    let n = 2048;
    for dtype in [DType::F32, DType::F16] {
        let a = Tensor::randn(&[n, n], DType::F32, &device)?.to_dtype(dtype)?;
        let b = Tensor::randn(&[n, n], DType::F32, &device)?.to_dtype(dtype)?;
        let ms = time(&device, &|| {
            drop(a.matmul(&b)?);
            Ok(())
        })?;
        let tflops = 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12;
        println!("matmul {n}³ {dtype}: {ms:.3} ms, {tflops:.1} TFLOPS");
    }

    // One training step of a 3x3 convolution (64 -> 64 channels, 56x56, batch 16).
    let options = Conv2dOptions::default().padding(1).bias(false);
    let conv = Conv2d::square(64, 64, 3, options, &device)?;
    let x = Tensor::randn(&[16, 64, 56, 56], DType::F32, &device)?;
    let step = |amp: bool| -> Result<Tensor> {
        conv.weight.zero_grad();
        {
            let _autocast = if amp {
                Some(autocast(DType::F16, &device)?)
            } else {
                None
            };
            // A sum, scaled so that the f16 output gradient (2e-3 · y) stays in f16's normal
            // range (a mean over 3.2M outputs would underflow it: what a gradient scaler is
            // for).
            let loss = conv
                .forward(&x)?
                .to_dtype(DType::F32)?
                .square()?
                .sum_all()?
                .mul_scalar(1e-3)?;
            loss.backward()?;
        }
        conv.weight
            .grad()
            .ok_or_else(|| Error::invalid("tensor_cores", "no weight gradient"))
    };
    let mut gradients = Vec::new();
    for amp in [false, true] {
        let ms = time(&device, &|| step(amp).map(drop))?;
        let before = gpu.cooperative_conv_dispatches();
        gradients.push(step(amp)?);
        device.synchronize()?;
        let dispatches = gpu.cooperative_conv_dispatches() - before;
        let mode = if amp { "autocast f16" } else { "f32" };
        println!("conv step ({mode}): {ms:.3} ms, {dispatches} tensor-core convolution dispatches");
    }
    let difference = gradients[1]
        .to_dtype(DType::F32)?
        .sub(&gradients[0])?
        .abs()?
        .max_all()?
        .item_f64()?;
    let scale = gradients[0].abs()?.max_all()?.item_f64()?;
    println!(
        "weight gradient, autocast vs f32: largest difference {:.2e} (relative {:.2e})",
        difference,
        difference / scale.max(1e-30)
    );
    // Where one autocast step's device time goes, op by op.
    let (_, recorded) = anygrad::profiler::profile(|| step(true))?;
    println!("{}", recorded.key_averages().table());
    // Each op's kernels timed one by one (GPU timestamps): the channels-last copies against
    // the tensor-core products.
    println!("{}", recorded.kernel_averages().table(12, 70));
    Ok(())
}
