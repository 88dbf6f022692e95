//! Tests of the cooperative-matrix attention backward: naga validates the hardware and
//! emulated sources (no GPU needed), and the emulated kernels run on any f16 device against
//! the CPU composite's gradients (the operands and cases of `attention/coop/tests.rs`).

use super::*;
use crate::backend::gpu::attention::coop::backward::fold::fold_applies;
use crate::backend::gpu::attention::coop::backward::layout::{eight_subgroups, workgroup_bytes};
use crate::backend::gpu::attention::coop::tests::{run, worst, Case};
use crate::backend::gpu::runtime::shader_check::translate;

/// Both passes' hardware and emulated sources, in both layouts, parse, validate and translate
/// to SPIR-V (naga's defaults and wgpu's Vulkan options on the H200) for widths the catalogue
/// does not list too; and the workgroup memory the header of
/// `attention/coop/backward/source.rs` states.
#[test]
fn coop_attention_backward_sources_validate() {
    for pass in [CoopBackwardPass::KeyValue, CoopBackwardPass::Query] {
        let shapes = [(16, 128, 2), (112, 32, 2), (64, 64, 4), (128, 48, 2)];
        for (head_dim, value_dim, subgroups) in shapes {
            let folds =
                pass == CoopBackwardPass::KeyValue && fold_applies(head_dim, subgroups, false);
            for (causal, key_bias) in [(true, false), (false, true)] {
                for (emulated, fold_query) in
                    [(false, false), (true, false), (false, folds), (true, folds)]
                {
                    let key = CoopBackward {
                        pass,
                        head_dim,
                        value_dim,
                        causal,
                        key_bias,
                        subgroups,
                        emulated,
                        fold_query,
                    };
                    let source = key.source();
                    assert_eq!(source.contains("coopMultiplyAdd"), !emulated);
                    assert_eq!(source.contains("key_bias_data"), key_bias);
                    assert_eq!(source.contains("atomicAdd"), fold_query);
                    translate(&format!("{key:?}"), &source);
                }
            }
        }
    }
    // The eight-subgroup kernels (block in registers; at d = 64 the key-value kernel folds
    // with its keys' B fragments in registers): widths that are multiples of 32 up to 64,
    // hardware only.
    let eight_shapes = [(64, 64), (32, 64), (64, 32), (32, 32)];
    for pass in [CoopBackwardPass::KeyValue, CoopBackwardPass::Query] {
        for (head_dim, value_dim) in eight_shapes {
            assert_eq!(fold_applies(head_dim, 8, false), head_dim == 64);
            assert!(!fold_applies(head_dim, 8, true));
            for (causal, key_bias) in [(true, false), (false, true), (false, false)] {
                let folds = pass == CoopBackwardPass::KeyValue && head_dim == 64 && !causal;
                for fold_query in [false, folds] {
                    let key = CoopBackward {
                        pass,
                        head_dim,
                        value_dim,
                        causal,
                        key_bias,
                        subgroups: 8,
                        emulated: false,
                        fold_query,
                    };
                    assert!(eight_subgroups(&key));
                    let source = key.source();
                    assert!(source.contains("@workgroup_size(256)"));
                    assert_eq!(source.contains("atomicAdd"), fold_query);
                    assert_eq!(source.contains("let kb0 = "), fold_query);
                    translate(&format!("{key:?}"), &source);
                }
            }
        }
    }
    for (head_dim, value_dim, emulated) in [
        (48, 64, false),
        (64, 16, false),
        (64, 64, true),
        (128, 128, false),
    ] {
        let key = CoopBackward {
            pass: CoopBackwardPass::KeyValue,
            head_dim,
            value_dim,
            causal: false,
            key_bias: false,
            subgroups: 8,
            emulated,
            fold_query: false,
        };
        assert!(!eight_subgroups(&key), "{key:?}");
    }
    // The fold's pairs share out evenly: d = 64 and 128 with four subgroups, 32 to 128 with
    // two; not 16 or 48, nor 32 with four. Eight subgroups fold from registers at 64 only.
    for (head_dim, subgroups, applies) in [
        (64, 8, true),
        (32, 8, false),
        (128, 8, false),
        (16, 8, false),
        (64, 4, true),
        (128, 4, true),
        (32, 2, true),
        (96, 2, true),
        (32, 4, false),
        (48, 2, false),
        (16, 2, false),
    ] {
        assert_eq!(
            fold_applies(head_dim, subgroups, false),
            applies,
            "d = {head_dim}, G = {subgroups}"
        );
    }
    let bytes = |pass, width, key_bias, subgroups| {
        workgroup_bytes(&CoopBackward {
            pass,
            head_dim: width,
            value_dim: width,
            causal: false,
            key_bias,
            subgroups,
            emulated: false,
            fold_query: false,
        })
    };
    let (key_value, query) = (CoopBackwardPass::KeyValue, CoopBackwardPass::Query);
    // 48 KiB (the H200) hold four subgroups at d = 64, two at 128. Up to 64 the query
    // kernel's block fragments live in registers and its walk reuses their space (43,008 and
    // 43,136 bytes before).
    assert_eq!(bytes(key_value, 64, true, 4), 48384);
    assert_eq!(bytes(key_value, 64, true, 8), 48384);
    assert_eq!(bytes(key_value, 64, false, 8), 48384);
    assert_eq!(bytes(query, 64, false, 8), 37888);
    assert_eq!(bytes(query, 64, true, 8), 38016);
    assert_eq!(bytes(query, 64, false, 4), 28672);
    assert_eq!(bytes(query, 64, true, 4), 28800);
    assert_eq!(bytes(key_value, 128, false, 2), 45312);
    assert_eq!(bytes(query, 128, true, 2), 42624);
    assert!(bytes(key_value, 128, false, 4) > 49152);
    assert!(bytes(query, 128, false, 4) > 49152);
    // 32 KiB (lavapipe) hold two at d = 64.
    assert!(bytes(key_value, 64, false, 2) <= 32768);
}

/// The emulated key-value and query kernels (staging, fragment addressing, masks, the
/// probabilities and score gradients, the persistent accumulators and the epilogues) inside
/// the fused op, after the scalar forward and delta kernels: the query, key and value
/// gradients against the f64 composite on the CPU, and that both kernels ran. Lengths that
/// are not multiples of the blocks or tiles, L > S and L < S, causal (key blocks that start
/// past the first query tile, and past the last query), a key-padding mask whose third batch
/// hides every key (rows without a visible key), value sizes unlike the head size, several
/// batch-heads; four subgroups at d = 16 and 32, two at 64 where the device has 32 KiB of
/// workgroup memory (lavapipe: `backward_key` picks the layout). Each case twice: with the
/// key-value kernel summing dQ where it can (`attention/coop/backward/fold.rs`), and with the query
/// kernel.
#[test]
fn emulated_backward_matches_composite() {
    let Some(gpu) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let device = crate::Device::Gpu(gpu);
    let cases: [Case; 4] = [
        (2, 1, 70, 45, 64, 64, false, false),
        (1, 2, 70, 45, 32, 48, true, false),
        (3, 1, 37, 70, 16, 16, false, true),
        (2, 1, 45, 77, 16, 32, true, false),
    ];
    EMULATE_BACKWARD.with(|flag| flag.set(true));
    let folded = || FOLDED_RUNS.with(std::cell::Cell::get);
    let folded_before = folded();
    for (case, no_fold) in cases.iter().flat_map(|&case| [(case, false), (case, true)]) {
        NO_FOLD.with(|flag| flag.set(no_fold));
        let runs = || EMULATED_BACKWARD_RUNS.with(std::cell::Cell::get);
        let (before, folded_case) = (runs(), folded());
        let (_, grads) = run(case, &device, DType::F16);
        NO_FOLD.with(|flag| flag.set(false));
        // One kernel where the key-value kernel summed dQ, else the key-value and query ones.
        let kernels = if folded() > folded_case { 1 } else { 2 };
        assert!(!no_fold || kernels == 2, "{case:?}: folded when refused");
        assert_eq!(
            runs(),
            before + kernels,
            "{case:?}: the cooperative backward did not run"
        );
        let (_, expected) = run(case, &crate::Device::Cpu, DType::F64);
        for (name, (got, expected)) in ["query", "key", "value"]
            .iter()
            .zip(grads.iter().zip(expected.iter()))
        {
            // f16 operands, P and dS give about 1e-3 here; a slip in a mask, the scale or a
            // tile offset gives 1e-2 or more.
            let error = worst(got, expected);
            assert!(error < 5e-3, "{case:?}: {name} gradient off by {error}");
        }
    }
    EMULATE_BACKWARD.with(|flag| flag.set(false));
    // d = 64 folds in either layout where the device adds f32 atomically (lavapipe does).
    if float_atomics_or_skip(&device, "the check that some case summed dQ") {
        assert!(
            folded() > folded_before,
            "no case summed dQ in the key-value kernel"
        );
    }
}

/// Whether the GPU `device` adds f32 atomically; where it does not, skips `part` of the test
/// (a failure under `ANYGRAD_REQUIRE_FLOAT_ATOMICS=1`).
fn float_atomics_or_skip(device: &crate::Device, part: &str) -> bool {
    use crate::backend::tests::support::{has_or_skip, Requirement};
    match device {
        crate::Device::Gpu(gpu) => has_or_skip(gpu, Requirement::FloatAtomics, part),
        crate::Device::Cpu => false,
    }
}

/// The key-value kernel that sums dQ (emulated, on any f16 device with float atomics) keeps
/// each batch-head's sums to itself: an infinite value in the first batch's values makes its
/// gradients NaN (its query rows past the length, 45 of a 64-row tile, included), while the
/// second batch's query gradient stays finite and equal to the CPU composite's.
#[test]
fn folded_query_gradient_stays_in_its_batch_head() {
    use crate::backend::gpu::attention::coop::tests::{attend, data};
    let Some(gpu) = crate::backend::tests::support::f16_gpu_device() else {
        return;
    };
    let device = crate::Device::Gpu(gpu);
    if !float_atomics_or_skip(&device, "the test") {
        return;
    }
    let (batch, length, keys, width) = (2, 45, 40, 64);
    let mut value = data(batch * keys * width, 3);
    value[5] = f32::INFINITY;
    let operands = || {
        [
            (data(batch * length * width, 1), [batch, 1, length, width]),
            (data(batch * keys * width, 2), [batch, 1, keys, width]),
            (value.clone(), [batch, 1, keys, width]),
        ]
    };
    let weights = data(batch * length * width, 4);
    EMULATE_BACKWARD.with(|flag| flag.set(true));
    let before = FOLDED_RUNS.with(std::cell::Cell::get);
    let (_, grads) = attend(
        operands(),
        None,
        false,
        weights.clone(),
        &device,
        DType::F16,
    );
    EMULATE_BACKWARD.with(|flag| flag.set(false));
    assert!(
        FOLDED_RUNS.with(std::cell::Cell::get) > before,
        "the fold did not run"
    );
    let (_, expected) = attend(
        operands(),
        None,
        false,
        weights,
        &crate::Device::Cpu,
        DType::F64,
    );
    let head = length * width;
    assert!(
        grads[0][..head].iter().any(|g| g.is_nan()),
        "the first batch's dQ is not NaN"
    );
    let error = worst(&grads[0][head..], &expected[0][head..]);
    assert!(error < 5e-3, "the second batch's dQ off by {error}");
}
