//! Elementwise fusion on a GPU: chains of float elementwise ops run as one kernel, with no
//! change to the code that writes them. This program computes `a*b + a` and a batch-norm-like
//! normalization, shows how many kernels the ops became (`fusion_stats`), checks the result
//! against the same ops with fusion off, and times both ways.
//!
//! Run: `cargo run --release -p anygrad --example fusion` (uses the best device, or the one
//! `ANYGRAD_DEVICE` names; on the CPU, which does not fuse, it says so).

use std::time::Instant;

use anygrad::prelude::*;

/// `a*b + a`, then a per-channel normalization with broadcast statistics and a relu.
fn work(a: &Tensor, b: &Tensor, mean: &Tensor, scale: &Tensor) -> Result<Tensor> {
    let mixed = a.mul(b)?.add(a)?;
    mixed.sub(mean)?.mul(scale)?.relu()
}

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("device: {}", device.description());
    let shape = [64, 32, 32, 32];
    let a = Tensor::randn(&shape, DType::F32, &device)?;
    let b = Tensor::randn(&shape, DType::F32, &device)?;
    let mean = Tensor::randn(&[1, 32, 1, 1], DType::F32, &device)?;
    let scale = Tensor::rand(&[1, 32, 1, 1], DType::F32, &device)?;
    device.synchronize()?;

    let Some(before) = anygrad::fusion_stats(&device) else {
        println!("the CPU backend runs every op as it comes (no fusion); try a GPU");
        return Ok(());
    };
    let fused = work(&a, &b, &mean, &scale)?;
    device.synchronize()?;
    let after = anygrad::fusion_stats(&device).unwrap_or(before);
    println!(
        "{} elementwise ops ran as {} kernel(s)",
        after.ops_deferred - before.ops_deferred,
        after.kernels - before.kernels
    );

    anygrad::set_elementwise_fusion(false);
    let unfused = work(&a, &b, &mean, &scale)?;
    let difference = fused.sub(&unfused)?.abs()?.max_all()?.item_f64()?;
    println!("largest difference fused vs unfused: {difference:e}");

    for enabled in [true, false] {
        anygrad::set_elementwise_fusion(enabled);
        let mut kept = work(&a, &b, &mean, &scale)?;
        device.synchronize()?;
        let start = Instant::now();
        for _ in 0..20 {
            kept = work(&a, &b, &mean, &scale)?;
        }
        device.synchronize()?;
        drop(kept);
        let label = if enabled { "fused" } else { "unfused" };
        println!(
            "{label:>8}: {:.3} ms per call",
            start.elapsed().as_secs_f64() * 1e3 / 20.0
        );
    }
    anygrad::set_elementwise_fusion(true);
    Ok(())
}
