//! Tests of the cooperative-matrix attention forward: naga validates the hardware source
//! (no GPU needed), and the emulated kernel runs on any f16 device against the CPU composite.

use super::*;
use crate::backend::gpu::attention::coop::layout::{key_tile, KEY_TILE};
use crate::backend::gpu::runtime::shader_check::translate;
use crate::dtype::DType;

/// The hardware (and emulated) sources parse, validate and translate to SPIR-V, with naga's
/// defaults and as wgpu's Vulkan backend does on the H200, for widths the catalogue does not
/// list too.
#[test]
fn coop_attention_sources_validate() {
    let layouts = [
        (16, 128, 4),
        (112, 32, 4),
        (64, 64, 4),
        (64, 64, 8),
        (128, 64, 8),
    ];
    for (head_dim, value_dim, subgroups) in layouts {
        for (causal, key_bias) in [(true, false), (false, true)] {
            for emulated in [false, true] {
                for mode in [ForwardMode::Exact, ForwardMode::Uniform, ForwardMode::Redo] {
                    for double_buffered in [false, true] {
                        let key = CoopForward {
                            head_dim,
                            value_dim,
                            causal,
                            key_bias,
                            subgroups,
                            emulated,
                            double_buffered,
                            mode,
                        };
                        let source = key.source();
                        assert_eq!(source.contains("coopMultiplyAdd"), !emulated);
                        assert_eq!(source.contains("bias_tile"), key_bias);
                        assert_eq!(source.contains("flag_data"), mode != ForwardMode::Exact);
                        translate(&format!("{key:?}"), &source);
                    }
                }
            }
        }
    }
    let sized = |width, key_bias, subgroups, emulated| {
        workgroup_bytes(&CoopForward {
            head_dim: width,
            value_dim: width,
            key_bias,
            emulated,
            ..sized_key(subgroups)
        })
    };
    let bytes = |width, key_bias, emulated| sized(width, key_bias, 4, emulated);
    // With 16-key tiles and Q staged 32 columns at a time, eight subgroups take 21 KiB at
    // 64 with a key bias (at most 23 KiB: the H200 runs two a multiprocessor) and 25 KiB at
    // 128 (the H200 has 48); their emulation stages Q whole and does not fit lavapipe's 32.
    assert_eq!(sized(64, true, 8, false), 21056);
    assert_eq!(sized(128, false, 8, false), 25088);
    assert!(sized(64, false, 8, true) > 32768);
    // Four subgroups: 17 KiB at 128 with a key bias, 12.5 KiB at 64 (23 with 32-key tiles).
    assert_eq!(bytes(128, true, false), 16960);
    assert_eq!(bytes(64, false, false), 12800);
    // The emulation stages Q whole, in a region of its own.
    assert_eq!(bytes(64, false, true), 22016);
    // Widths whose 16-key tile does not share out evenly keep 32-key tiles.
    assert_eq!(
        key_tile(&CoopForward {
            head_dim: 48,
            value_dim: 16,
            ..sized_key(4)
        }),
        KEY_TILE
    );
    assert_eq!(
        key_tile(&CoopForward {
            head_dim: 64,
            value_dim: 64,
            ..sized_key(8)
        }),
        16
    );
}

/// A uniform, single-buffered hardware key of `subgroups` subgroups at d = dv = 64, without
/// a mask.
fn sized_key(subgroups: u32) -> CoopForward {
    CoopForward {
        head_dim: 64,
        value_dim: 64,
        causal: false,
        key_bias: false,
        subgroups,
        emulated: false,
        double_buffered: false,
        mode: ForwardMode::Uniform,
    }
}

/// Deterministic values in [-1.5, 1.5).
pub(crate) fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005) ^ 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
        })
        .collect()
}

/// `(batch, heads, query length, key length, head size, value size, causal, masked)`.
pub(crate) type Case = (usize, usize, usize, usize, usize, usize, bool, bool);

/// The output and the query, key and value gradients of `(sdpa(q, k, v, mask) * w).sum()`
/// on `device` in `dtype`; `masked`: an additive key-padding mask `[B, 1, 1, S]` in `dtype`
/// (`-inf` hides a key; batch 0 hides every third key and adds -0.75 ..= 0.75 to the others,
/// batch 1 hides all keys past the fifth, later batches every key). Bool masks become the
/// same bias with zeros (`attention_fused.rs`).
pub(crate) fn run(case: Case, device: &crate::Device, dtype: DType) -> (Vec<f32>, [Vec<f32>; 3]) {
    let (batch, heads, length, keys, head_dim, value_dim, causal, masked) = case;
    let operand = |rows: usize, width: usize, seed: u64| {
        (
            data(batch * heads * rows * width, seed),
            [batch, heads, rows, width],
        )
    };
    let mask = masked.then(|| {
        let bias: Vec<f32> = (0..batch * keys)
            .map(|i| match i / keys {
                0 if i % 3 != 1 => (i % 7) as f32 * 0.25 - 0.75,
                1 if i % keys < 5 => 0.0,
                _ => f32::NEG_INFINITY,
            })
            .collect();
        (bias, [batch, 1, 1, keys])
    });
    attend(
        [
            operand(length, head_dim, 1),
            operand(keys, head_dim, 2),
            operand(keys, value_dim, 3),
        ],
        mask,
        causal,
        data(batch * heads * length * value_dim, 4),
        device,
        dtype,
    )
}

/// The output and the query, key and value gradients of `(sdpa(q, k, v, mask) * weights)
/// .sum()` on `device` in `dtype`, from the operands' and the mask's values and shapes.
pub(crate) fn attend(
    operands: [(Vec<f32>, [usize; 4]); 3],
    mask: Option<(Vec<f32>, [usize; 4])>,
    causal: bool,
    weights: Vec<f32>,
    device: &crate::Device,
    dtype: DType,
) -> (Vec<f32>, [Vec<f32>; 3]) {
    use crate::{Device, Tensor};
    let tensor = |values: Vec<f32>, shape: &[usize]| {
        Tensor::from_vec(values, shape, &Device::Cpu)
            .and_then(|t| t.to_dtype(dtype))
            .and_then(|t| t.to_device(device))
            .expect("operand")
    };
    let [query, key, value] =
        operands.map(|(values, shape)| tensor(values, &shape).requires_grad_(true));
    let mask = mask.map(|(values, shape)| tensor(values, &shape));
    let out =
        crate::scaled_dot_product_attention(&query, &key, &value, mask.as_ref(), 0.0, causal, None)
            .expect("attention");
    out.mul(&tensor(weights, out.shape()))
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    let values = |t: &Tensor| -> Vec<f32> { t.to_vec_f32().expect("values") };
    let grad = |t: &Tensor| values(&t.grad().expect("gradient"));
    (values(&out), [grad(&query), grad(&key), grad(&value)])
}

/// Largest error relative to `1 + |expected|` (infinite where either is NaN: `f32::max` would
/// skip a NaN).
pub(crate) fn worst(got: &[f32], expected: &[f32]) -> f32 {
    assert_eq!(got.len(), expected.len());
    got.iter()
        .zip(expected)
        .map(|(g, e)| {
            let error = (g - e).abs() / (1.0 + e.abs());
            if error.is_nan() {
                f32::INFINITY
            } else {
                error
            }
        })
        .fold(0.0, f32::max)
}

/// Output and gradients of `case` on `device` in f16 against the f64 composite on the CPU,
/// and that `ran` (a count read before and after) went up by `runs`.
fn check(case: Case, device: &crate::Device, ran: &dyn Fn() -> u64, runs: u64) {
    let before = ran();
    let (out, grads) = run(case, device, DType::F16);
    assert_eq!(
        ran(),
        before + runs,
        "{case:?}: the cooperative kernels did not run"
    );
    let (expected_out, expected_grads) = run(case, &crate::Device::Cpu, DType::F64);
    let error = worst(&out, &expected_out);
    // f16 rounding gives about 5e-4 here; a 1% slip in the softmax fails.
    assert!(error < 3e-3, "{case:?}: output off by {error}");
    for (name, (got, expected)) in ["query", "key", "value"]
        .iter()
        .zip(grads.iter().zip(expected_grads.iter()))
    {
        let error = worst(got, expected);
        assert!(error < 5e-3, "{case:?}: {name} gradient off by {error}");
    }
}

/// The emulated cooperative forward (its staging, fragment addressing, masks, online softmax,
/// rescaling and epilogue) inside the fused op: output and gradients (the scalar backward
/// kernels on its log-sum-exp) against the f64 composite on the CPU; lengths that are not
/// multiples of the 64-row blocks or 32-key tiles, L < S and L > S, causal, a key-padding
/// mask with a batch that hides most keys, value sizes unlike the head size; and that the
/// cooperative kernel ran, asked for K and V in two buffers wherever they fit (head sizes up
/// to 48 in lavapipe's 32 KiB; the launcher itself takes two only where they cost no
/// workgroup memory, never in the emulation, whose Q has a region of its own).
#[test]
fn emulated_forward_matches_composite() {
    let Some(gpu) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let device = crate::Device::Gpu(gpu.clone());
    let cases: [Case; 4] = [
        (2, 1, 37, 45, 64, 64, false, false),
        (1, 2, 70, 33, 32, 48, true, false),
        (2, 1, 37, 70, 16, 16, false, true),
        (1, 1, 19, 21, 48, 16, true, false),
    ];
    EMULATE.with(|flag| flag.set(true));
    ANY_SIZE_DOUBLE.with(|flag| flag.set(true));
    for case in cases {
        check(
            case,
            &device,
            &|| EMULATED_RUNS.with(std::cell::Cell::get),
            1,
        );
        let ran = LAST_FORWARD
            .with(std::cell::Cell::get)
            .expect("a forward ran");
        let doubled = CoopForward {
            double_buffered: true,
            ..ran
        };
        let fits =
            workgroup_bytes(&doubled) <= gpu.context().limits.max_compute_workgroup_storage_size;
        assert_eq!(ran.double_buffered, fits, "{case:?}: {ran:?}");
    }
    ANY_SIZE_DOUBLE.with(|flag| flag.set(false));
    EMULATE.with(|flag| flag.set(false));
}

/// The hardware kernels, where the device has usable cooperative matrices (the H200): the
/// same checks on larger cases, head size 128 included; the cooperative backward
/// (`attention/coop/backward.rs`) runs too, each case both with the key-value kernel summing
/// dQ (where the device adds f32 atomically and the head size allows) and with the separate
/// query kernel.
#[test]
fn hardware_forward_matches_composite() {
    let Some(gpu) = crate::backend::tests::support::gpu_device() else {
        return;
    };
    if !gpu.cooperative_attention() {
        crate::backend::tests::support::skip_missing(
            &gpu,
            crate::backend::tests::support::Requirement::Coop,
            "the test",
        );
        return;
    }
    let device = crate::Device::Gpu(gpu.clone());
    let cases: [Case; 6] = [
        (2, 1, 37, 45, 64, 64, false, false),
        (2, 3, 200, 130, 64, 64, true, false),
        (2, 2, 100, 77, 128, 128, false, false),
        (2, 2, 100, 77, 64, 64, false, true),
        (1, 2, 70, 33, 32, 48, true, false),
        (2, 1, 37, 70, 16, 16, false, true),
    ];
    use crate::backend::gpu::attention::coop::backward::{FOLDED_RUNS, NO_FOLD};
    let folded = || FOLDED_RUNS.with(std::cell::Cell::get);
    let folded_before = folded();
    for (case, no_fold) in cases.iter().flat_map(|&case| [(case, false), (case, true)]) {
        NO_FOLD.with(|flag| flag.set(no_fold));
        let (before, folded_case) = (gpu.cooperative_attention_dispatches(), folded());
        // Forward, key-value and query kernels: a key-value kernel that summed dQ counts for
        // the query kernel too.
        check(
            case,
            &device,
            &|| HARDWARE_RUNS.with(std::cell::Cell::get) + folded(),
            3,
        );
        NO_FOLD.with(|flag| flag.set(false));
        // The forward, then the key-value kernel that summed dQ, or it and the query kernel.
        let kernels = if folded() > folded_case { 2 } else { 3 };
        assert!(!no_fold || kernels == 3, "{case:?}: folded when refused");
        assert!(gpu.cooperative_attention_dispatches() >= before + kernels);
    }
    if crate::backend::tests::support::has_or_skip(
        &gpu,
        crate::backend::tests::support::Requirement::FloatAtomics,
        "the check that some case summed dQ",
    ) {
        assert!(
            folded() > folded_before,
            "no case summed dQ in the key-value kernel"
        );
    }
    assert_eq!(gpu.cooperative_attention_failure(), None);
}

/// Scores that rise along the keys, by a different rate on each query row (0, 0.25, 0.5 and
/// 0.75 a key, so 0 to 24 per 32-key tile: flat rows and rows whose max rises a little or a
/// lot every tile): the forward's online softmax, which rescales the row's running sum and
/// its output every tile, against the f64 composite on the CPU (output, and the query and
/// key gradients, which read the forward's log-sum-exp). Emulated on any f16 device, and the
/// hardware kernel where there is one.
#[test]
fn forward_rescales_rising_scores() {
    use crate::Device;
    let Some(gpu) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let device = Device::Gpu(gpu.clone());
    let run = |device: &Device, dtype: DType| rising_scores(device, dtype);
    let expected = run(&Device::Cpu, DType::F64);
    let mut modes = vec![true];
    if gpu.cooperative_attention() {
        modes.push(false);
    } else {
        crate::backend::tests::support::skip_missing(
            &gpu,
            crate::backend::tests::support::Requirement::Coop,
            "the hardware kernel",
        );
    }
    // Each with K and V in two buffers (asked for wherever they fit) and in one.
    let runs = modes
        .iter()
        .flat_map(|&emulated| [(emulated, false), (emulated, true)]);
    for (emulated, single) in runs {
        SINGLE_BUFFER.with(|flag| flag.set(single));
        ANY_SIZE_DOUBLE.with(|flag| flag.set(!single));
        EMULATE.with(|flag| flag.set(emulated));
        let before = (
            EMULATED_RUNS.with(std::cell::Cell::get),
            HARDWARE_RUNS.with(std::cell::Cell::get),
        );
        let got = run(&device, DType::F16);
        let after = (
            EMULATED_RUNS.with(std::cell::Cell::get),
            HARDWARE_RUNS.with(std::cell::Cell::get),
        );
        EMULATE.with(|flag| flag.set(false));
        SINGLE_BUFFER.with(|flag| flag.set(false));
        ANY_SIZE_DOUBLE.with(|flag| flag.set(false));
        if emulated {
            assert_eq!(after.0, before.0 + 1, "the emulated forward did not run");
        } else {
            assert!(after.1 > before.1, "the hardware forward did not run");
        }
        // Scores reach 0.6 · 99 · 0.1 · 16 / 4 ≈ 24: f16 keys and weights give about 1e-3.
        let error = worst(&got.0, &expected.0);
        assert!(
            error < 5e-3,
            "emulated {emulated}, single buffer {single}: output off by {error}"
        );
        for (name, got, expected) in [("query", &got.1, &expected.1), ("key", &got.2, &expected.2)]
        {
            let error = worst(got, expected);
            assert!(
                error < 2e-2,
                "emulated {emulated}: {name} gradient off by {error}"
            );
        }
    }
}

/// The forward of [`forward_rescales_rising_scores`]: output, query and key gradients.
fn rising_scores(device: &crate::Device, dtype: DType) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let (heads, length, keys, width) = (2, 70, 100, 16);
    // Every value exact in f16, so that the f64 reference sees the same numbers.
    let round = |values: Vec<f32>| -> Vec<f32> {
        values
            .into_iter()
            .map(|x| half::f16::from_f32(x).to_f32())
            .collect()
    };
    let query: Vec<f32> = (0..heads * length * width)
        .map(|i| ((i / width) % length % 4) as f32 * 0.5)
        .collect();
    let key: Vec<f32> = (0..heads * keys * width)
        .map(|i| ((i / width) % keys) as f32 * 0.125)
        .collect();
    let (out, [query_grad, key_grad, _]) = attend(
        [
            (query, [1, heads, length, width]),
            (key, [1, heads, keys, width]),
            (
                round(data(heads * keys * width, 7)),
                [1, heads, keys, width],
            ),
        ],
        None,
        false,
        round(data(heads * length * width, 4)),
        device,
        dtype,
    );
    (out, query_grad, key_grad)
}

/// The uniform forward (`attention/coop/uniform.rs`) without its redo: as exact as the
/// per-row forward where the rows of a subgroup drift together (random scores, masks, causal),
/// and wrong where one row's max rises by far more than another's after their first tile
/// (the rising scores: flat rows beside rows rising 24 a tile), which is what its flags and
/// the redo are for — with the redo those rows are right
/// ([`forward_rescales_rising_scores`]). Emulated on any f16 device, and the hardware kernel
/// where there is one.
#[test]
fn uniform_forward_alone_is_exact_until_rows_drift_apart() {
    use crate::Device;
    let Some(gpu) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let device = Device::Gpu(gpu.clone());
    let (rising, _, _) = rising_scores(&Device::Cpu, DType::F64);
    let cases: [Case; 3] = [
        (2, 1, 37, 45, 64, 64, false, false),
        (2, 1, 37, 70, 16, 16, false, true),
        (1, 2, 70, 100, 32, 48, true, false),
    ];
    let expected: Vec<Vec<f32>> = cases
        .iter()
        .map(|&case| run(case, &Device::Cpu, DType::F64).0)
        .collect();
    let mut modes = vec![true];
    if gpu.cooperative_attention() {
        modes.push(false);
    } else {
        crate::backend::tests::support::skip_missing(
            &gpu,
            crate::backend::tests::support::Requirement::Coop,
            "the hardware kernel",
        );
    }
    for emulated in modes {
        EMULATE.with(|flag| flag.set(emulated));
        SKIP_REDO.with(|flag| flag.set(true));
        let before = EMULATED_RUNS.with(std::cell::Cell::get);
        let outputs: Vec<Vec<f32>> = cases
            .iter()
            .map(|&case| run(case, &device, DType::F16).0)
            .collect();
        let (drifted, _, _) = rising_scores(&device, DType::F16);
        SKIP_REDO.with(|flag| flag.set(false));
        EMULATE.with(|flag| flag.set(false));
        if emulated {
            let runs = EMULATED_RUNS.with(std::cell::Cell::get) - before;
            assert_eq!(runs, 4, "the emulated forward did not run");
        }
        for ((case, got), expected) in cases.iter().zip(&outputs).zip(&expected) {
            let error = worst(got, expected);
            assert!(error < 3e-3, "emulated {emulated} {case:?}: off by {error}");
        }
        let error = worst(&drifted, &rising);
        assert!(
            error > 0.1,
            "emulated {emulated}: drifted rows came out right ({error}) without the redo"
        );
    }
}
