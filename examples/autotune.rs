//! Autotuning, seen from the user's side: the first call of a convolution or matmul with a new
//! shape runs the fixed heuristic's kernel (a one-off call never waits for timing); its second
//! call times the shape's correct kernel variants on the GPU (tile sizes, split-K, Winograd for 3x3
//! stride-1 filters, dense copies for transposed operands) and every later call runs the
//! fastest. The example turns the tuner on (it is off by default on software GPUs), runs a
//! convolution and a weight-gradient-shaped matmul, prints how many candidates were timed, the
//! profiler's achieved TFLOPS per shape, and checks that the tuned results equal the CPU's.
//! The choices are kept in `autotune.json` under `ANYGRAD_CACHE_DIR` (default
//! `~/.cache/anygrad`); `ANYGRAD_AUTOTUNE_FORCE=conv2d:winograd4` would force a candidate.
//!
//! Run: `cargo run --release -p anygrad --example autotune` (the first GPU; on a machine
//! without one it says so and stops).

use anygrad::gpu::AutotuneMode;
use anygrad::prelude::*;

/// The largest |a - b| relative to the largest |b|.
fn relative_error(a: &Tensor, b: &Tensor) -> Result<f32> {
    let (a, b) = (a.to_vec_f32()?, b.to_vec_f32()?);
    let scale = b.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-12);
    let worst = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    Ok(worst / scale)
}

fn main() -> Result<()> {
    let device = match Device::gpu(0) {
        Ok(device) => device,
        Err(error) => {
            println!("no GPU ({error}); autotuning applies to GPU kernels only");
            return Ok(());
        }
    };
    let Device::Gpu(gpu) = &device else {
        unreachable!("Device::gpu returns a GPU device")
    };
    println!("device: {}", device.description());
    gpu.set_autotune_mode(AutotuneMode::On);

    // A ResNet-style 3x3 convolution and a weight gradient's product (A transposed).
    let images = Tensor::randn(&[8, 64, 28, 28], DType::F32, &Device::Cpu)?;
    let filters = Tensor::randn(&[64, 64, 3, 3], DType::F32, &Device::Cpu)?.mul_scalar(0.05)?;
    let activations = Tensor::randn(&[2048, 128], DType::F32, &Device::Cpu)?;
    let gradients = Tensor::randn(&[2048, 256], DType::F32, &Device::Cpu)?;
    let params = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let run = |device: &Device| -> Result<(Tensor, Tensor)> {
        let x = images.to_device(device)?;
        let w = filters.to_device(device)?;
        let a = activations.to_device(device)?;
        let g = gradients.to_device(device)?;
        Ok((x.conv2d(&w, None, params)?, a.t()?.matmul(&g)?))
    };

    let before = gpu.autotuned_candidates();
    run(&device)?; // first calls: the heuristic's kernels, nothing timed
    let first = gpu.autotuned_candidates();
    let (conv, product) = run(&device)?; // second calls: the candidates are timed
    let tuned = gpu.autotuned_candidates();
    println!(
        "first calls timed {} kernel candidates; second calls timed {} (a Winograd \
         candidate's batched GEMM included)",
        first - before,
        tuned - first
    );
    let (_, profile) = anygrad::profiler::profile(|| {
        for _ in 0..3 {
            run(&device)?;
        }
        device.synchronize()
    })?;
    println!(
        "three later calls timed {} more (the choices are known); they ran:",
        gpu.autotuned_candidates() - tuned
    );
    println!("{}", profile.shape_averages().table());

    let (conv_cpu, product_cpu) = run(&Device::Cpu)?;
    println!(
        "max relative error against the CPU: conv2d {:.1e}, matmul {:.1e}",
        relative_error(&conv, &conv_cpu)?,
        relative_error(&product, &product_cpu)?
    );
    Ok(())
}
