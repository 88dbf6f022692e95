//! Tests of the cooperative-matrix attention backward: naga validates the hardware and
//! emulated sources (no GPU needed), and the emulated kernels run on any f16 device against
//! the CPU composite's gradients (the operands and cases of `attention_coop/tests.rs`).

use super::super::attention_coop::tests::{run, worst, Case};
use super::super::attention_coop_backward_source::workgroup_bytes;
use super::super::matmul_coop::tests::translate;
use super::*;

/// Both passes' hardware and emulated sources, in both layouts, parse, validate and translate
/// to SPIR-V (naga's defaults and wgpu's Vulkan options on the H200) for widths the catalogue
/// does not list too; and the workgroup memory the header of
/// `attention_coop_backward_source.rs` states.
#[test]
fn coop_attention_backward_sources_validate() {
    for pass in [CoopBackwardPass::KeyValue, CoopBackwardPass::Query] {
        for (head_dim, value_dim, subgroups) in [(16, 128, 2), (112, 32, 2), (64, 64, 4)] {
            for (causal, key_bias) in [(true, false), (false, true)] {
                for emulated in [false, true] {
                    let key = CoopBackward {
                        pass,
                        head_dim,
                        value_dim,
                        causal,
                        key_bias,
                        subgroups,
                        emulated,
                    };
                    let source = key.source();
                    assert_eq!(source.contains("coopMultiplyAdd"), !emulated);
                    assert_eq!(source.contains("key_bias_data"), key_bias);
                    translate(&format!("{key:?}"), &source);
                }
            }
        }
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
        })
    };
    let (key_value, query) = (CoopBackwardPass::KeyValue, CoopBackwardPass::Query);
    // 48 KiB (the H200) hold four subgroups at d = 64, two at 128. Up to 64 the query
    // kernel's block fragments live in registers and its walk reuses their space (43,008 and
    // 43,136 bytes before).
    assert_eq!(bytes(key_value, 64, true, 4), 48384);
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
/// workgroup memory (lavapipe: `backward_key` picks the layout).
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
    for case in cases {
        let runs = || EMULATED_BACKWARD_RUNS.with(std::cell::Cell::get);
        let before = runs();
        let (_, grads) = run(case, &device, DType::F16);
        assert_eq!(
            runs(),
            before + 2,
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
}
