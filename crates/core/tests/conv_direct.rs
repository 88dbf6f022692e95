//! The direct conv2d primitive (`Storage::conv2d`: im2col + gemm on the CPU, the
//! implicit-GEMM kernel on the GPU) against a reference written with public ops (unfold by
//! `index_select`, then matmul: `anygrad_testing::conv_reference`). `Tensor::conv2d` takes
//! the direct path for every float convolution with one group, tracked or not (its gradients
//! are tested in `conv_backward.rs`); grouped and integer convolutions take the composite.

use std::sync::Mutex;

use anygrad_core::profiler::profile;
use anygrad_core::{no_grad, Conv2dParams, DType, Device, Error, Tensor};
use anygrad_testing::conv_reference::unfold_conv2d;
use anygrad_testing::{assert_close, pseudo_random, values};

/// The profiler is process-wide: every test here runs alone, so that a profile sees only its
/// own ops.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// How a case's operands are laid out.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Views {
    /// Contiguous input and weight.
    Dense,
    /// Input permuted from `[n, h, c, w]`, weight transposed from `[o, c, kw, kh]`.
    Strided,
    /// Input narrowed from `[n, c + 2, h, w]` (channels 1..c + 1: with n = 1, a contiguous
    /// view at an offset).
    Offset,
}

struct Case {
    name: &'static str,
    /// `[n, c, h, w]`.
    input: [usize; 4],
    out_channels: usize,
    kernel: (usize, usize),
    stride: (usize, usize),
    padding: (usize, usize),
    dilation: (usize, usize),
    views: Views,
}

impl Case {
    fn params(&self) -> Conv2dParams {
        Conv2dParams {
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: 1,
        }
    }
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let case = |name, input, out_channels, kernel, stride, padding, dilation, views| Case {
        name, input, out_channels, kernel, stride, padding, dilation, views,
    };
    vec![
        case("1x1", [1, 4, 5, 5], 6, (1, 1), (1, 1), (0, 0), (1, 1), Views::Dense),
        case("3x3 pad 1", [3, 5, 9, 9], 7, (3, 3), (1, 1), (1, 1), (1, 1), Views::Dense),
        case("3x3 stride 2", [3, 3, 9, 8], 5, (3, 3), (2, 2), (1, 1), (1, 1), Views::Dense),
        case("7x7 stride 2 pad 3", [1, 3, 16, 16], 8, (7, 7), (2, 2), (3, 3), (1, 1), Views::Dense),
        case("dilation 2", [3, 3, 10, 10], 4, (3, 3), (1, 1), (2, 2), (2, 2), Views::Dense),
        case("non-square", [3, 2, 7, 10], 3, (2, 3), (2, 1), (1, 0), (1, 2), Views::Dense),
        // 70 channels (two row tiles), 3 * 63 = 189 columns (two column tiles), K = 63 (four
        // k-steps, the last partial): every edge of the kernel's tiles.
        case("edge tiles", [3, 7, 7, 9], 70, (3, 3), (1, 1), (1, 1), (1, 1), Views::Dense),
        // Two full row tiles, four column tiles, nine k-steps (a ResNet-like 3x3 layer).
        case("multi-tile", [2, 16, 14, 14], 128, (3, 3), (1, 1), (1, 1), (1, 1), Views::Dense),
        // 128 and 160 output channels: two or three 64-row tiles (the wide 128-row tile is too
        // few workgroups here; `conv.rs`'s unit tests force it on such sizes).
        case("128 channels", [2, 8, 12, 12], 128, (3, 3), (1, 1), (1, 1), (1, 1), Views::Dense),
        case("160 channels s2", [2, 8, 12, 12], 160, (3, 3), (2, 2), (1, 1), (1, 1), Views::Dense),
        // 2 * 130 * 130 = 33,800 columns: 265 tiles of 128, so `prefers_wide` picks the 128 x 128
        // tile on the GPU.
        case("wide tile", [2, 4, 130, 130], 128, (3, 3), (1, 1), (1, 1), (1, 1), Views::Dense),
        case("window = input", [3, 2, 3, 3], 3, (3, 3), (1, 1), (0, 0), (1, 1), Views::Dense),
        case("strided views", [3, 3, 6, 7], 5, (3, 3), (1, 1), (1, 1), (1, 1), Views::Strided),
        case("offset view", [1, 3, 8, 8], 5, (3, 3), (2, 2), (1, 1), (1, 1), Views::Offset),
    ]
}

/// Input, weight and bias of `case` on `device` in `dtype`.
fn operands(case: &Case, device: &Device, dtype: DType) -> (Tensor, Tensor, Tensor) {
    let [n, c, h, w] = case.input;
    let (o, (kh, kw)) = (case.out_channels, case.kernel);
    let make = |shape: &[usize], seed| {
        let count = shape.iter().product();
        Tensor::from_vec(pseudo_random(count, seed), shape, device)
            .and_then(|t| t.to_dtype(dtype))
            .unwrap()
    };
    let (input, weight) = match case.views {
        Views::Dense => (make(&[n, c, h, w], 1), make(&[o, c, kh, kw], 2)),
        Views::Strided => (
            make(&[n, h, c, w], 1).permute(&[0, 2, 1, 3]).unwrap(),
            make(&[o, c, kw, kh], 2).transpose(2, 3).unwrap(),
        ),
        Views::Offset => (
            make(&[n, c + 2, h, w], 1).narrow(1, 1, c).unwrap(),
            make(&[o, c, kh, kw], 2),
        ),
    };
    assert_eq!(input.shape(), [n, c, h, w]);
    assert_eq!(case.views == Views::Strided, !input.is_contiguous());
    assert_eq!(case.views == Views::Strided, !weight.is_contiguous());
    (input, weight, make(&[o], 3))
}

/// (atol, rtol) for comparing two convolutions of `dtype`.
fn tolerance(dtype: DType) -> (f32, f32) {
    match dtype {
        DType::F64 => (1e-9, 1e-9),
        DType::F16 => (2e-2, 1e-2),
        _ => (1e-4, 1e-4),
    }
}

/// The three ways to run the direct path: untracked operands, a tracked input under
/// `no_grad`, a tracked input (which records). All must agree with the reference.
fn check_case(case: &Case, device: &Device, dtype: DType) {
    let (input, weight, bias) = operands(case, device, dtype);
    let params = case.params();
    let what = format!("{} ({dtype:?} on {device})", case.name);
    let direct = input.conv2d(&weight, Some(&bias), params).unwrap();
    let tracked = input.detach().requires_grad_(true);
    let direct_no_grad = {
        let _off = no_grad();
        tracked.conv2d(&weight, Some(&bias), params).unwrap()
    };
    let recorded = tracked.conv2d(&weight, Some(&bias), params).unwrap();
    let reference = unfold_conv2d(&input, &weight, Some(&bias), params);
    assert!(!direct.requires_grad() && !direct_no_grad.requires_grad());
    assert!(recorded.requires_grad(), "{what}: a tracked input records");
    assert_eq!(direct.shape(), reference.shape(), "{what}");
    let [n, _, h, w] = case.input;
    let out = |size: usize, k: usize, s: usize, p: usize, d: usize| {
        (size + 2 * p - d * (k - 1) - 1) / s + 1
    };
    assert_eq!(
        direct.shape(),
        [
            n,
            case.out_channels,
            out(
                h,
                case.kernel.0,
                case.stride.0,
                case.padding.0,
                case.dilation.0
            ),
            out(
                w,
                case.kernel.1,
                case.stride.1,
                case.padding.1,
                case.dilation.1
            ),
        ],
        "{what}"
    );
    assert_eq!(direct.dtype(), dtype);
    let expected = values(&reference);
    let (atol, rtol) = tolerance(dtype);
    assert_close(&values(&direct), &expected, atol, rtol, &what);
    assert_close(&values(&direct_no_grad), &expected, atol, rtol, &what);
    assert_close(&values(&recorded), &expected, atol, rtol, &what);
    if *device != Device::Cpu {
        // And against the CPU's reference in f32 on the same (rounded) values (read back
        // through `values`, which copies the view itself).
        let cpu = |t: &Tensor| Tensor::from_vec(values(t), t.shape(), &Device::Cpu).unwrap();
        let reference = unfold_conv2d(&cpu(&input), &cpu(&weight), Some(&cpu(&bias)), params);
        assert_close(&values(&direct), &values(&reference), atol, rtol, &what);
    }
}

fn direct_matches_reference_f32(device: &Device) {
    let _serial = serial();
    for case in cases() {
        check_case(&case, device, DType::F32);
    }
}

fn direct_matches_reference_low_and_high_precision(device: &Device) {
    let _serial = serial();
    let dtypes: &[DType] = match device {
        Device::Cpu => &[DType::F64, DType::F16],
        Device::Gpu(_)
            if anygrad_testing::f16_or_skip(
                device,
                "direct_matches_reference_low_and_high_precision (f16)",
            ) =>
        {
            &[DType::F16]
        }
        Device::Gpu(_) => &[],
    };
    for &dtype in dtypes {
        for case in cases() {
            check_case(&case, device, dtype);
        }
    }
}

/// Which path ran, seen through the profiler: the primitive records one `conv2d` op, the
/// composite an `index_select` and a `matmul`. Every one-group float convolution is direct,
/// whether it records or not.
fn direct_path_for_every_one_group_float_conv(device: &Device) {
    let _serial = serial();
    let input = Tensor::from_vec(pseudo_random(2 * 4 * 5 * 5, 4), &[2, 4, 5, 5], device).unwrap();
    let weight = Tensor::from_vec(pseudo_random(6 * 4 * 9, 5), &[6, 4, 3, 3], device).unwrap();
    let ops = |x: &Tensor, w: &Tensor, groups: usize| -> Vec<String> {
        let params = Conv2dParams {
            groups,
            ..Conv2dParams::default()
        };
        let (_, recorded) = profile(|| x.conv2d(w, None, params)).unwrap();
        recorded.events.iter().map(|e| e.name.clone()).collect()
    };
    let direct = |names: &[String]| {
        names.iter().any(|n| n == "conv2d") && !names.iter().any(|n| n == "index_select")
    };
    assert!(direct(&ops(&input, &weight, 1)), "untracked operands");
    let tracked_input = input.detach().requires_grad_(true);
    let tracked_weight = weight.detach().requires_grad_(true);
    for (x, w) in [(&tracked_input, &weight), (&input, &tracked_weight)] {
        let names = ops(x, w, 1);
        assert!(direct(&names), "tracked operand: direct, got {names:?}");
        assert!(!names.iter().any(|n| n == "matmul"), "{names:?}");
        let _off = no_grad();
        assert!(direct(&ops(x, w, 1)), "tracked operand under no_grad");
    }
    // Two groups: always the composite.
    let grouped = Tensor::from_vec(pseudo_random(6 * 2 * 9, 6), &[6, 2, 3, 3], device).unwrap();
    assert!(!direct(&ops(&input, &grouped, 2)));
    // Integers: the composite (the primitive is float-only), still exact.
    let ints = |shape: &[usize], seed| {
        let count = shape.iter().product();
        let small: Vec<i32> = pseudo_random(count, seed)
            .into_iter()
            .map(|v| (v * 4.0) as i32)
            .collect();
        Tensor::from_vec(small, shape, device).unwrap()
    };
    let (x, w) = (ints(&[2, 4, 5, 5], 7), ints(&[6, 4, 3, 3], 8));
    let names = ops(&x, &w, 1);
    assert!(!direct(&names), "{names:?}");
    let exact = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
    let expected = exact(&x)
        .conv2d(&exact(&w), None, Conv2dParams::default())
        .unwrap();
    let result = x.conv2d(&w, None, Conv2dParams::default()).unwrap();
    assert_eq!(result.dtype(), DType::I32);
    assert_eq!(values(&result), values(&expected));
}

/// Bad arguments give the same errors whichever path would have run (the checks come first).
fn bad_inputs_give_the_same_errors(device: &Device) {
    let _serial = serial();
    let zeros = |shape: &[usize]| Tensor::zeros(shape, DType::F32, device).unwrap();
    let image = zeros(&[1, 3, 4, 4]);
    let params = Conv2dParams::default();
    let with = |change: fn(&mut Conv2dParams)| {
        let mut p = params;
        change(&mut p);
        p
    };
    let cases: Vec<(&str, Tensor, Tensor, Option<Tensor>, Conv2dParams)> = vec![
        (
            "rank 3 input",
            zeros(&[3, 4, 4]),
            zeros(&[2, 3, 3, 3]),
            None,
            params,
        ),
        (
            "rank 3 weight",
            image.clone(),
            zeros(&[2, 3, 3]),
            None,
            params,
        ),
        (
            "channels",
            image.clone(),
            zeros(&[2, 2, 3, 3]),
            None,
            params,
        ),
        (
            "kernel too large",
            image.clone(),
            zeros(&[2, 3, 9, 9]),
            None,
            params,
        ),
        (
            "stride 0",
            image.clone(),
            zeros(&[2, 3, 3, 3]),
            None,
            with(|p| p.stride = (0, 1)),
        ),
        (
            "groups 0",
            image.clone(),
            zeros(&[2, 3, 3, 3]),
            None,
            with(|p| p.groups = 0),
        ),
        (
            "groups 2 of 3",
            image.clone(),
            zeros(&[2, 1, 3, 3]),
            None,
            with(|p| p.groups = 2),
        ),
        (
            "bias",
            image.clone(),
            zeros(&[2, 3, 3, 3]),
            Some(zeros(&[3])),
            params,
        ),
        (
            "dtype",
            image.clone(),
            Tensor::zeros(&[2, 3, 3, 3], DType::I32, device).unwrap(),
            None,
            params,
        ),
    ];
    for (name, input, weight, bias, params) in cases {
        let fast = input.conv2d(&weight, bias.as_ref(), params).unwrap_err();
        let tracked = input.detach().requires_grad_(true);
        let slow = tracked.conv2d(&weight, bias.as_ref(), params).unwrap_err();
        assert_eq!(fast.to_string(), slow.to_string(), "{name}");
        let shape_error = matches!(fast, Error::ShapeMismatch { op: "conv2d", .. });
        let expect_shape_error = matches!(
            name,
            "rank 3 input" | "rank 3 weight" | "channels" | "groups 0" | "groups 2 of 3" | "bias"
        );
        assert_eq!(shape_error, expect_shape_error, "{name}: {fast}");
    }
}

/// No images: an empty `[0, o, oh, ow]` result.
fn empty_batch(device: &Device) {
    let _serial = serial();
    let input = Tensor::zeros(&[0, 3, 5, 5], DType::F32, device).unwrap();
    let weight = Tensor::ones(&[4, 3, 3, 3], DType::F32, device).unwrap();
    let direct = input
        .conv2d(&weight, None, Conv2dParams::default())
        .unwrap();
    assert_eq!(direct.shape(), [0, 4, 3, 3]);
    assert!(values(&direct).is_empty());
}

anygrad_testing::device_tests!(
    empty_batch,
    direct_matches_reference_f32,
    direct_matches_reference_low_and_high_precision,
    direct_path_for_every_one_group_float_conv,
    bad_inputs_give_the_same_errors,
);
