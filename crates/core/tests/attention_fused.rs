//! Tests of the fused GPU path of `scaled_dot_product_attention` (on the CPU the same tests
//! run the composite): the output and the gradients of `(out * w).sum()` with respect to
//! query, key and value equal the composite's, computed in f64 on the CPU, for head sizes 16
//! and 64 (one and two staged vec4 blocks per row), causal and not, query and key lengths
//! that differ and are not multiples of the 64-row blocks or the 32-row tiles, a value size
//! unlike the head size, non-contiguous inputs, f16, f32 inputs under f16 autocast, Bool and
//! additive key-padding masks (`[B, 1, 1, S]` and `[S]`, a batch whose keys are all masked
//! giving zero rows and gradients); and
//! the fused forward's peak GPU memory stays far below the `[B, H, L, S]` scores that the
//! composite allocates (a GPU-only test: the CPU has neither the fused kernel nor memory
//! statistics).

use anygrad_core::{
    autocast, memory_stats, no_grad, reset_peak_memory, scaled_dot_product_attention,
    set_fused_attention, set_fused_attention_mode, DType, Device, FusedAttention, Tensor,
};
use anygrad_testing::{assert_close, values};

/// Deterministic values in [-1.5, 1.5) (a fixed sequence per `seed`).
fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
        })
        .collect()
}

/// One attention case: `[batch, heads, length, width]` operands.
struct Case {
    batch: usize,
    heads: usize,
    length: usize,
    keys: usize,
    head_dim: usize,
    value_dim: usize,
    causal: bool,
    mask: Mask,
}

/// The attention mask of a case.
#[derive(Clone, Copy, PartialEq)]
enum Mask {
    None,
    /// Bool `[B, 1, 1, S]`: batch 0 masks every third key, batch 1 masks all of them.
    BoolPadding,
    /// Additive `[B, 1, 1, S]`: finite biases, `-inf` on keys 5.. of batch 1.
    AdditivePadding,
    /// Additive `[S]` shared by every batch and head (`-inf` on every fourth key).
    AdditiveKeys,
}

/// The mask of `case` on `device` (additive masks in `dtype`).
fn mask(case: &Case, dtype: DType, device: &Device) -> Option<Tensor> {
    let (batch, keys) = (case.batch, case.keys);
    let padded = [batch, 1, 1, keys];
    let tensor = match case.mask {
        Mask::None => return None,
        Mask::BoolPadding => {
            let attend: Vec<bool> = (0..batch * keys)
                .map(|i| i / keys == 0 && i % 3 != 1)
                .collect();
            Tensor::from_vec(attend, &padded, &Device::Cpu)
        }
        Mask::AdditivePadding => {
            let bias: Vec<f32> = (0..batch * keys)
                .map(|i| match (i / keys, i % keys) {
                    (1, key) if key >= 5 => f32::NEG_INFINITY,
                    (_, key) => -0.25 * (key % 5) as f32,
                })
                .collect();
            Tensor::from_vec(bias, &padded, &Device::Cpu).and_then(|t| t.to_dtype(dtype))
        }
        Mask::AdditiveKeys => {
            let bias: Vec<f32> = (0..keys)
                .map(|key| {
                    if key % 4 == 2 {
                        f32::NEG_INFINITY
                    } else {
                        0.1 * key as f32
                    }
                })
                .collect();
            Tensor::from_vec(bias, &[keys], &Device::Cpu).and_then(|t| t.to_dtype(dtype))
        }
    };
    Some(tensor.and_then(|t| t.to_device(device)).expect("mask"))
}

/// The output and the query, key and value gradients of `(sdpa(q, k, v) * w).sum()` on
/// `device` in `dtype`; `transposed`: q, k, v are `[b, l, h, d]` storages viewed as
/// `[b, h, l, d]` (not contiguous).
fn run(case: &Case, device: &Device, dtype: DType, transposed: bool) -> (Vec<f32>, [Vec<f32>; 3]) {
    let make = |length: usize, width: usize, seed: u64| {
        let shape = if transposed {
            [case.batch, length, case.heads, width]
        } else {
            [case.batch, case.heads, length, width]
        };
        let numel = shape.iter().product();
        let t = Tensor::from_vec(data(numel, seed), &shape, &Device::Cpu)
            .and_then(|t| t.to_dtype(dtype))
            .and_then(|t| t.to_device(device))
            .expect("operand")
            .requires_grad_(true);
        let view = if transposed {
            t.transpose(1, 2).expect("transpose")
        } else {
            t.clone()
        };
        (t, view)
    };
    let (query, query_view) = make(case.length, case.head_dim, 1);
    let (key, key_view) = make(case.keys, case.head_dim, 2);
    let (value, value_view) = make(case.keys, case.value_dim, 3);
    let mask = mask(case, dtype, device);
    let out = scaled_dot_product_attention(
        &query_view,
        &key_view,
        &value_view,
        mask.as_ref(),
        0.0,
        case.causal,
        None,
    )
    .expect("attention");
    let weights = Tensor::from_vec(data(out.numel(), 4), out.shape(), &Device::Cpu)
        .and_then(|t| t.to_dtype(out.dtype()))
        .and_then(|t| t.to_device(device))
        .expect("weights");
    out.mul(&weights)
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    let grad = |t: &Tensor| values(&t.grad().expect("gradient"));
    (values(&out), [grad(&query), grad(&key), grad(&value)])
}

/// Compare `device` in `dtype` with the f64 composite on the CPU.
fn check(case: &Case, device: &Device, dtype: DType, transposed: bool, tolerance: f32) {
    let masked = case.mask != Mask::None;
    let what = format!(
        "d {} dv {} L {} S {} causal {} masked {masked} {dtype:?} transposed {transposed}",
        case.head_dim, case.value_dim, case.length, case.keys, case.causal
    );
    let (out, grads) = run(case, device, dtype, transposed);
    let (expected_out, expected_grads) = run(case, &Device::Cpu, DType::F64, transposed);
    assert_close(
        &out,
        &expected_out,
        tolerance,
        tolerance,
        &format!("{what}: output"),
    );
    for (name, (got, expected)) in ["query", "key", "value"]
        .iter()
        .zip(grads.iter().zip(expected_grads.iter()))
    {
        assert_close(
            got,
            expected,
            tolerance,
            tolerance,
            &format!("{what}: {name} gradient"),
        );
    }
}

/// Both head sizes, causal and not, L < S and L > S (lavapipe compiles every kernel variant
/// slowly: the list is kept short).
fn cases() -> Vec<Case> {
    [
        (16, false, 37, 45),
        (16, true, 70, 33),
        (64, false, 70, 33),
        (64, true, 37, 45),
    ]
    .into_iter()
    .map(|(head_dim, causal, length, keys)| Case {
        batch: 2,
        heads: 2,
        length,
        keys,
        head_dim,
        value_dim: head_dim,
        causal,
        mask: Mask::None,
    })
    .collect()
}

fn fused_matches_composite_f32(device: &Device) {
    for case in cases() {
        check(&case, device, DType::F32, false, 1e-4);
    }
}

/// A value size unlike the head size (the second tile size, 16 rows, for width 128), and
/// non-contiguous inputs (copied to dense rows first).
fn uneven_widths_and_strided_inputs(device: &Device) {
    let wide = Case {
        batch: 1,
        heads: 1,
        length: 19,
        keys: 21,
        head_dim: 128,
        value_dim: 8,
        causal: true,
        mask: Mask::None,
    };
    check(&wide, device, DType::F32, false, 1e-4);
    let narrow = Case {
        batch: 2,
        heads: 2,
        length: 9,
        keys: 66,
        head_dim: 4,
        value_dim: 20,
        causal: false,
        mask: Mask::None,
    };
    check(&narrow, device, DType::F32, true, 1e-4);
}

/// Key-padding masks take the fused path (a bias per key) and agree with the composite,
/// including the zero rows and gradients of a batch whose keys are all masked.
fn key_padding_masks(device: &Device) {
    for (mask, head_dim) in [
        (Mask::BoolPadding, 16),
        (Mask::AdditivePadding, 64),
        (Mask::AdditiveKeys, 16),
    ] {
        let case = Case {
            batch: 2,
            heads: 2,
            length: 37,
            keys: 45,
            head_dim,
            value_dim: head_dim,
            causal: false,
            mask,
        };
        check(&case, device, DType::F32, false, 1e-4);
    }
}

fn fused_matches_composite_f16(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "fused_matches_composite_f16") {
        return;
    }
    for case in [&cases()[1], &cases()[2]] {
        let folds_before = match device {
            Device::Gpu(gpu) => gpu.cooperative_attention_folds(),
            Device::Cpu => 0,
        };
        check(case, device, DType::F16, false, 3e-2);
        // d = 64 without a causal mask sums dQ in the key-value kernel in every layout where
        // tensor cores and float atomics run it (`attention_coop_fold.rs`).
        if let Device::Gpu(gpu) = device {
            if gpu.cooperative_attention()
                && gpu.info().float_atomics
                && case.head_dim == 64
                && !case.causal
            {
                assert!(
                    gpu.cooperative_attention_folds() > folds_before,
                    "d = 64, {} queries against {} keys: dQ was not summed in the key-value kernel",
                    case.length,
                    case.keys
                );
            }
        }
    }
}

/// Under f16 autocast, f32 operands give an f32 output close to the f32 result, and f32
/// gradients.
fn autocast_keeps_f32_interface(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_keeps_f32_interface") {
        return;
    }
    let case = &cases()[1];
    let (plain, plain_grads) = run(case, device, DType::F32, false);
    let (cast, cast_grads) = {
        let _guard = autocast(DType::F16, device).expect("autocast");
        run(case, device, DType::F32, false)
    };
    assert_close(&cast, &plain, 3e-2, 3e-2, "autocast output");
    for (got, expected) in cast_grads.iter().zip(plain_grads.iter()) {
        assert_close(got, expected, 5e-2, 5e-2, "autocast gradient");
    }
}

/// The fused forward never holds the `[B, H, L, S]` scores: with L = S = 1024 and d = 16 the
/// scores take 4 MiB against 64 KiB per operand. The composite's peak (the path forced with
/// `set_fused_attention(false)`) shows that the measurement sees them; the default policy
/// takes the kernel for every f32 call, and in f16 for a call whose gradients will be taken;
/// a small f16 inference call takes the kernel where tensor cores run it and the composite
/// elsewhere.
fn fused_forward_memory_is_linear(device: &Device) {
    let Device::Gpu(gpu) = device else {
        panic!("{device}: a GPU-only test ran elsewhere");
    };
    let (length, width) = (1024, 16);
    let operand = |seed| {
        Tensor::from_vec(data(length * width, seed), &[1, 1, length, width], device)
            .expect("operand")
    };
    let (query, key, value) = (operand(1), operand(2), operand(3));
    let scores_bytes = (length * length * 4) as u64;
    // A key-padding mask (every key but the last attends) takes the fused path too.
    let attend: Vec<bool> = (0..length).map(|key| key + 1 < length).collect();
    let padding = Tensor::from_vec(attend, &[1, 1, 1, length], device).expect("mask");
    let tracked = |t: &Tensor| t.detach().requires_grad_(true);
    let (query_tracked, key_tracked, value_tracked) =
        (tracked(&query), tracked(&key), tracked(&value));
    let half = |t: &Tensor| t.to_dtype(DType::F16).expect("f16 operand");
    let halves = device
        .supports_f16()
        .then(|| (half(&query), half(&key), half(&value)));
    let peak_of_operands = |mode: FusedAttention,
                            mask: Option<&Tensor>,
                            (q, k, v): (&Tensor, &Tensor, &Tensor)| {
        set_fused_attention_mode(mode);
        device.synchronize().expect("sync");
        let before = memory_stats(device).expect("stats").requested_bytes;
        reset_peak_memory(device);
        let out = scaled_dot_product_attention(q, k, v, mask, 0.0, false, None).expect("attention");
        device.synchronize().expect("sync");
        let peak = memory_stats(device).expect("stats").peak_requested_bytes - before;
        drop(out);
        set_fused_attention(true);
        peak
    };
    let peak_of = |mode: FusedAttention, mask: Option<&Tensor>, needs_grad: bool| {
        let operands = if needs_grad {
            (&query_tracked, &key_tracked, &value_tracked)
        } else {
            (&query, &key, &value)
        };
        peak_of_operands(mode, mask, operands)
    };
    let fused = peak_of(FusedAttention::On, None, false);
    let masked = peak_of(FusedAttention::On, Some(&padding), false);
    let composite = peak_of(FusedAttention::Off, None, false);
    // The default policy: the kernel in f32 and when gradients will be taken; in f16 the
    // composite for a small inference call (these 2 MiB scores are below its 128 MiB
    // threshold).
    let auto_training = peak_of(FusedAttention::Auto, None, true);
    let auto_inference = peak_of(FusedAttention::Auto, None, false);
    for (what, peak) in [
        ("fused", fused),
        ("masked fused", masked),
        ("auto with gradients", auto_training),
        ("auto f32 inference", auto_inference),
    ] {
        assert!(
            peak < scores_bytes / 8,
            "{what} attention peaked at {peak} bytes (scores: {scores_bytes})"
        );
    }
    assert!(
        composite >= scores_bytes,
        "the composite path peaked at only {composite} bytes (scores: {scores_bytes})"
    );
    if let Some((q, k, v)) = &halves {
        let auto_half = peak_of_operands(FusedAttention::Auto, None, (q, k, v));
        if gpu.cooperative_attention_covers(width, width) {
            assert!(
                auto_half < scores_bytes / 8,
                "auto f16 inference on tensor cores peaked at {auto_half} bytes (scores: {})",
                scores_bytes / 2
            );
        } else {
            assert!(
                auto_half >= scores_bytes / 2,
                "auto f16 inference peaked at only {auto_half} bytes (scores: {})",
                scores_bytes / 2
            );
        }
    }
}

/// Inference on heads split from a stacked projection (`[b, l, 3 h d]` chunked, split into
/// heads, transposed: strided views) matches the f64 composite on the CPU: plain, with a
/// key-padding mask, causal, and with chunks at an offset that is no whole vec4. On the GPU
/// the fused kernel reads the views without dense copies (chunks at an odd offset are copied
/// dense first), which its peak memory shows; the CPU has no memory statistics to show it.
fn inference_reads_strided_views(device: &Device) {
    let (batch, heads, length, width) = (2, 2, 37, 16);
    let hidden = heads * width;
    let heads_of = |t: &Tensor| {
        t.reshape([batch, length, heads, width])
            .and_then(|t| t.transpose(1, 2))
            .expect("heads")
    };
    // `lead` extra columns before the stacked projection shift every chunk by that many
    // elements.
    let run = |target: &Device, dtype: DType, lead: usize, causal: bool, masked: bool| {
        let columns = lead + 3 * hidden;
        let stacked = Tensor::from_vec(
            data(batch * length * columns, 7),
            &[batch, length, columns],
            &Device::Cpu,
        )
        .and_then(|t| t.to_dtype(dtype))
        .and_then(|t| t.to_device(target))
        .and_then(|t| t.narrow(2, lead, 3 * hidden))
        .expect("projection");
        let parts = stacked.chunk(3, -1).expect("chunks");
        let (q, k, v) = (
            heads_of(&parts[0]),
            heads_of(&parts[1]),
            heads_of(&parts[2]),
        );
        let mask = masked.then(|| {
            let attend: Vec<bool> = (0..batch * length).map(|i| i % 5 != 3).collect();
            Tensor::from_vec(attend, &[batch, 1, 1, length], &Device::Cpu)
                .and_then(|t| t.to_device(target))
                .expect("mask")
        });
        let _no_graph = no_grad();
        target.synchronize().expect("sync");
        let before = memory_stats(target).map(|m| m.requested_bytes);
        reset_peak_memory(target);
        let out = scaled_dot_product_attention(&q, &k, &v, mask.as_ref(), 0.0, causal, None)
            .expect("attention");
        target.synchronize().expect("sync");
        let peak = memory_stats(target).map(|m| m.peak_requested_bytes);
        let grown = peak.zip(before).map(|(peak, before)| peak - before);
        (values(&out), grown)
    };
    let operand_bytes = (batch * heads * length * width * 4) as u64;
    for (lead, causal, masked) in [
        (0, false, false),
        (0, false, true),
        (4, true, false),
        (2, false, false),
    ] {
        let what = format!("lead {lead} causal {causal} masked {masked}");
        set_fused_attention(true);
        let (out, grown) = run(device, DType::F32, lead, causal, masked);
        let (expected, _) = run(&Device::Cpu, DType::F64, lead, causal, masked);
        assert_close(&out, &expected, 1e-4, 1e-4, &what);
        // The output and the log-sum-exp (and the mask's bias), no copy of an operand;
        // chunks at an odd offset are copied (three operands).
        let Some(grown) = grown else {
            assert!(device.is_cpu(), "{device}: no memory statistics");
            continue;
        };
        if lead % 4 == 0 {
            assert!(
                grown < 2 * operand_bytes,
                "{what}: {grown} bytes for {operand_bytes}-byte operands"
            );
        } else {
            assert!(
                grown >= 3 * operand_bytes,
                "{what}: only {grown} bytes: no dense copies?"
            );
        }
    }
}

anygrad_testing::device_tests!(
    fused_matches_composite_f32,
    uneven_widths_and_strided_inputs,
    key_padding_masks,
    fused_matches_composite_f16,
    autocast_keeps_f32_interface,
    inference_reads_strided_views;
    gpu_only: fused_forward_memory_is_linear
);
