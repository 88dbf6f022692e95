//! The depthwise convolution (`Tensor::conv2d` with groups == channels and one weight channel
//! per group: the `depthwise_conv2d` primitive and its two gradient primitives, recorded as
//! `GradFn::DepthwiseConv2d`) against the unfolded composite written with public ops
//! (`anygrad_testing::conv_reference::unfold_conv2d`: unfold by `index_select`, one matmul per
//! group) on the same values: output, input, weight and bias gradients, over strides,
//! padding, dilation, square and one-sided kernels, channel multipliers, batches, odd sizes
//! and strided or offset views; off the CPU also against the CPU's result. Then the
//! primitives the forward and backward run, finite-difference gradient checks, and the
//! errors of bad operands.

use std::sync::Mutex;

use anygrad_core::custom_op::gradcheck;
use anygrad_core::profiler::profile;
use anygrad_core::{Conv2dParams, DType, Device, Tensor};
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
    /// Contiguous input, weight and upstream gradient.
    Dense,
    /// Input and upstream gradient permuted from `[n, h, c, w]`, weight from `[o, 1, kw, kh]`.
    Strided,
    /// Input narrowed from `[n, c + 2, h, w]` (channels 1..c + 1): a view at an offset.
    Offset,
}

struct Case {
    name: &'static str,
    /// `[n, c, h, w]`.
    input: [usize; 4],
    multiplier: usize,
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
            groups: self.input[1],
        }
    }

    fn weight_shape(&self) -> [usize; 4] {
        let c = self.input[1];
        [c * self.multiplier, 1, self.kernel.0, self.kernel.1]
    }

    fn output_shape(&self) -> [usize; 4] {
        let [n, c, h, w] = self.input;
        let size = |size: usize, k: usize, s: usize, p: usize, d: usize| {
            (size + 2 * p - d * (k - 1) - 1) / s + 1
        };
        [
            n,
            c * self.multiplier,
            size(
                h,
                self.kernel.0,
                self.stride.0,
                self.padding.0,
                self.dilation.0,
            ),
            size(
                w,
                self.kernel.1,
                self.stride.1,
                self.padding.1,
                self.dilation.1,
            ),
        ]
    }
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let case = |name, input, multiplier, kernel, stride, padding, dilation| Case {
        name, input, multiplier, kernel, stride, padding, dilation, views: Views::Dense,
    };
    vec![
        case("3x3 pad 1", [1, 4, 9, 11], 1, (3, 3), (1, 1), (1, 1), (1, 1)),
        case("3x3 stride 2", [3, 5, 10, 9], 1, (3, 3), (2, 2), (1, 1), (1, 1)),
        // Output rows of 19: the CPU's strided loops over whole groups of 8 and a remainder.
        case("3x3 stride 2 wide rows", [2, 3, 9, 37], 1, (3, 3), (2, 2), (1, 1), (1, 1)),
        case("5x5 pad 2", [1, 6, 13, 12], 1, (5, 5), (1, 1), (2, 2), (1, 1)),
        case("5x5 stride 2 multiplier 2", [3, 3, 11, 14], 2, (5, 5), (2, 2), (2, 2), (1, 1)),
        case("1x7", [1, 4, 8, 15], 1, (1, 7), (1, 1), (0, 3), (1, 1)),
        case("7x1 multiplier 2", [3, 2, 15, 8], 2, (7, 1), (1, 1), (3, 0), (1, 1)),
        case("dilation 2", [3, 4, 12, 12], 1, (3, 3), (1, 1), (2, 2), (2, 2)),
        case("odd everything", [1, 3, 7, 5], 2, (3, 2), (2, 1), (0, 1), (1, 2)),
        case("window = input", [2, 2, 3, 3], 1, (3, 3), (1, 1), (0, 0), (1, 1)),
        case("stride 3 beyond the padding", [1, 2, 10, 11], 3, (3, 5), (3, 2), (2, 3), (2, 1)),
        Case { views: Views::Strided, ..case("strided views", [3, 4, 9, 8], 2, (3, 3), (1, 1), (1, 1), (1, 1)) },
        Case { views: Views::Offset, ..case("offset view", [1, 4, 7, 9], 1, (3, 3), (2, 2), (1, 1), (1, 1)) },
    ]
}

/// A tensor of `shape` with pseudo-random values rounded to `round_to`, held in `dtype`:
/// contiguous, or (`perm`, its own inverse) a view permuted back from data laid out in the
/// permuted order.
fn make(
    shape: &[usize],
    seed: u64,
    device: &Device,
    (round_to, dtype): (DType, DType),
    perm: Option<&[usize]>,
) -> Tensor {
    let count = shape.iter().product();
    let stored: Vec<usize> = match perm {
        None => shape.to_vec(),
        Some(perm) => perm.iter().map(|&p| shape[p]).collect(),
    };
    let t = Tensor::from_vec(pseudo_random(count, seed), &stored, device)
        .and_then(|t| t.to_dtype(round_to))
        .and_then(|t| t.to_dtype(dtype))
        .unwrap();
    match perm {
        None => t,
        Some(perm) => t.permute(perm).unwrap(),
    }
}

/// The output and the gradients of input, weight and bias of one path.
struct Results {
    output: Vec<f32>,
    input: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// Run `conv` on `case`'s operands (values rounded to `dtypes.0`, held in `dtypes.1`) and
/// backpropagate a fixed pseudo-random upstream gradient.
fn run(
    case: &Case,
    device: &Device,
    dtypes: (DType, DType),
    conv: impl Fn(&Tensor, &Tensor, &Tensor) -> Tensor,
) -> Results {
    let [n, c, h, w] = case.input;
    let weight_shape = case.weight_shape();
    let swap: Option<&[usize]> = (case.views == Views::Strided).then_some(&[0, 2, 1, 3]);
    let input = match case.views {
        Views::Offset => make(&[n, c + 2, h, w], 1, device, dtypes, None)
            .narrow(1, 1, c)
            .unwrap(),
        _ => make(&[n, c, h, w], 1, device, dtypes, swap),
    }
    .requires_grad_(true);
    let weight_swap: Option<&[usize]> = swap.map(|_| &[0, 1, 3, 2][..]);
    let weight = make(&weight_shape, 2, device, dtypes, weight_swap).requires_grad_(true);
    let bias = make(&[weight_shape[0]], 3, device, dtypes, None).requires_grad_(true);
    assert_eq!(
        case.views == Views::Strided,
        !input.is_contiguous(),
        "{}",
        case.name
    );
    let out = conv(&input, &weight, &bias);
    assert_eq!(out.shape(), case.output_shape(), "{}", case.name);
    let upstream = make(&case.output_shape(), 4, device, dtypes, swap);
    out.backward_with(&upstream).unwrap();
    let grad = |t: &Tensor| values(&t.grad().expect("a gradient"));
    Results {
        output: values(&out),
        input: grad(&input),
        weight: grad(&weight),
        bias: grad(&bias),
    }
}

/// Compare within a tolerance for `dtype`, relative to the largest expected magnitude.
fn assert_results_close(actual: &Results, expected: &Results, dtype: DType, what: &str) {
    let (atol, rtol) = match dtype {
        DType::F64 => (1e-9, 1e-9),
        DType::F16 => (1e-2, 1e-2),
        _ => (1e-5, 1e-4),
    };
    let pairs = [
        ("output", &actual.output, &expected.output),
        ("input grad", &actual.input, &expected.input),
        ("weight grad", &actual.weight, &expected.weight),
        ("bias grad", &actual.bias, &expected.bias),
    ];
    for (name, a, e) in pairs {
        let scale = e.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        assert_close(a, e, atol * scale, rtol, &format!("{what}: {name}"));
    }
}

/// The depthwise path against the unfolded composite on `device` (computed in f32, f64 for
/// f64, on the same rounded values) and, off the CPU, against the CPU's depthwise path.
fn check_case(case: &Case, device: &Device, dtype: DType) {
    let params = case.params();
    let what = format!("{} ({dtype:?} on {device})", case.name);
    let depthwise = run(case, device, (dtype, dtype), |x, w, b| {
        let out = x.conv2d(w, Some(b), params).unwrap();
        assert!(out.requires_grad());
        assert_eq!(out.dtype(), dtype);
        out
    });
    let wide = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let reference = run(case, device, (dtype, wide), |x, w, b| {
        unfold_conv2d(x, w, Some(b), params)
    });
    assert_results_close(&depthwise, &reference, dtype, &what);
    if *device != Device::Cpu {
        let on_cpu = run(case, &Device::Cpu, (dtype, wide), |x, w, b| {
            x.conv2d(w, Some(b), params).unwrap()
        });
        assert_results_close(&depthwise, &on_cpu, dtype, &format!("{what} vs CPU"));
    }
}

fn matches_the_unfolded_composite_f32(device: &Device) {
    let _serial = serial();
    for case in cases() {
        check_case(&case, device, DType::F32);
    }
}

fn matches_the_unfolded_composite_f16_and_f64(device: &Device) {
    let _serial = serial();
    let dtypes: &[DType] = match device {
        Device::Cpu => &[DType::F64, DType::F16],
        Device::Gpu(_)
            if anygrad_testing::f16_or_skip(
                device,
                "matches_the_unfolded_composite_f16_and_f64 (f16)",
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

/// Which primitives run, seen through the profiler: the depthwise forward, its input gradient
/// only for a tracked input, its weight gradient only for a tracked weight, never the
/// composite's `index_select`, `scatter_add` or `matmul`.
fn runs_only_the_depthwise_primitives(device: &Device) {
    let _serial = serial();
    let x = Tensor::from_vec(pseudo_random(2 * 3 * 6 * 6, 5), &[2, 3, 6, 6], device).unwrap();
    let w = Tensor::from_vec(pseudo_random(6 * 9, 6), &[6, 1, 3, 3], device).unwrap();
    let params = Conv2dParams {
        padding: (1, 1),
        groups: 3,
        ..Conv2dParams::default()
    };
    for (track_input, track_weight) in [(true, true), (true, false), (false, true)] {
        let x = x.detach().requires_grad_(track_input);
        let w = w.detach().requires_grad_(track_weight);
        let (_, recorded) = profile(|| x.conv2d(&w, None, params)?.sum_all()?.backward()).unwrap();
        let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
        let ran = |op: &str| names.contains(&op);
        assert!(ran("depthwise_conv2d"), "{names:?}");
        assert_eq!(
            ran("depthwise_conv2d_backward_input"),
            track_input,
            "{names:?}"
        );
        assert_eq!(
            ran("depthwise_conv2d_backward_weight"),
            track_weight,
            "{names:?}"
        );
        assert!(
            !ran("index_select") && !ran("scatter_add") && !ran("matmul"),
            "{names:?}"
        );
        assert!(!ran("conv2d"), "{names:?}");
        assert_eq!(x.grad().is_some(), track_input);
        assert_eq!(w.grad().is_some(), track_weight);
    }
    // Other groupings keep the composite: two input channels per group.
    let w = Tensor::from_vec(pseudo_random(4 * 2 * 9, 7), &[4, 2, 3, 3], device).unwrap();
    let x = Tensor::from_vec(pseudo_random(4 * 25, 8), &[1, 4, 5, 5], device).unwrap();
    let grouped = Conv2dParams {
        groups: 2,
        ..Conv2dParams::default()
    };
    let (_, recorded) = profile(|| x.conv2d(&w, None, grouped)).unwrap();
    assert!(!recorded
        .events
        .iter()
        .any(|e| e.name.starts_with("depthwise")));
}

/// Finite differences against autograd through the depthwise primitives: f64 on the CPU, f32
/// with a coarser step elsewhere.
fn gradients_pass_gradcheck(device: &Device) {
    let _serial = serial();
    let (dtype, epsilon, tolerance) = match device {
        Device::Cpu => (DType::F64, 1e-6, 1e-6),
        Device::Gpu(_) => (DType::F32, 1e-2, 2e-2),
    };
    for (input, multiplier, kernel, stride, padding, dilation) in [
        ([2, 2, 5, 5], 1, (3, 3), (1, 1), (1, 1), (1, 1)),
        ([1, 3, 6, 5], 2, (3, 2), (2, 1), (1, 0), (1, 2)),
        ([2, 1, 4, 7], 3, (1, 5), (1, 2), (0, 2), (1, 1)),
    ] {
        let [n, c, h, w] = input;
        let tensor = |shape: &[usize], seed: u64| {
            Tensor::from_vec(pseudo_random(shape.iter().product(), seed), shape, device)
                .and_then(|t| t.to_dtype(dtype))
                .unwrap()
                .requires_grad_(true)
        };
        let o = c * multiplier;
        let operands = [
            tensor(&[n, c, h, w], 11),
            tensor(&[o, 1, kernel.0, kernel.1], 12),
            tensor(&[o], 13),
        ];
        let params = Conv2dParams {
            stride,
            padding,
            dilation,
            groups: c,
        };
        let report = gradcheck(
            |t| t[0].conv2d(&t[1], Some(&t[2]), params),
            &operands,
            epsilon,
            tolerance,
        )
        .unwrap_or_else(|error| panic!("{input:?} x{multiplier} on {device}: {error}"));
        assert!(report.checked_elements > 0);
    }
}

/// Under autocast, f32 operands run the depthwise primitive in f16 (as the other
/// convolutions do), and the gradients come back to the f32 leaves in f32.
fn autocast_runs_the_depthwise_primitive_in_f16(device: &Device) {
    let _serial = serial();
    if !anygrad_testing::f16_or_skip(device, "autocast_runs_the_depthwise_primitive_in_f16") {
        return;
    }
    let x = Tensor::from_vec(pseudo_random(2 * 4 * 7 * 7, 14), &[2, 4, 7, 7], device)
        .unwrap()
        .requires_grad_(true);
    let w = Tensor::from_vec(pseudo_random(8 * 9, 15), &[8, 1, 3, 3], device)
        .unwrap()
        .requires_grad_(true);
    let params = Conv2dParams {
        padding: (1, 1),
        groups: 4,
        ..Conv2dParams::default()
    };
    let (out, recorded) = profile(|| {
        let _low = anygrad_core::autocast(DType::F16, device)?;
        x.conv2d(&w, None, params)
    })
    .unwrap();
    assert_eq!(out.dtype(), DType::F16);
    assert!(recorded.events.iter().any(|e| e.name == "depthwise_conv2d"));
    out.to_dtype(DType::F32)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let (xr, wr) = (
        x.detach().requires_grad_(true),
        w.detach().requires_grad_(true),
    );
    unfold_conv2d(&xr, &wr, None, params)
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    for (leaf, reference, what) in [(&x, &xr, "input"), (&w, &wr, "weight")] {
        let grad = leaf.grad().unwrap();
        assert_eq!(grad.dtype(), DType::F32, "{what}");
        let expected = values(&reference.grad().unwrap());
        let scale = expected.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        assert_close(&values(&grad), &expected, 1e-2 * scale, 1e-2, what);
    }
}

/// No images: an empty output and input gradient, a zero weight gradient.
fn empty_batch(device: &Device) {
    let _serial = serial();
    let x = Tensor::zeros(&[0, 3, 5, 5], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let w = Tensor::ones(&[6, 1, 3, 3], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let params = Conv2dParams {
        groups: 3,
        ..Conv2dParams::default()
    };
    let out = x.conv2d(&w, None, params).unwrap();
    assert_eq!(out.shape(), [0, 6, 3, 3]);
    out.sum_all().unwrap().backward().unwrap();
    assert!(values(&x.grad().unwrap()).is_empty());
    assert_eq!(values(&w.grad().unwrap()), vec![0.0; 6 * 9]);
}

/// Bad operands are errors naming the op, never a panic: a window larger than the padded
/// input, a zero stride, a weight or bias of the wrong shape, mixed dtypes; integers never
/// reach the depthwise primitive.
fn bad_operands_are_errors(device: &Device) {
    let _serial = serial();
    let x = Tensor::from_vec(pseudo_random(2 * 4 * 4, 9), &[1, 2, 4, 4], device).unwrap();
    let depthwise = |stride, padding| Conv2dParams {
        stride,
        padding,
        groups: 2,
        ..Conv2dParams::default()
    };
    let weight = |shape: &[usize]| Tensor::ones(shape, DType::F32, device).unwrap();
    let too_big = x.conv2d(&weight(&[2, 1, 7, 7]), None, depthwise((1, 1), (0, 0)));
    assert!(too_big.unwrap_err().to_string().contains("conv2d"));
    assert!(x
        .conv2d(&weight(&[2, 1, 3, 3]), None, depthwise((0, 1), (1, 1)))
        .is_err());
    // Three output channels over two groups.
    assert!(x
        .conv2d(&weight(&[3, 1, 3, 3]), None, depthwise((1, 1), (1, 1)))
        .is_err());
    // A bias of the wrong length.
    let bias = Tensor::ones(&[3], DType::F32, device).unwrap();
    assert!(x
        .conv2d(
            &weight(&[2, 1, 3, 3]),
            Some(&bias),
            depthwise((1, 1), (1, 1))
        )
        .is_err());
    // Mixed dtypes (where the device holds f64).
    if let Ok(double) = weight(&[2, 1, 3, 3]).to_dtype(DType::F64) {
        let mixed = x.conv2d(&double, None, depthwise((1, 1), (1, 1)));
        assert!(mixed.unwrap_err().to_string().contains("conv2d"));
    }
    // Integers take the composite (as other integer convolutions do) or are refused; either
    // way, no panic and never the depthwise primitive.
    let integers = x.to_dtype(DType::I32).unwrap();
    let integer_weight = weight(&[2, 1, 3, 3]).to_dtype(DType::I32).unwrap();
    if let Ok((out, recorded)) =
        profile(|| integers.conv2d(&integer_weight, None, depthwise((1, 1), (1, 1))))
    {
        assert_eq!(out.shape(), [1, 2, 4, 4]);
        assert!(!recorded
            .events
            .iter()
            .any(|e| e.name.starts_with("depthwise")));
    }
}

anygrad_testing::device_tests!(
    matches_the_unfolded_composite_f32,
    matches_the_unfolded_composite_f16_and_f64,
    runs_only_the_depthwise_primitives,
    gradients_pass_gradcheck,
    autocast_runs_the_depthwise_primitive_in_f16,
    empty_batch,
    bad_operands_are_errors,
);
