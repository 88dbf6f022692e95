//! What a new machine's first forwards cost: ResNet-18 inference (batch 64, f32 and f16
//! autocast) timed call by call, from an empty kernel cache. The first call of each shape
//! compiles and runs the fixed heuristic's kernel; the first call after a result was read
//! back (here the second forward) times the shape's candidate kernels (autotuning, hardware
//! GPUs only); later calls run the chosen kernels. Point `ANYGRAD_CACHE_DIR` at an empty
//! folder to see a fresh machine's figures (the kernel choices and, on Vulkan, the compiled
//! pipelines are kept there).
//!
//! Run: `cargo run --release -p anygrad --example first_run [-- --amp]`.

use std::time::Instant;

use anygrad::models::ResNet;
use anygrad::nn::Module;
use anygrad::prelude::*;

fn main() -> Result<()> {
    let amp = std::env::args().any(|argument| argument == "--amp");
    let started = Instant::now();
    let device = Device::best()?;
    println!(
        "device: {} (opened in {:.2} s)",
        device.description(),
        started.elapsed().as_secs_f64()
    );
    let model = ResNet::resnet18(1000, &device)?;
    model.eval();
    let images = Tensor::randn(&[64, 3, 224, 224], DType::F32, &device)?;
    device.synchronize()?;
    let _no_grad = anygrad::no_grad();
    for call in 1..=4 {
        let begun = Instant::now();
        let logits = {
            let _autocast = if amp {
                Some(anygrad::autocast(DType::F16, &device)?)
            } else {
                None
            };
            model.forward(&images)?
        };
        let first = logits.to_dtype(DType::F32)?.to_vec_f32()?[0];
        println!(
            "forward {call} ({}): {:.3} s (logit[0] {first:.4})",
            if amp { "f16 autocast" } else { "f32" },
            begun.elapsed().as_secs_f64()
        );
    }
    println!(
        "total since start: {:.2} s",
        started.elapsed().as_secs_f64()
    );
    // Close the GPU: its compiled pipelines are written to the cache directory, so that the
    // next run on this machine loads them instead of compiling (where the driver allows).
    anygrad::gpu::shutdown();
    Ok(())
}
