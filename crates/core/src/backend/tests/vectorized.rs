//! The vectorized (vec4, grid-stride) elementwise kernels and the buffer-copy fast path
//! against the CPU reference: dense views at offsets that are and are not multiples of 4,
//! lengths around multiples of 4, every family (unary, binary, comparisons, scalar ops, casts,
//! copies into a view of a larger tensor), and a size large enough for the grid-stride loop.

use super::support::*;
use crate::op::{BinaryOp, UnaryOp};
use crate::{DType, Layout};

/// Dense 1-D views of a 64-element storage: aligned and unaligned offsets and lengths.
fn dense_views() -> Vec<Layout> {
    let base = Layout::contiguous(&[64]);
    vec![
        base.clone(),
        base.narrow(0, 4, 32),
        base.narrow(0, 1, 32),
        base.narrow(0, 8, 7),
        base.narrow(0, 0, 60),
    ]
}

#[test]
fn vectorized_elementwise_matches_cpu() {
    let Some(device) = gpu() else { return };
    let mut dtypes = float_dtypes(&device);
    dtypes.extend([DType::I32, DType::U32, DType::U8]);
    for dtype in dtypes {
        let (rtol, atol) = tolerance(dtype);
        let raw = if dtype.is_float() {
            values(64, 3, 4.0)
        } else {
            values(64, 3, 4.0).iter().map(|v| v.abs().round()).collect()
        };
        let cpu = cpu_storage(&raw, dtype);
        let gpu_data = to_gpu(&cpu, &device);
        let other_raw: Vec<f64> = raw.iter().rev().copied().collect();
        let other = cpu_storage(&other_raw, dtype);
        let other_gpu = to_gpu(&other, &device);
        for view in dense_views() {
            let what = |op: &str| format!("{op} {dtype} {view:?}");
            let unary_op = if dtype.is_float() {
                UnaryOp::Exp
            } else {
                UnaryOp::Abs
            };
            assert_close(
                &what("unary"),
                &cpu.unary(&view, unary_op).unwrap(),
                &gpu_data.unary(&view, unary_op).unwrap(),
                rtol,
                atol,
            );
            for op in [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Lt] {
                assert_close(
                    &what(op.name()),
                    &cpu.binary(&view, &other, &view, op).unwrap(),
                    &gpu_data.binary(&view, &other_gpu, &view, op).unwrap(),
                    rtol,
                    atol,
                );
                for on_left in [false, true] {
                    assert_close(
                        &what("scalar"),
                        &cpu.binary_scalar(&view, op, 2.0, on_left).unwrap(),
                        &gpu_data.binary_scalar(&view, op, 2.0, on_left).unwrap(),
                        rtol,
                        atol,
                    );
                }
            }
            for to in [DType::F32, DType::I32] {
                assert_close(
                    &what("cast"),
                    &cpu.cast(&view, to).unwrap(),
                    &gpu_data.cast(&view, to).unwrap(),
                    0.0,
                    0.0,
                );
            }
            assert_close(
                &what("copy"),
                &cpu.copy_strided(&view).unwrap(),
                &gpu_data.copy_strided(&view).unwrap(),
                0.0,
                0.0,
            );
        }
        // copy_into a dense window of a larger destination: nothing outside it may change.
        for (source, destination) in [(0, 8), (4, 12), (1, 5), (0, 3)] {
            let numel = 32;
            let source_view = Layout::contiguous(&[64]).narrow(0, source, numel);
            let destination_view = Layout::contiguous(&[64]).narrow(0, destination, numel);
            let mut destination_cpu = cpu_storage(&other_raw, dtype);
            let mut destination_gpu = to_gpu(&other, &device);
            cpu.copy_into(&source_view, &mut destination_cpu, &destination_view)
                .unwrap();
            gpu_data
                .copy_into(&source_view, &mut destination_gpu, &destination_view)
                .unwrap();
            assert_close(
                &format!("copy_into {dtype} {source}->{destination}"),
                &destination_cpu,
                &destination_gpu,
                0.0,
                0.0,
            );
        }
    }
}

#[test]
fn large_dense_ops_use_the_fast_paths_correctly() {
    let Some(device) = gpu() else { return };
    // 2^22 + 4 elements: more vec4s than one launch of `MAX_WORKGROUPS` covers (grid-stride
    // loop).
    let numel = (1 << 22) + 4;
    let raw: Vec<f64> = (0..numel).map(|i| (i % 1000) as f64 - 500.0).collect();
    let cpu = cpu_storage(&raw, DType::F32);
    let on_gpu = to_gpu(&cpu, &device);
    let view = Layout::contiguous(&[numel]);
    let shifted = Layout::contiguous(&[numel]).narrow(0, 4, numel - 4);
    assert_close(
        "large add",
        &cpu.binary(&view, &cpu, &view, BinaryOp::Add).unwrap(),
        &on_gpu.binary(&view, &on_gpu, &view, BinaryOp::Add).unwrap(),
        0.0,
        0.0,
    );
    assert_close(
        "large copy at an offset",
        &cpu.copy_strided(&shifted).unwrap(),
        &on_gpu.copy_strided(&shifted).unwrap(),
        0.0,
        0.0,
    );
    let mut destination_cpu = cpu_storage(&vec![7.0; numel], DType::F32);
    let mut destination_gpu = to_gpu(&destination_cpu, &device);
    let window = Layout::contiguous(&[numel]).narrow(0, 0, numel - 4);
    cpu.copy_into(&shifted, &mut destination_cpu, &window)
        .unwrap();
    on_gpu
        .copy_into(&shifted, &mut destination_gpu, &window)
        .unwrap();
    assert_close(
        "large copy_into",
        &destination_cpu,
        &destination_gpu,
        0.0,
        0.0,
    );
}

/// `index_select` along the last dim of a dense input takes the row-walking kernel
/// (`index_rows.wgsl`); a bad index there is reported at the next readback.
#[test]
fn index_select_along_the_last_dim_matches_cpu() {
    let Some(device) = gpu() else { return };
    let data = values(2 * 3 * 7, 11, 5.0);
    let cpu = cpu_storage(&data, DType::F32);
    let on_gpu = to_gpu(&cpu, &device);
    let picks = cpu_storage(&[6.0, 0.0, 3.0, 3.0, 1.0], DType::I32);
    let picks_gpu = to_gpu(&picks, &device);
    let layout = Layout::contiguous(&[2, 3, 7]);
    let narrowed = Layout::contiguous(&[3, 3, 7]).narrow(0, 1, 2);
    let cpu_wide = cpu_storage(&values(3 * 3 * 7, 12, 5.0), DType::F32);
    let gpu_wide = to_gpu(&cpu_wide, &device);
    let index_layout = Layout::contiguous(&[5]);
    assert_close(
        "index_select last dim",
        &cpu.index_select(&layout, &picks, &index_layout, 2).unwrap(),
        &on_gpu
            .index_select(&layout, &picks_gpu, &index_layout, 2)
            .unwrap(),
        0.0,
        0.0,
    );
    assert_close(
        "index_select last dim at an offset",
        &cpu_wide
            .index_select(&narrowed, &picks, &index_layout, 2)
            .unwrap(),
        &gpu_wide
            .index_select(&narrowed, &picks_gpu, &index_layout, 2)
            .unwrap(),
        0.0,
        0.0,
    );
    let bad = to_gpu(&cpu_storage(&[1.0, 7.0], DType::I32), &device);
    let error = on_gpu
        .index_select(&layout, &bad, &Layout::contiguous(&[2]), 2)
        .and_then(|selected| selected.to_cpu())
        .unwrap_err();
    assert!(error.to_string().contains("index_select"), "{error}");
    assert_eq!(flat(&on_gpu).len(), 42);
}
