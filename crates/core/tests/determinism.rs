//! Deterministic algorithms (`determinism.rs`): the switch, `scatter_add` with repeated
//! indices on the GPU (equal, bit for bit, to the CPU's fixed order, by the ordered kernel and
//! without a CPU fallback; on strided views, with an index smaller than the output, in f16,
//! and with an index out of range), and the f16 attention backward on tensor cores (the separate query kernel, not
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

/// `base.scatter_add(0, indices, src)` on views: a transposed source and a transposed 3 x 5
/// index (values `index_base + 0..4`) into a 4 x 6 base, whose last column no index element
/// reaches, in `dtype`, as f32 values.
fn scatter_views(device: &Device, dtype: DType, index_base: i32) -> anygrad_core::Result<Vec<f32>> {
    let base = random_tensor(&[4, 6], 6, device).to_dtype(dtype)?;
    let src = random_tensor(&[7, 3], 7, device).to_dtype(dtype)?.t()?;
    let picks: Vec<f32> = (0..15)
        .map(|i| ((i * 5 + 1) % 4 + index_base) as f32)
        .collect();
    let indices = Tensor::from_vec(picks, &[5, 3], &Device::Cpu)?
        .to_dtype(DType::I32)?
        .to_device(device)?
        .t()?;
    base.scatter_add(0, &indices, &src)?
        .to_dtype(DType::F32)?
        .to_vec::<f32>()
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
    // The ordered kernel: the CPU's bits, no CPU fallback.
    assert_eq!(
        scatter_views(&gpu, DType::F32, 0).expect("strided scatter_add"),
        scatter_views(&Device::Cpu, DType::F32, 0).expect("CPU scatter_add")
    );
    if anygrad_testing::f16_or_skip(
        &gpu,
        "deterministic_algorithms_give_the_same_bits (f16 scatter_add)",
    ) {
        let (on_gpu, on_cpu) = (
            scatter_views(&gpu, DType::F16, 0).expect("f16 scatter_add"),
            scatter_views(&Device::Cpu, DType::F16, 0).expect("CPU f16 scatter_add"),
        );
        for (a, b) in on_gpu.iter().zip(&on_cpu) {
            assert!(
                (a - b).abs() <= 2e-3 * (1.0 + b.abs()),
                "f16: {a} against {b}"
            );
        }
    }
    let error = scatter_views(&gpu, DType::F32, 3).expect_err("index 6 into a dim of 4");
    assert!(error.to_string().contains("scatter_add"), "{error}");
    assert!(!fallback_stats().contains_key("scatter_add (deterministic)"));
    // The attention backward: no float-atomic sum while the switch is on, and the same bits
    // twice; where the device has tensor cores and float atomics the sum runs once it is off.
    let Device::Gpu(device) = &gpu else {
        unreachable!("gpu_or_skip gives a GPU device")
    };
    // (The attention runs in f16: without it, only the scatter_add part runs.)
    let f16 = anygrad_testing::f16_or_skip(&gpu, "deterministic_algorithms_give_the_same_bits");
    let folds = device.cooperative_attention_folds();
    let first = f16.then(|| attention_query_grad(&gpu));
    if let Some(first) = &first {
        assert_eq!(&attention_query_grad(&gpu), first);
        assert_eq!(device.cooperative_attention_folds(), folds);
    }
    use_deterministic_algorithms(false);
    if let Some(first) = &first {
        let fast = attention_query_grad(&gpu);
        if device.cooperative_attention() && device.info().float_atomics {
            assert!(
                device.cooperative_attention_folds() > folds,
                "no fold with the switch off"
            );
        }
        let worst = fast
            .iter()
            .zip(first)
            .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
            .fold(0.0f32, f32::max);
        assert!(worst < 2e-3, "the two backward paths differ by {worst}");
    }
    // The switch off: scatter_add runs its atomic kernel again (no fallback).
    let sums = scatter(&gpu);
    let worst = sums
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "the atomic scatter_add differs by {worst}");
    assert!(!fallback_stats().contains_key("scatter_add (deterministic)"));
}
