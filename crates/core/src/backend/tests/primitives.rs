//! GPU backend parity tests: every primitive on the GPU against the CPU reference, on awkward
//! inputs (NaN, inf, large |x|, strided/broadcast/empty views, grids above 65,535 workgroups).
//! Without an adapter each test prints a skip, unless `ANYGRAD_REQUIRE_GPU=1` (then a missing
//! adapter fails). Sizes stay small: on lavapipe (a CPU-emulated GPU) these run in seconds.
//! Transfers, memory, random numbers and errors are in `runtime.rs`.

use super::support::*;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::storage::Storage;
use crate::{DType, Device, Error, Layout};

#[test]
fn unary_ops_match_cpu() {
    let Some(device) = gpu() else { return };
    let mut failures = Vec::new();
    for dtype in float_dtypes(&device)
        .into_iter()
        .chain([DType::I32, DType::U32, DType::U8])
    {
        for op in UnaryOp::ALL {
            let data = unary_inputs(dtype, op);
            let cpu = cpu_storage(&data, dtype);
            let on_gpu = to_gpu(&cpu, &device);
            // Contiguous, and a transposed (strided) view of the same data.
            let contiguous = Layout::contiguous(&[data.len()]);
            let transposed = Layout::contiguous(&[8, data.len() / 8]).permute(&[1, 0]);
            for layout in [&contiguous, &transposed] {
                let expected = cpu.unary(layout, op);
                let actual = on_gpu.unary(layout, op);
                match (expected, actual) {
                    (Ok(e), Ok(a)) => {
                        let (rtol, atol) = tolerance(dtype);
                        failures.extend(check_close(
                            &format!("{} {dtype}", op.name()),
                            &e,
                            &a,
                            rtol,
                            atol,
                        ));
                    }
                    (Err(_), Err(_)) => {}
                    (e, a) => {
                        failures.push(format!("{} {dtype}: cpu {e:?} vs gpu {a:?}", op.name()))
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// GPU sin and cos against the CPU's (the platform's libm) over wide arguments and right
/// beside multiples of pi/2, where a driver's own range reduction loses digits (an H100's
/// builtin sin near pi was off by 4e-6).
#[test]
fn sin_and_cos_match_cpu_over_wide_ranges() {
    let Some(device) = gpu() else { return };
    let mut data: Vec<f64> = (0..4096)
        .map(|i| -1.0e5 + 2.0e5 * f64::from(i) / 4095.0)
        .collect();
    for k in (-60_000i32..60_000).step_by(997) {
        let multiple = f64::from(k) * std::f64::consts::FRAC_PI_2;
        // The f32 nearest to the multiple, and its two neighbours.
        let nearest = multiple as f32;
        data.extend([
            f64::from(nearest),
            f64::from(f32::from_bits(nearest.to_bits() + 1)),
            f64::from(f32::from_bits(nearest.to_bits().saturating_sub(1))),
        ]);
    }
    data.extend((1..=64).map(|i| f64::from(i) * 0.049));
    while !data.len().is_multiple_of(8) {
        data.push(0.25);
    }
    let cpu = cpu_storage(&data, DType::F32);
    let on_gpu = to_gpu(&cpu, &device);
    let layout = Layout::contiguous(&[data.len()]);
    let (rtol, atol) = tolerance(DType::F32);
    let failures: Vec<String> = [UnaryOp::Sin, UnaryOp::Cos]
        .into_iter()
        .filter_map(|op| {
            let expected = cpu.unary(&layout, op).unwrap();
            let actual = on_gpu.unary(&layout, op).unwrap();
            check_close(op.name(), &expected, &actual, rtol, atol)
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn binary_ops_match_cpu_with_broadcast() {
    let Some(device) = gpu() else { return };
    let mut failures = Vec::new();
    let shape = [4usize, 16];
    for dtype in float_dtypes(&device).into_iter().chain(INTEGER_DTYPES) {
        let (lhs_data, rhs_data) = if dtype.is_float() {
            (
                special_values(),
                special_values()
                    .into_iter()
                    .rev()
                    .take(16)
                    .collect::<Vec<_>>(),
            )
        } else {
            let mut small: Vec<f64> = values(64, 9, 6.0).into_iter().map(f64::round).collect();
            small[0] = 0.0;
            (
                small,
                values(16, 11, 4.0).into_iter().map(f64::round).collect(),
            )
        };
        let lhs = cpu_storage(&lhs_data[..64], dtype);
        let rhs = cpu_storage(&rhs_data, dtype);
        let (lhs_gpu, rhs_gpu) = (to_gpu(&lhs, &device), to_gpu(&rhs, &device));
        let lhs_layout = Layout::contiguous(&shape);
        // rhs has shape [16], broadcast over the rows (stride 0).
        let rhs_layout = Layout::contiguous(&[16]).broadcast_to(&shape).unwrap();
        for op in BinaryOp::ALL {
            if op.is_bitwise() && dtype.is_float() {
                // Bit operators refuse float data on both backends.
                assert!(lhs.binary(&lhs_layout, &rhs, &rhs_layout, op).is_err());
                assert!(lhs_gpu
                    .binary(&lhs_layout, &rhs_gpu, &rhs_layout, op)
                    .is_err());
                assert!(lhs_gpu.binary_scalar(&lhs_layout, op, 1.0, false).is_err());
                continue;
            }
            let expected = lhs.binary(&lhs_layout, &rhs, &rhs_layout, op).unwrap();
            let actual = lhs_gpu
                .binary(&lhs_layout, &rhs_gpu, &rhs_layout, op)
                .unwrap();
            let (rtol, atol) = if op == BinaryOp::Pow && dtype.is_float() {
                (2e-4, 1e-5)
            } else {
                tolerance(dtype)
            };
            failures.extend(check_close(
                &format!("{} {dtype}", op.name()),
                &expected,
                &actual,
                rtol,
                atol,
            ));
            for (scalar, on_left) in [(2.5, false), (-3.0, true), (0.0, false)] {
                let unsigned = matches!(dtype, DType::U32 | DType::U8 | DType::Bool);
                if op == BinaryOp::ShiftRight && on_left && unsigned {
                    // A negative number shifted right by unsigned data: refused on the GPU.
                    assert!(lhs_gpu
                        .binary_scalar(&lhs_layout, op, scalar, on_left)
                        .is_err());
                    continue;
                }
                let expected = lhs.binary_scalar(&lhs_layout, op, scalar, on_left).unwrap();
                let actual = lhs_gpu
                    .binary_scalar(&lhs_layout, op, scalar, on_left)
                    .unwrap();
                failures.extend(check_close(
                    &format!("{} scalar {scalar} {dtype}", op.name()),
                    &expected,
                    &actual,
                    rtol,
                    atol,
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn where_matches_cpu() {
    let Some(device) = gpu() else { return };
    let condition_data = vec![0.0, -0.0, f64::NAN, 1.0, 0.0, 2.0, -3.0, 0.0];
    for condition_dtype in [DType::F32, DType::U8, DType::Bool, DType::I32] {
        let condition = cpu_storage(&condition_data, condition_dtype);
        for dtype in [DType::F32, DType::I32, DType::U8] {
            let on_true = cpu_storage(&values(8, 1, 10.0), dtype);
            let on_false = cpu_storage(&[7.0], dtype);
            let layout = Layout::contiguous(&[8]);
            let broadcast = Layout::contiguous(&[1]).broadcast_to(&[8]).unwrap();
            let expected = condition
                .where_select(&layout, &on_true, &layout, &on_false, &broadcast)
                .unwrap();
            let actual = to_gpu(&condition, &device)
                .where_select(
                    &layout,
                    &to_gpu(&on_true, &device),
                    &layout,
                    &to_gpu(&on_false, &device),
                    &broadcast,
                )
                .unwrap();
            assert_close(
                &format!("where {condition_dtype}->{dtype}"),
                &expected,
                &actual,
                0.0,
                0.0,
            );
        }
    }
}

#[test]
fn reductions_match_cpu() {
    let Some(device) = gpu() else { return };
    let shape = [3usize, 5, 7];
    let mut data = values(105, 5, 10.0);
    data[17] = data[3]; // ties
    for dtype in float_dtypes(&device)
        .into_iter()
        .chain([DType::I32, DType::U32, DType::U8])
    {
        let data: Vec<f64> = if dtype.is_float() {
            data.clone()
        } else {
            data.iter().map(|v| v.abs().round()).collect()
        };
        let cpu = cpu_storage(&data, dtype);
        let on_gpu = to_gpu(&cpu, &device);
        let layout = Layout::contiguous(&shape);
        let permuted = layout.permute(&[2, 0, 1]);
        for op in ReduceOp::ALL {
            if op == ReduceOp::Mean && !dtype.is_float() {
                // PyTorch has no integer mean: both backends refuse it.
                assert!(cpu.reduce(&layout, op, &[0]).is_err());
                assert!(on_gpu.reduce(&layout, op, &[0]).is_err());
                continue;
            }
            let dim_sets: Vec<Vec<usize>> = if op.is_arg() {
                vec![vec![0], vec![1], vec![2]]
            } else {
                vec![vec![], vec![0], vec![1], vec![2], vec![0, 2], vec![0, 1, 2]]
            };
            for dims in dim_sets {
                for view in [&layout, &permuted] {
                    let expected = cpu.reduce(view, op, &dims).unwrap();
                    let actual = on_gpu.reduce(view, op, &dims).unwrap();
                    let (rtol, atol) = match dtype {
                        DType::F16 => (1e-2, 1e-2),
                        _ => (1e-5, 1e-5),
                    };
                    assert_close(
                        &format!("{} {dims:?} {dtype}", op.name()),
                        &expected,
                        &actual,
                        rtol,
                        atol,
                    );
                }
            }
        }
    }
    // Long rows split over several workgroups (partial sums, then a second pass): a mean
    // divides once, by the whole row.
    let long = values(2 * 20_000, 7, 3.0);
    let cpu = cpu_storage(&long, DType::F32);
    let layout = Layout::contiguous(&[2, 20_000]);
    for op in [ReduceOp::Sum, ReduceOp::Mean] {
        let expected = cpu.reduce(&layout, op, &[1]).unwrap();
        let actual = to_gpu(&cpu, &device).reduce(&layout, op, &[1]).unwrap();
        assert_close(
            &format!("long {}", op.name()),
            &expected,
            &actual,
            1e-4,
            1e-4,
        );
    }
    // A channels-last [n, c, h, w] pooled over (h, w) (a global average pool's view, the
    // reduced elements a row of channels apart): every reduction against the CPU.
    let (n, c, h, w) = (4usize, 2048usize, 3usize, 5usize);
    let pooled = values(n * c * h * w, 11, 4.0);
    let channels_last = Layout::contiguous(&[n, h, w, c]).permute(&[0, 3, 1, 2]);
    for dtype in float_dtypes(&device) {
        let cpu = cpu_storage(&pooled, dtype);
        let on_gpu = to_gpu(&cpu, &device);
        for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min] {
            let expected = cpu.reduce(&channels_last, op, &[2, 3]).unwrap();
            let actual = on_gpu.reduce(&channels_last, op, &[2, 3]).unwrap();
            let tolerance = if dtype == DType::F16 { 1e-2 } else { 1e-5 };
            assert_close(
                &format!("channels-last {} {dtype}", op.name()),
                &expected,
                &actual,
                tolerance,
                tolerance,
            );
        }
    }
    // NaN propagates through max/min and wins argmax/argmin (first NaN).
    let nan_data = vec![1.0, f64::NAN, 5.0, f64::NAN, 2.0, 2.0];
    let cpu = cpu_storage(&nan_data, DType::F32);
    let layout = Layout::contiguous(&[6]);
    for op in ReduceOp::ALL {
        let expected = cpu.reduce(&layout, op, &[0]).unwrap();
        let actual = to_gpu(&cpu, &device).reduce(&layout, op, &[0]).unwrap();
        assert_close(&format!("nan {}", op.name()), &expected, &actual, 0.0, 0.0);
    }
}

#[test]
fn casts_match_cpu() {
    let Some(device) = gpu() else { return };
    let mut dtypes = vec![DType::F32, DType::I32, DType::U32, DType::U8, DType::Bool];
    if super::support::f16_or_skip(&device, "the f16 casts") {
        dtypes.push(DType::F16);
    }
    let mut failures = Vec::new();
    let float_data = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        255.9,
        256.0,
        -300.0,
        3e9,
        -3e9,
        1e20,
        f64::NAN,
        65504.0,
        7.0,
    ];
    for &from in &dtypes {
        let data: Vec<f64> = if from.is_float() {
            float_data.clone()
        } else {
            integer_values()
        };
        let cpu = cpu_storage(&data, from);
        let on_gpu = to_gpu(&cpu, &device);
        let layout = Layout::contiguous(&[data.len()]);
        for &to in &dtypes {
            let expected = cpu.cast(&layout, to).unwrap();
            let actual = on_gpu.cast(&layout, to).unwrap();
            let rtol = if to == DType::F16 || from == DType::F16 {
                1e-3
            } else {
                1e-7
            };
            failures.extend(check_close(
                &format!("cast {from}->{to}"),
                &expected,
                &actual,
                rtol,
                0.0,
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn matmul_case(
    device: &Device,
    dtype: DType,
    (batch, m, k, n): (usize, usize, usize, usize),
    transpose_rhs: bool,
    broadcast_lhs: bool,
) {
    let lhs_batch = if broadcast_lhs { 1 } else { batch };
    let scale = if dtype.is_float() { 1.0 } else { 4.0 };
    let round = |v: Vec<f64>| {
        if dtype.is_float() {
            v
        } else {
            v.into_iter().map(|x| x.round().abs()).collect()
        }
    };
    let lhs = cpu_storage(&round(values(lhs_batch * m * k, 21, scale)), dtype);
    let rhs = cpu_storage(&round(values(batch * k * n, 22, scale)), dtype);
    let mut lhs_layout = Layout::contiguous(&[lhs_batch, m, k]);
    if broadcast_lhs {
        lhs_layout = lhs_layout.broadcast_to(&[batch, m, k]).unwrap();
    }
    let rhs_layout = if transpose_rhs {
        // Stored as [batch, n, k]; viewed as [batch, k, n].
        Layout::contiguous(&[batch, n, k]).permute(&[0, 2, 1])
    } else {
        Layout::contiguous(&[batch, k, n])
    };
    let expected = lhs.matmul(&lhs_layout, &rhs, &rhs_layout).unwrap();
    let actual = to_gpu(&lhs, device)
        .matmul(&lhs_layout, &to_gpu(&rhs, device), &rhs_layout)
        .unwrap();
    let (rtol, atol) = match dtype {
        DType::F16 => (2e-2, 5e-2),
        DType::F32 => (1e-4, 1e-4),
        _ => (0.0, 0.0),
    };
    assert_close(
        &format!("matmul {dtype} b{batch} {m}x{k}x{n} t{transpose_rhs} bc{broadcast_lhs}"),
        &expected,
        &actual,
        rtol,
        atol,
    );
}

#[test]
fn matmul_matches_cpu() {
    let Some(device) = gpu() else { return };
    for (batch, m, k, n) in [
        (1, 1, 1, 1),
        (2, 7, 13, 5),
        (1, 65, 130, 67),
        (3, 64, 16, 64),
        (1, 3, 0, 4),
    ] {
        for transpose in [false, true] {
            matmul_case(&device, DType::F32, (batch, m, k, n), transpose, false);
        }
    }
    matmul_case(&device, DType::F32, (4, 9, 17, 33), false, true);
    matmul_case(&device, DType::I32, (2, 9, 17, 33), true, false);
    matmul_case(&device, DType::U8, (1, 5, 6, 7), false, false);
    if super::support::f16_or_skip(&device, "the f16 product") {
        matmul_case(&device, DType::F16, (2, 33, 40, 31), true, true);
    }
}

#[test]
fn index_ops_match_cpu() {
    let Some(device) = gpu() else { return };
    let shape = [4usize, 5, 3];
    for dtype in [DType::F32, DType::I32, DType::U8] {
        let base = cpu_storage(
            &values(60, 31, 9.0)
                .into_iter()
                .map(f64::round)
                .collect::<Vec<_>>(),
            dtype,
        );
        let base_gpu = to_gpu(&base, &device);
        let layout = Layout::contiguous(&shape);
        for index_dtype in [DType::I32, DType::U32, DType::U8] {
            // index_select along each dim, with repeats.
            for dim in 0..3 {
                let picks = cpu_storage(&[0.0, 2.0, 2.0, 1.0], index_dtype);
                let picks_layout = Layout::contiguous(&[4]);
                let expected = base
                    .index_select(&layout, &picks, &picks_layout, dim)
                    .unwrap();
                let actual = base_gpu
                    .index_select(&layout, &to_gpu(&picks, &device), &picks_layout, dim)
                    .unwrap();
                assert_close(
                    &format!("index_select {dtype} dim {dim}"),
                    &expected,
                    &actual,
                    0.0,
                    0.0,
                );
            }
            // gather along dim 1 with a smaller index shape, and scatter_add with duplicates.
            let index_values: Vec<f64> = (0..4 * 3 * 2).map(|i| ((i * 7) % 5) as f64).collect();
            let index = cpu_storage(&index_values, index_dtype);
            let index_layout = Layout::contiguous(&[4, 3, 2]);
            let expected = base.gather(&layout, &index, &index_layout, 1).unwrap();
            let actual = base_gpu
                .gather(&layout, &to_gpu(&index, &device), &index_layout, 1)
                .unwrap();
            assert_close(&format!("gather {dtype}"), &expected, &actual, 0.0, 0.0);
            let src = cpu_storage(
                &values(4 * 3 * 3, 41, 5.0)
                    .into_iter()
                    .map(f64::round)
                    .collect::<Vec<_>>(),
                dtype,
            );
            let src_layout = Layout::contiguous(&[4, 3, 3]);
            let expected = base
                .scatter_add(&layout, &index, &index_layout, &src, &src_layout, 1)
                .unwrap();
            let actual = base_gpu
                .scatter_add(
                    &layout,
                    &to_gpu(&index, &device),
                    &index_layout,
                    &to_gpu(&src, &device),
                    &src_layout,
                    1,
                )
                .unwrap();
            assert_close(
                &format!("scatter_add {dtype}"),
                &expected,
                &actual,
                1e-6,
                1e-5,
            );
        }
    }
    // An out-of-range index is an error, not a wild read; the device stays usable. The check
    // is deferred: the op returns at once and the next readback reports the error, naming it.
    let base = to_gpu(&cpu_storage(&[1.0, 2.0, 3.0], DType::F32), &device);
    let bad = to_gpu(&cpu_storage(&[0.0, 3.0], DType::I32), &device);
    let error = base
        .index_select(
            &Layout::contiguous(&[3]),
            &bad,
            &Layout::contiguous(&[2]),
            0,
        )
        .and_then(|selected| selected.to_cpu())
        .unwrap_err();
    assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
    assert!(error.to_string().contains("index_select"), "{error}");
    // Reported once: the next readback is clean.
    assert_eq!(flat(&base), vec![1.0, 2.0, 3.0]);
    let negative = to_gpu(&cpu_storage(&[-1.0], DType::I32), &device);
    let error = base
        .scatter_add(
            &Layout::contiguous(&[3]),
            &negative,
            &Layout::contiguous(&[1]),
            &base,
            &Layout::contiguous(&[3]),
            0,
        )
        .and_then(|_| device.synchronize())
        .unwrap_err();
    assert!(error.to_string().contains("scatter_add"), "{error}");
    let bad_gather = to_gpu(&cpu_storage(&[5.0], DType::I32), &device);
    let gathered = base
        .gather(
            &Layout::contiguous(&[3]),
            &bad_gather,
            &Layout::contiguous(&[1]),
            0,
        )
        .unwrap();
    let error = gathered.to_cpu().unwrap_err();
    assert!(error.to_string().contains("gather"), "{error}");
    assert_eq!(flat(&base), vec![1.0, 2.0, 3.0]);
}

#[test]
fn strided_copies_match_cpu() {
    let Some(device) = gpu() else { return };
    let cpu = cpu_storage(&values(120, 51, 100.0), DType::F32);
    let on_gpu = to_gpu(&cpu, &device);
    let base = Layout::contiguous(&[4, 5, 6]);
    let views = [
        base.permute(&[2, 0, 1]),
        base.narrow(1, 1, 3),
        base.narrow(2, 2, 3).permute(&[1, 2, 0]),
        Layout::contiguous(&[5, 1])
            .broadcast_to(&[3, 5, 4])
            .unwrap(),
        base.narrow(0, 4, 0),
    ];
    for view in &views {
        let expected = cpu.copy_strided(view).unwrap();
        let actual = on_gpu.copy_strided(view).unwrap();
        assert_close(&format!("copy {view:?}"), &expected, &actual, 0.0, 0.0);
    }
    // copy_into a transposed view of a destination.
    let mut dst_cpu = cpu_storage(&[0.0; 30], DType::F32);
    let mut dst_gpu = to_gpu(&dst_cpu, &device);
    let source_view = base.narrow(0, 1, 1).narrow(1, 0, 5);
    let source_view = Layout {
        shape: vec![5, 6],
        strides: source_view.strides[1..].to_vec(),
        offset: source_view.offset,
    };
    let dst_view = Layout::contiguous(&[6, 5]).permute(&[1, 0]);
    cpu.copy_into(&source_view, &mut dst_cpu, &dst_view)
        .unwrap();
    on_gpu
        .copy_into(&source_view, &mut dst_gpu, &dst_view)
        .unwrap();
    assert_close("copy_into", &dst_cpu, &dst_gpu, 0.0, 0.0);
}

#[test]
fn empty_tensors_work() {
    let Some(device) = gpu() else { return };
    let empty = Storage::full(&device, 0, DType::F32, 1.0).unwrap();
    let layout = Layout::contiguous(&[0, 3]);
    assert_eq!(
        flat(&empty.unary(&layout, UnaryOp::Exp).unwrap()),
        Vec::<f64>::new()
    );
    assert_eq!(
        flat(
            &empty
                .binary(&layout, &empty, &layout, BinaryOp::Add)
                .unwrap()
        ),
        Vec::<f64>::new()
    );
    assert_eq!(
        flat(&empty.reduce(&layout, ReduceOp::Sum, &[0]).unwrap()),
        vec![0.0; 3]
    );
    assert!(empty.reduce(&layout, ReduceOp::Max, &[0]).is_err());
    assert_eq!(
        flat(&empty.cast(&layout, DType::I32).unwrap()),
        Vec::<f64>::new()
    );
    let lhs = Layout::contiguous(&[1, 0, 4]);
    let rhs = Layout::contiguous(&[1, 4, 2]);
    let rhs_storage = Storage::full(&device, 8, DType::F32, 1.0).unwrap();
    assert_eq!(
        flat(&empty.matmul(&lhs, &rhs_storage, &rhs).unwrap()),
        Vec::<f64>::new()
    );
}

#[test]
fn grids_beyond_65535_workgroups() {
    let Some(device) = gpu() else { return };
    // 65,535 workgroups of 256 cover 16,776,960 elements; go past that.
    let numel = 65_535 * 256 + 1000;
    let ones = Storage::full(&device, numel, DType::F32, 1.5).unwrap();
    let layout = Layout::contiguous(&[numel]);
    let doubled = ones
        .binary_scalar(&layout, BinaryOp::Mul, 2.0, false)
        .unwrap();
    let out = flat(&doubled);
    assert_eq!(out.len(), numel);
    assert!(out.iter().all(|&v| v == 3.0), "some element missed");
    // A reduction with more than 65,535 outputs (one workgroup each).
    let rows = 70_000;
    let layout = Layout::contiguous(&[rows, 2]);
    let sums = ones.reduce(&layout, ReduceOp::Sum, &[1]).unwrap();
    let sums = flat(&sums);
    assert_eq!(sums.len(), rows);
    assert!(sums.iter().all(|&v| v == 3.0));
}

#[test]
fn large_reductions_split_across_workgroups() {
    let Some(device) = gpu() else { return };
    // Few outputs with many elements each take the two-pass path.
    let count = 100_003;
    let mut data = values(2 * count, 71, 3.0);
    for dtype in [DType::F32, DType::I32, DType::U8] {
        let data: Vec<f64> = if dtype.is_float() {
            data.clone()
        } else {
            data.iter().map(|v| v.abs().round()).collect()
        };
        let cpu = cpu_storage(&data, dtype);
        let on_gpu = to_gpu(&cpu, &device);
        for (layout, dims) in [
            (Layout::contiguous(&[2, count]), vec![1]),
            (Layout::contiguous(&[count, 2]).permute(&[1, 0]), vec![1]),
            (Layout::contiguous(&[2, count]), vec![0, 1]),
        ] {
            for op in [
                ReduceOp::Sum,
                ReduceOp::Max,
                ReduceOp::Min,
                ReduceOp::ArgMax,
            ] {
                let dims = if op.is_arg() { vec![1] } else { dims.clone() };
                let expected = cpu.reduce(&layout, op, &dims).unwrap();
                let actual = on_gpu.reduce(&layout, op, &dims).unwrap();
                // Sums accumulate in f32 on the GPU (f64 on the CPU).
                assert_close(
                    &format!("{} {dims:?} {dtype}", op.name()),
                    &expected,
                    &actual,
                    1e-4,
                    1e-3,
                );
            }
        }
    }
    data[150_000] = f64::NAN;
    let cpu = cpu_storage(&data, DType::F32);
    let layout = Layout::contiguous(&[2 * count]);
    for op in [ReduceOp::Max, ReduceOp::Min] {
        let actual = to_gpu(&cpu, &device).reduce(&layout, op, &[0]).unwrap();
        assert!(
            flat(&actual)[0].is_nan(),
            "{} must propagate NaN",
            op.name()
        );
    }
}
