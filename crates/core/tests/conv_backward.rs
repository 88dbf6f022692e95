//! Gradients of the direct conv2d (`GradFn::Conv2d`: the `conv2d_backward_input` and
//! `conv2d_backward_weight` primitives) against the gradients autograd takes through a
//! reference convolution written with public ops (unfold by `index_select`, then matmul;
//! `anygrad_testing::conv_reference`), on the same device; GPU results also against the CPU's.
//! The cases cover every geometry parameter, odd channel counts, batches of 1 and 3, sizes that are
//! multiples of no tile, several row and column tiles, a split K (weight gradient) and strided
//! operands and output gradients. f64 and f16 on the CPU, f16 on GPUs that have it.

use std::sync::Mutex;

use anygrad_core::profiler::profile;
use anygrad_core::{Conv2dParams, DType, Device, Tensor};
use anygrad_testing::conv_reference::{conv_output_size, unfold_conv2d};
use anygrad_testing::{assert_close, pseudo_random, values};

/// The profiler is process-wide: tests here run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
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
    /// Input and weight as strided views, and a strided output gradient.
    strided: bool,
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

    fn output_shape(&self) -> [usize; 4] {
        let [n, _, h, w] = self.input;
        let p = self.params();
        [
            n,
            self.out_channels,
            conv_output_size(h, self.kernel.0, p.stride.0, p.padding.0, p.dilation.0),
            conv_output_size(w, self.kernel.1, p.stride.1, p.padding.1, p.dilation.1),
        ]
    }
}

#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let case = |name, input, out_channels, kernel, stride, padding, dilation| Case {
        name, input, out_channels, kernel, stride, padding, dilation, strided: false,
    };
    vec![
        case("1x1", [1, 4, 5, 5], 6, (1, 1), (1, 1), (0, 0), (1, 1)),
        case("1x1 stride 2", [3, 5, 7, 6], 3, (1, 1), (2, 2), (0, 0), (1, 1)),
        case("3x3 pad 1", [3, 5, 9, 9], 7, (3, 3), (1, 1), (1, 1), (1, 1)),
        case("3x3 stride 2", [3, 3, 9, 8], 5, (3, 3), (2, 2), (1, 1), (1, 1)),
        case("7x7 stride 2 pad 3", [1, 3, 16, 16], 8, (7, 7), (2, 2), (3, 3), (1, 1)),
        case("dilation 2", [3, 3, 10, 10], 4, (3, 3), (1, 1), (2, 2), (2, 2)),
        case("non-square", [3, 2, 7, 10], 3, (2, 3), (2, 1), (1, 0), (1, 2)),
        case("stride 3 > kernel", [1, 3, 11, 10], 2, (2, 2), (3, 3), (1, 0), (1, 1)),
        // Weight gradient: 70 rows (two row tiles); input gradient: 7 rows, 189 columns (two
        // column tiles); K = 63 resp. 630, the last k-steps partial.
        case("edge tiles", [3, 7, 7, 9], 70, (3, 3), (1, 1), (1, 1), (1, 1)),
        // Input gradient with 67 rows (two row tiles), odd channel counts.
        case("many input channels", [1, 67, 5, 5], 5, (3, 3), (1, 1), (1, 1), (1, 1)),
        // Input gradient with 128 and 160 rows (M = c): two or three 64-row tiles (the
        // 128-row tile is forced on such sizes in `conv_backward.rs`'s unit tests).
        case("128 input channels", [2, 128, 12, 12], 8, (3, 3), (1, 1), (1, 1), (1, 1)),
        case("160 inputs s2", [2, 160, 12, 12], 8, (3, 3), (2, 2), (1, 1), (1, 1)),
        // Weight gradient: two row tiles, two column tiles (144 columns), 25 k-steps.
        case("multi-tile", [2, 16, 14, 14], 128, (3, 3), (1, 1), (1, 1), (1, 1)),
        // K = 3 * 23 * 21 = 1449 (91 k-steps): split in two, the second split shorter.
        case("split K", [3, 3, 23, 21], 5, (3, 3), (1, 1), (1, 1), (1, 1)),
        case("window = input", [3, 2, 3, 3], 3, (3, 3), (1, 1), (0, 0), (1, 1)),
        Case { strided: true, ..case("strided views", [3, 3, 6, 7], 5, (3, 3), (2, 1), (1, 1), (1, 1)) },
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

/// The gradients of input, weight and bias, and the output, of one path.
struct Gradients {
    input: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
    output: Vec<f32>,
}

/// Run `conv` on `case`'s operands (values rounded to `dtypes.0`, held in `dtypes.1`) and
/// backpropagate a fixed pseudo-random upstream gradient.
fn gradients(
    case: &Case,
    device: &Device,
    dtypes: (DType, DType),
    conv: impl Fn(&Tensor, &Tensor, &Tensor) -> Tensor,
) -> Gradients {
    let [n, c, h, w] = case.input;
    let (o, (kh, kw)) = (case.out_channels, case.kernel);
    let swap: Option<&[usize]> = case.strided.then_some(&[0, 2, 1, 3]);
    let input = make(&[n, c, h, w], 1, device, dtypes, swap).requires_grad_(true);
    let weight = make(&[o, c, kh, kw], 2, device, dtypes, swap).requires_grad_(true);
    let bias = make(&[o], 3, device, dtypes, None).requires_grad_(true);
    assert_eq!(
        case.strided,
        !input.is_contiguous() && !weight.is_contiguous()
    );
    let out = conv(&input, &weight, &bias);
    assert_eq!(out.shape(), case.output_shape(), "{}", case.name);
    let upstream = make(&case.output_shape(), 4, device, dtypes, swap);
    assert_eq!(case.strided, !upstream.is_contiguous());
    out.backward_with(&upstream).unwrap();
    let grad = |t: &Tensor| values(&t.grad().expect("a gradient"));
    Gradients {
        input: grad(&input),
        weight: grad(&weight),
        bias: grad(&bias),
        output: values(&out),
    }
}

/// Compare within `tolerance(dtype)` relative to the largest expected magnitude.
fn assert_gradients_close(actual: &Gradients, expected: &Gradients, dtype: DType, what: &str) {
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

/// Direct (recorded) conv2d against the unfold + matmul reference on `device` and, off the
/// CPU, against the CPU's direct conv2d on the same (rounded) values.
fn check_case(case: &Case, device: &Device, dtype: DType) {
    let params = case.params();
    let what = format!("{} ({dtype:?} on {device})", case.name);
    let direct = gradients(case, device, (dtype, dtype), |x, w, b| {
        let out = x.conv2d(w, Some(b), params).unwrap();
        assert!(out.requires_grad());
        out
    });
    // The reference in f32 (f64 for f64) on the same rounded values: for f16, this measures
    // the f16 result against exact arithmetic.
    let wide = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let reference = gradients(case, device, (dtype, wide), |x, w, b| {
        unfold_conv2d(x, w, Some(b), params)
    });
    assert_gradients_close(&direct, &reference, dtype, &what);
    if *device != Device::Cpu {
        let on_cpu = gradients(case, &Device::Cpu, (dtype, wide), |x, w, b| {
            x.conv2d(w, Some(b), params).unwrap()
        });
        assert_gradients_close(&direct, &on_cpu, dtype, &format!("{what} vs CPU"));
    }
}

fn gradients_match_reference_f32(device: &Device) {
    let _serial = serial();
    for case in cases() {
        check_case(&case, device, DType::F32);
    }
}

fn gradients_match_reference_low_and_high_precision(device: &Device) {
    let _serial = serial();
    let dtypes: &[DType] = match device {
        Device::Cpu => &[DType::F64, DType::F16],
        Device::Gpu(_)
            if anygrad_testing::f16_or_skip(
                device,
                "gradients_match_reference_low_and_high_precision (f16)",
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

/// Which primitives the backward runs, seen through the profiler: the input gradient only
/// for a tracked input, the weight gradient only for a tracked weight, never the composite's
/// `index_select` / `scatter_add`.
fn backward_runs_only_the_needed_primitives(device: &Device) {
    let _serial = serial();
    let x = Tensor::from_vec(pseudo_random(2 * 3 * 6 * 6, 5), &[2, 3, 6, 6], device).unwrap();
    let w = Tensor::from_vec(pseudo_random(4 * 3 * 9, 6), &[4, 3, 3, 3], device).unwrap();
    let params = Conv2dParams {
        padding: (1, 1),
        ..Conv2dParams::default()
    };
    for (track_input, track_weight) in [(true, true), (true, false), (false, true)] {
        let x = x.detach().requires_grad_(track_input);
        let w = w.detach().requires_grad_(track_weight);
        let (_, recorded) = profile(|| x.conv2d(&w, None, params)?.sum_all()?.backward()).unwrap();
        let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
        let ran = |op: &str| names.contains(&op);
        assert!(ran("conv2d"), "{names:?}");
        assert_eq!(ran("conv2d_backward_input"), track_input, "{names:?}");
        assert_eq!(ran("conv2d_backward_weight"), track_weight, "{names:?}");
        assert!(!ran("index_select") && !ran("scatter_add") && !ran("matmul"));
        assert_eq!(x.grad().is_some(), track_input);
        assert_eq!(w.grad().is_some(), track_weight);
    }
}

/// Gradients accumulate over two uses of the same conv output and of the same weight.
fn gradients_accumulate(device: &Device) {
    let _serial = serial();
    let x = Tensor::from_vec(pseudo_random(2 * 3 * 5 * 5, 7), &[2, 3, 5, 5], device)
        .unwrap()
        .requires_grad_(true);
    let w = Tensor::from_vec(pseudo_random(2 * 3 * 4, 8), &[2, 3, 2, 2], device)
        .unwrap()
        .requires_grad_(true);
    let params = Conv2dParams::default();
    let a = x.conv2d(&w, None, params).unwrap();
    let b = x.mul_scalar(2.0).unwrap().conv2d(&w, None, params).unwrap();
    a.add(&b).unwrap().sum_all().unwrap().backward().unwrap();
    // d/dx = 3 * (the gradient of one conv), d/dw = conv_grad(x) + conv_grad(2x) = 3 * it.
    let (xr, wr) = (
        x.detach().requires_grad_(true),
        w.detach().requires_grad_(true),
    );
    unfold_conv2d(&xr, &wr, None, params)
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let triple = |t: &Tensor| values(&t.grad().unwrap().mul_scalar(3.0).unwrap());
    let (got_x, got_w) = (values(&x.grad().unwrap()), values(&w.grad().unwrap()));
    assert_close(&got_x, &triple(&xr), 1e-4, 1e-4, "input grad");
    assert_close(&got_w, &triple(&wr), 1e-4, 1e-4, "weight grad");
}

/// No images: empty input gradient, zero weight gradient.
fn empty_batch_gradients(device: &Device) {
    let _serial = serial();
    let x = Tensor::zeros(&[0, 3, 5, 5], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let w = Tensor::ones(&[4, 3, 3, 3], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let out = x.conv2d(&w, None, Conv2dParams::default()).unwrap();
    out.sum_all().unwrap().backward().unwrap();
    assert!(values(&x.grad().unwrap()).is_empty());
    assert_eq!(values(&w.grad().unwrap()), vec![0.0; 4 * 3 * 9]);
}

anygrad_testing::device_tests!(
    gradients_match_reference_f32,
    gradients_match_reference_low_and_high_precision,
    backward_runs_only_the_needed_primitives,
    gradients_accumulate,
    empty_batch_gradients,
);
