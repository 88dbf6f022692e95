//! Deterministic algorithms, as `torch.use_deterministic_algorithms(True)`: the same bits on
//! every run. The program trains nothing; it runs the two GPU computations that add floats
//! atomically by default, twice each, with the switch off and on, and prints whether the two
//! runs agree bit for bit and how far apart the two settings are:
//! - the gradient of `gather` (a `scatter_add` where the picked indices repeat);
//! - the f16 attention backward (`scaled_dot_product_attention`) at head size 128, whose
//!   query gradient the tensor-core key-value kernel sums with float atomics where the device
//!   has them (as at head size 64 without a causal mask; at 32 two eight-subgroup kernels
//!   run, atomic-free, either way).
//!
//! With the switch on, the first runs a GPU kernel that sums in the CPU's fixed order (the CPU
//! itself, counted by the CPU-fallback statistics, only for calls too large for that kernel)
//! and the second takes its separate query kernel. `ANYGRAD_DETERMINISTIC=1`
//! turns the switch on for a whole program.
//!
//! Run: `cargo run --release -p anygrad --example deterministic` (the best device; on the CPU
//! every run is the same anyway).

use anygrad::fallback::fallback_stats;
use anygrad::prelude::*;
use anygrad::{scaled_dot_product_attention, use_deterministic_algorithms};

/// The gradient of `x.gather(1, picks).sum()`, where each of 8 columns is picked 64 times.
fn gather_gradient(device: &Device) -> Result<Vec<f32>> {
    let x = Tensor::randn(&[16, 8], DType::F32, device)?.requires_grad_(true);
    let picks: Vec<f32> = (0..16 * 512).map(|i| ((i * 5) % 8) as f32).collect();
    let picks = Tensor::from_vec(picks, &[16, 512], &Device::Cpu)?
        .to_dtype(DType::I32)?
        .to_device(device)?;
    let weights = Tensor::randn(&[16, 512], DType::F32, device)?;
    x.gather(1, &picks)?.mul(&weights)?.sum_all()?.backward()?;
    x.grad().expect("x needs a gradient").to_vec::<f32>()
}

/// The query gradient of one f16 attention call, 4 x 8 heads x 256 tokens x 128.
fn attention_gradient(device: &Device) -> Result<Vec<f32>> {
    let operand = || -> Result<Tensor> {
        Ok(Tensor::randn(&[4, 8, 256, 128], DType::F16, device)?.requires_grad_(true))
    };
    let (query, key, value) = (operand()?, operand()?, operand()?);
    let out = scaled_dot_product_attention(&query, &key, &value, None, 0.0, false, None)?;
    out.to_dtype(DType::F32)?.sum_all()?.backward()?;
    query
        .grad()
        .expect("the query needs a gradient")
        .to_dtype(DType::F32)?
        .to_vec::<f32>()
}

/// A computation that returns the values to compare.
type Work<'a> = &'a dyn Fn() -> Result<Vec<f32>>;

/// Run `work` twice from the same seed: whether the two results are equal bit for bit.
fn twice(work: Work) -> Result<(Vec<f32>, bool)> {
    anygrad::manual_seed(7);
    let first = work()?;
    anygrad::manual_seed(7);
    let second = work()?;
    let same = first
        .iter()
        .zip(&second)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    Ok((first, same))
}

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("device: {}", device.description());
    let work: [(&str, Work); 2] = [
        ("gather gradient", &|| gather_gradient(&device)),
        ("attention query gradient (f16)", &|| {
            attention_gradient(&device)
        }),
    ];
    for (name, work) in work {
        use_deterministic_algorithms(false);
        let (fast, fast_same) = twice(work)?;
        use_deterministic_algorithms(true);
        let (exact, exact_same) = twice(work)?;
        let largest = fast
            .iter()
            .zip(&exact)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        println!(
            "{name}: two runs identical: {fast_same} (default), {exact_same} (deterministic); \
             largest difference between the two settings {largest:.2e}"
        );
    }
    let fallbacks = fallback_stats();
    if let Some(stats) = fallbacks.get("scatter_add (deterministic)") {
        println!(
            "scatter_add ran {} times on the CPU for determinism ({} bytes copied: too large for the ordered GPU kernel)",
            stats.calls, stats.bytes_moved
        );
    }
    Ok(())
}
