//! Snapshot tests of the generated kernels' WGSL. The largest kernels (large-tile and
//! cooperative-matrix matmuls, the implicit-GEMM convolutions, fused and vectorized
//! elementwise kernels, the fused attention passes) exist only as Rust string builders; these
//! tests keep the WGSL of a representative set of instantiations in
//! `crates/core/tests/snapshots/kernels/`, so a change to a generator shows as a WGSL diff in
//! review. A test fails when the generated text differs
//! from its file; `ANYGRAD_UPDATE_SNAPSHOTS=1 cargo test -p anygrad-core --lib
//! kernel_snapshots` rewrites the files instead (review the diff, then commit it).

use std::path::PathBuf;
use std::sync::Arc;

use super::attention::kernel::AttentionKernel;
use super::attention::AttentionKey;
use super::conv::kernel::ConvKernel;
use super::elementwise::kernel::ElementwiseKernel;
use super::elementwise::Access;
use super::fusion::kernel::FusedKernel;
use super::fusion::{FusedInstruction, FusedProgram};
use super::matmul::kernel::MatmulKernel;
use super::pool::kernel::PoolKernel;
use super::runtime::kernel::Kernel;
use crate::backend::gpu::attention::source::AttentionPass;
use crate::backend::gpu::matmul::coop::CoopVariant;
use crate::dtype::DType;
use crate::op::{BinaryOp, UnaryOp};

/// The folder of the snapshot files.
fn snapshot_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/kernels")
}

/// Compare `text` with the snapshot `name` (or rewrite it when `ANYGRAD_UPDATE_SNAPSHOTS=1`);
/// the error says what differs.
fn check_snapshot(name: &str, text: &str) -> Result<(), String> {
    let path = snapshot_folder().join(format!("{name}.wgsl"));
    if std::env::var("ANYGRAD_UPDATE_SNAPSHOTS").as_deref() == Ok("1") {
        std::fs::create_dir_all(snapshot_folder()).map_err(|e| e.to_string())?;
        return std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()));
    }
    let expected = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run with ANYGRAD_UPDATE_SNAPSHOTS=1 to create it)",
            path.display()
        )
    })?;
    if expected == text {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(text.lines())
        .position(|(old, new)| old != new)
        .unwrap_or_else(|| expected.lines().count().min(text.lines().count()));
    Err(format!(
        "{name}: generated WGSL differs from {} from line {} on (ANYGRAD_UPDATE_SNAPSHOTS=1 rewrites it)",
        path.display(),
        line + 1
    ))
}

/// A small fused program: `relu(x * y + s0)`, vectorized or with a strided second input.
fn sample_fused(dtype: DType, vector: bool) -> FusedProgram {
    FusedProgram {
        dtype,
        vector,
        leaf_ranks: vec![0, if vector { 0 } else { 2 }],
        leaf_rows: vec![false, false],
        scalars: 1,
        instructions: vec![
            FusedInstruction::Load { leaf: 0 },
            FusedInstruction::Load { leaf: 1 },
            FusedInstruction::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 1,
            },
            FusedInstruction::Scalar {
                op: BinaryOp::Add,
                x: 2,
                scalar: 0,
                on_left: false,
            },
            FusedInstruction::Unary {
                op: UnaryOp::Relu,
                x: 3,
            },
        ],
    }
}

/// The snapshotted instantiations: (file name, key).
fn snapshot_kernels() -> Vec<(&'static str, Box<dyn Kernel>)> {
    let mut kernels: Vec<(&'static str, Box<dyn Kernel>)> = vec![
        (
            "matmul_large_f32",
            Box::new(MatmulKernel::MatmulLarge {
                dtype: DType::F32,
                aligned: false,
            }),
        ),
        (
            "matmul_large_aligned_f16",
            Box::new(MatmulKernel::MatmulLarge {
                dtype: DType::F16,
                aligned: true,
            }),
        ),
        (
            "matmul_vector_f16",
            Box::new(MatmulKernel::MatmulVector { dtype: DType::F16 }),
        ),
        (
            "conv2d_f32",
            Box::new(ConvKernel::Conv2d {
                dtype: DType::F32,
                wide: false,
                epilogue: None,
            }),
        ),
        (
            "conv2d_epilogue_residual_relu_f16",
            Box::new(ConvKernel::Conv2d {
                dtype: DType::F16,
                wide: false,
                epilogue: Some(crate::backend::gpu::conv::epilogue::ConvEpilogueKey {
                    residual: true,
                    activation: crate::op::EpilogueActivation::Relu,
                }),
            }),
        ),
        (
            "conv2d_wide_f16",
            Box::new(ConvKernel::Conv2d {
                dtype: DType::F16,
                wide: true,
                epilogue: None,
            }),
        ),
        (
            "conv2d_backward_input_unit_stride_f32",
            Box::new(ConvKernel::Conv2dBackwardInput {
                dtype: DType::F32,
                unit_stride: true,
                wide: false,
            }),
        ),
        (
            "conv2d_backward_input_wide_f16",
            Box::new(ConvKernel::Conv2dBackwardInput {
                dtype: DType::F16,
                unit_stride: false,
                wide: true,
            }),
        ),
        (
            "conv2d_backward_weight_f32",
            Box::new(ConvKernel::Conv2dBackwardWeight {
                dtype: DType::F32,
                partial: false,
                wide: false,
                lean: false,
            }),
        ),
        (
            "conv2d_backward_weight_partial_f16",
            Box::new(ConvKernel::Conv2dBackwardWeight {
                dtype: DType::F16,
                partial: true,
                wide: false,
                lean: false,
            }),
        ),
        (
            "conv2d_backward_weight_wide_lean_partial_f32",
            Box::new(ConvKernel::Conv2dBackwardWeight {
                dtype: DType::F32,
                partial: true,
                wide: true,
                lean: true,
            }),
        ),
        (
            "depthwise_conv2d_f32",
            Box::new(ConvKernel::Depthwise {
                dtype: DType::F32,
                pass: super::conv::depthwise::DepthwisePass::Forward,
            }),
        ),
        (
            "depthwise_conv2d_backward_input_f16",
            Box::new(ConvKernel::Depthwise {
                dtype: DType::F16,
                pass: super::conv::depthwise::DepthwisePass::InputGradient,
            }),
        ),
        (
            "depthwise_conv2d_backward_weight_f32",
            Box::new(ConvKernel::Depthwise {
                dtype: DType::F32,
                pass: super::conv::depthwise::DepthwisePass::WeightGradient,
            }),
        ),
        (
            "conv2d_split_sum_f16",
            Box::new(ConvKernel::Conv2dSplitSum { dtype: DType::F16 }),
        ),
        (
            "max_pool2d_f16",
            Box::new(PoolKernel::MaxPool2d {
                dtype: DType::F16,
                window: None,
            }),
        ),
        (
            "max_pool2d_tiled_f16",
            Box::new(PoolKernel::MaxPool2d {
                dtype: DType::F16,
                window: Some(super::pool::FixedWindow::RESNET),
            }),
        ),
        (
            "max_pool2d_vectorized_f16",
            Box::new(PoolKernel::MaxPool2dVectorized {
                dtype: DType::F16,
                window: super::pool::HalvingWindow::RESNET,
            }),
        ),
        (
            "max_pool2d_channels_last_f16",
            Box::new(PoolKernel::MaxPool2dChannelsLast {
                dtype: DType::F16,
                taps: super::pool::UnrolledTaps::of((3, 3)),
            }),
        ),
        (
            "max_pool2d_vectorized_f32",
            Box::new(PoolKernel::MaxPool2dVectorized {
                dtype: DType::F32,
                window: super::pool::HalvingWindow::RESNET,
            }),
        ),
        (
            "max_pool2d_backward_tiled_f32",
            Box::new(PoolKernel::MaxPool2dBackward {
                dtype: DType::F32,
                pass: super::pool::PoolPass::Tiled(super::pool::FixedWindow::RESNET),
            }),
        ),
        (
            "max_pool2d_backward_halving_f32",
            Box::new(PoolKernel::MaxPool2dBackward {
                dtype: DType::F32,
                pass: super::pool::PoolPass::Halving(super::pool::HalvingWindow::RESNET),
            }),
        ),
        (
            "max_pool2d_route_f32",
            Box::new(PoolKernel::MaxPool2dBackward {
                dtype: DType::F32,
                pass: super::pool::PoolPass::Route,
            }),
        ),
        (
            "max_pool2d_backward_f32",
            Box::new(PoolKernel::MaxPool2dBackward {
                dtype: DType::F32,
                pass: super::pool::PoolPass::Gather,
            }),
        ),
        (
            "unary_vector_f32_relu",
            Box::new(ElementwiseKernel::Unary {
                dtype: DType::F32,
                op: UnaryOp::Relu,
                access: Access::Vector,
            }),
        ),
        (
            "binary_scalar_vector_f16_sub_left",
            Box::new(ElementwiseKernel::BinaryScalar {
                dtype: DType::F16,
                op: BinaryOp::Sub,
                scalar_on_left: true,
                access: Access::Vector,
            }),
        ),
        (
            "copy_vector_f16_to_f32",
            Box::new(ElementwiseKernel::Copy {
                from: DType::F16,
                to: DType::F32,
                access: Access::Vector,
            }),
        ),
        (
            "fused_vector_f32",
            Box::new(FusedKernel {
                program: Arc::new(sample_fused(DType::F32, true)),
            }),
        ),
        (
            "fused_strided_f16",
            Box::new(FusedKernel {
                program: Arc::new(sample_fused(DType::F16, false)),
            }),
        ),
    ];
    for (name, variant) in [
        ("matmul_coop_direct", CoopVariant::Direct),
        ("matmul_coop_staged16", CoopVariant::Staged16),
        ("matmul_coop_staged32", CoopVariant::Staged32),
        ("matmul_coop_wide256", CoopVariant::Wide256),
    ] {
        kernels.push((
            name,
            Box::new(MatmulKernel::MatmulCoop {
                variant,
                emulated: false,
            }),
        ));
    }
    // (name, pass, dtype, causal, key bias)
    let attention = [
        (
            "attention_forward_f32_d16_causal",
            AttentionPass::Forward,
            DType::F32,
            true,
            false,
        ),
        (
            "attention_forward_f16_d16_masked",
            AttentionPass::Forward,
            DType::F16,
            false,
            true,
        ),
        (
            "attention_delta_f16_d16",
            AttentionPass::Delta,
            DType::F16,
            false,
            false,
        ),
        (
            "attention_delta_zeroing_f16_d16",
            AttentionPass::DeltaZeroing,
            DType::F16,
            false,
            false,
        ),
        (
            "attention_key_value_f32_d16_masked",
            AttentionPass::KeyValue,
            DType::F32,
            false,
            true,
        ),
        (
            "attention_query_f16_d16_causal",
            AttentionPass::Query,
            DType::F16,
            true,
            false,
        ),
    ];
    for (name, pass, dtype, causal, key_bias) in attention {
        kernels.push((
            name,
            Box::new(AttentionKernel::Attention(AttentionKey {
                pass,
                dtype,
                head_dim: 16,
                value_dim: 16,
                causal,
                key_bias,
            })),
        ));
    }
    for (name, emulated, mode) in [
        (
            "attention_coop_forward_d64_masked",
            false,
            crate::backend::gpu::attention::coop::ForwardMode::Exact,
        ),
        (
            "attention_coop_forward_d64_masked_emulated",
            true,
            crate::backend::gpu::attention::coop::ForwardMode::Exact,
        ),
        (
            "attention_coop_forward_d64_masked_uniform",
            false,
            crate::backend::gpu::attention::coop::ForwardMode::Uniform,
        ),
        (
            "attention_coop_forward_d64_masked_uniform_emulated",
            true,
            crate::backend::gpu::attention::coop::ForwardMode::Uniform,
        ),
        (
            "attention_coop_forward_d64_masked_redo",
            false,
            crate::backend::gpu::attention::coop::ForwardMode::Redo,
        ),
    ] {
        kernels.push((
            name,
            Box::new(AttentionKernel::AttentionCoop(
                crate::backend::gpu::attention::coop::CoopForward {
                    head_dim: 64,
                    value_dim: 64,
                    causal: false,
                    key_bias: true,
                    subgroups: 4,
                    emulated,
                    double_buffered: false,
                    mode,
                },
            )),
        ));
    }
    // The forward that runs at d = 64 on tensor cores: eight subgroups, 16-key tiles, K and V
    // in one buffer (two would take more than 23 KiB).
    for (name, mode) in [
        (
            "attention_coop_forward_d64_eight_uniform",
            crate::backend::gpu::attention::coop::ForwardMode::Uniform,
        ),
        (
            "attention_coop_forward_d64_eight_redo",
            crate::backend::gpu::attention::coop::ForwardMode::Redo,
        ),
    ] {
        kernels.push((
            name,
            Box::new(AttentionKernel::AttentionCoop(
                crate::backend::gpu::attention::coop::CoopForward {
                    head_dim: 64,
                    value_dim: 64,
                    causal: false,
                    key_bias: false,
                    subgroups: 8,
                    emulated: false,
                    double_buffered: false,
                    mode,
                },
            )),
        ));
    }
    // The key-value kernel that runs at d = 64 on tensor cores (eight subgroups), the one that
    // sums dQ (four), and the emulated query kernel.
    for (name, pass, causal, key_bias, emulated, fold_query, subgroups) in [
        (
            "attention_coop_key_value_d64_causal",
            crate::backend::gpu::attention::coop::backward::CoopBackwardPass::KeyValue,
            true,
            false,
            false,
            false,
            8,
        ),
        (
            "attention_coop_key_value_d64_folded",
            crate::backend::gpu::attention::coop::backward::CoopBackwardPass::KeyValue,
            false,
            false,
            false,
            true,
            4,
        ),
        (
            "attention_coop_query_d64_masked_emulated",
            crate::backend::gpu::attention::coop::backward::CoopBackwardPass::Query,
            false,
            true,
            true,
            false,
            4,
        ),
    ] {
        kernels.push((
            name,
            Box::new(AttentionKernel::AttentionCoopBackward(
                crate::backend::gpu::attention::coop::backward::CoopBackward {
                    pass,
                    head_dim: 64,
                    value_dim: 64,
                    causal,
                    key_bias,
                    subgroups,
                    emulated,
                    fold_query,
                },
            )),
        ));
    }
    kernels.push((
        "matmul_coop_staged32_emulated",
        Box::new(MatmulKernel::MatmulCoop {
            variant: CoopVariant::Staged32,
            emulated: true,
        }),
    ));
    kernels.push((
        "matmul_coop_wide128_emulated",
        Box::new(MatmulKernel::MatmulCoop {
            variant: CoopVariant::Wide128,
            emulated: true,
        }),
    ));
    kernels
}

/// Every snapshotted kernel's WGSL equals its committed file (and still validates).
#[test]
fn generated_kernels_match_their_snapshots() {
    let failures: Vec<String> = snapshot_kernels()
        .iter()
        .filter_map(|(name, key)| {
            let source = key.source();
            super::runtime::shader_check::naga_check(&source)
                .map_err(|error| format!("{name}: {error}"))
                .and_then(|()| check_snapshot(name, &source))
                .err()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The comparison sees a one-character change (the test above can fail).
#[test]
fn a_changed_kernel_fails_its_snapshot() {
    let (name, key) = &snapshot_kernels()[0];
    let mut source = key.source();
    source.push(' ');
    if std::env::var("ANYGRAD_UPDATE_SNAPSHOTS").as_deref() != Ok("1") {
        assert!(check_snapshot(name, &source).is_err());
    }
}
