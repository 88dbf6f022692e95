//! Deterministic algorithms (`determinism.rs`): the switch, `scatter_add` with repeated
//! indices on the GPU (equal, bit for bit, to the CPU's fixed order, through the counted CPU
//! fallback), and the f16 attention backward on tensor cores (the separate query kernel, not
//! the float-atomic sum in the key-value kernel, and the same bits on every run). One test
//! function, because the switch is process-wide and tests in one binary run in parallel.

use anygrad_core::fallback::{fallback_stats, reset_fallback_stats};
use anygrad_core::{
    are_deterministic_algorithms_enabled, scaled_dot_product_attention,
    use_deterministic_algorithms, DType, Device, Tensor,
};
use anygrad_testing::{gpu_or_skip, random_tensor};

/// `base.scatter_add(1, indices, src)` with every index repeated 32 times, as f32 values.
fn scatter(device: &Device) -> Vec<f32> {
    let base = random_tensor(&[4, 8], 1, device);
    let src = random_tensor(&[4, 256], 2, device);
    let picks: Vec<f32> = (0..4 * 256).map(|i| ((i * 7) % 8) as f32).collect();
    let indices = Tensor::from_vec(picks, &[4, 256], &Device::Cpu)
        .and_then(|t| t.to_dtype(DType::I32))
        .and_then(|t| t.to_device(device))
        .expect("indices");
    base.scatter_add(1, &indices, &src)
        .and_then(|t| t.to_vec::<f32>())
        .expect("scatter_add")
}

/// The query gradient of an f16 attention call at 2 x 2 x 96 x 64 (tensor cores where the
/// device has them).
fn attention_query_grad(device: &Device) -> Vec<f32> {
    let operand = |seed| {
        random_tensor(&[2, 2, 96, 128], seed, device)
            .to_dtype(DType::F16)
            .expect("f16")
            .requires_grad_(true)
    };
    let (query, key, value) = (operand(3), operand(4), operand(5));
    let out = scaled_dot_product_attention(&query, &key, &value, None, 0.0, false, None)
        .expect("attention");
    out.to_dtype(DType::F32)
        .and_then(|t| t.sum_all())
        .and_then(|loss| loss.backward())
        .expect("backward");
    let grad = query.grad().expect("a query gradient");
    grad.to_dtype(DType::F32)
        .and_then(|t| t.to_vec::<f32>())
        .expect("readback")
}

#[test]
fn deterministic_algorithms_give_the_same_bits() {
    use_deterministic_algorithms(false);
    assert!(!are_deterministic_algorithms_enabled());
    use_deterministic_algorithms(true);
    assert!(are_deterministic_algorithms_enabled());
    let expected = scatter(&Device::Cpu);
    let Some(gpu) = gpu_or_skip("deterministic_algorithms_give_the_same_bits") else {
        return;
    };
    reset_fallback_stats();
    for _ in 0..2 {
        assert_eq!(
            scatter(&gpu),
            expected,
            "scatter_add differs from the CPU's order"
        );
    }
    let fallbacks = fallback_stats();
    assert_eq!(
        fallbacks
            .get("scatter_add (deterministic)")
            .map(|stats| stats.calls),
        Some(2)
    );
    // The attention backward: no float-atomic sum while the switch is on, and the same bits
    // twice; where the device has tensor cores and float atomics the sum runs once it is off.
    let Device::Gpu(device) = &gpu else {
        unreachable!("gpu_or_skip gives a GPU device")
    };
    let folds = device.cooperative_attention_folds();
    let first = attention_query_grad(&gpu);
    assert_eq!(attention_query_grad(&gpu), first);
    assert_eq!(device.cooperative_attention_folds(), folds);
    use_deterministic_algorithms(false);
    let fast = attention_query_grad(&gpu);
    if device.cooperative_attention() && device.info().float_atomics {
        assert!(
            device.cooperative_attention_folds() > folds,
            "no fold with the switch off"
        );
    }
    let worst = fast
        .iter()
        .zip(&first)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f32, f32::max);
    assert!(worst < 2e-3, "the two backward paths differ by {worst}");
    // The switch off: scatter_add runs its GPU kernel again (no new fallback).
    let _ = scatter(&gpu);
    assert_eq!(
        fallback_stats()
            .get("scatter_add (deterministic)")
            .map(|stats| stats.calls),
        Some(2)
    );
}
