//! The row primitives on every device against composites written with public ops: softmax and
//! log-softmax over the last dim (forward and gradient, the gradient one kernel too), `layer_norm` (with and without weight and bias) and
//! `rms_norm` (with and without weight; PyTorch's values for a known row),
//! for rows short and long (1 to 5,000 elements: every lane count of the GPU kernel, rows
//! longer than one pass of a workgroup), row counts that leave workgroups partly empty,
//! strided input views, F32 and F16; the profiler shows one op each; bad shapes are errors.
//! `rotary_embedding` (full and partial rotation, strided input, F32 and F16) against its
//! composite (the path taken with gradients recorded) and a hand computation, with its
//! gradient through the composite, and bad tables as errors.

use std::sync::Mutex;

use anygrad_core::profiler::profile;
use anygrad_core::{no_grad, DType, Device, Error, Tensor};
use anygrad_testing::{assert_close, random_tensor, values};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn random(shape: &[usize], seed: u64, scale: f32, device: &Device) -> Tensor {
    random_tensor(shape, seed, device)
        .mul_scalar(f64::from(scale))
        .unwrap()
}

/// `[rows, length]` shapes: every lane count (32 to 256), partial workgroups, long rows.
const SHAPES: [[usize; 2]; 7] = [
    [3, 1],
    [5, 7],
    [9, 128],
    [7, 384],
    [4, 1000],
    [2, 5000],
    [300, 33],
];

fn softmax_reference(x: &Tensor) -> Tensor {
    let shifted = x.sub(&x.max(&[-1], true).unwrap()).unwrap();
    let exp = shifted.exp().unwrap();
    exp.div(&exp.sum(&[-1], true).unwrap()).unwrap()
}

fn log_softmax_reference(x: &Tensor) -> Tensor {
    let max = x.max(&[-1], true).unwrap();
    let shifted = x.sub(&max).unwrap();
    let log_sum = shifted
        .exp()
        .unwrap()
        .sum(&[-1], true)
        .unwrap()
        .log()
        .unwrap();
    shifted.sub(&log_sum).unwrap()
}

fn layer_norm_reference(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Tensor {
    let mean = x.mean(&[-1], true).unwrap();
    let centered = x.sub(&mean).unwrap();
    let var = centered.square().unwrap().mean(&[-1], true).unwrap();
    let mut out = centered
        .mul(&var.add_scalar(1e-5).unwrap().rsqrt().unwrap())
        .unwrap();
    if let Some(weight) = weight {
        out = out.mul(weight).unwrap();
    }
    if let Some(bias) = bias {
        out = out.add(bias).unwrap();
    }
    out
}

fn rms_norm_reference(x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Tensor {
    let mean_square = x.square().unwrap().mean(&[-1], true).unwrap();
    let out = x
        .mul(&mean_square.add_scalar(eps).unwrap().rsqrt().unwrap())
        .unwrap();
    match weight {
        Some(weight) => out.mul(weight).unwrap(),
        None => out,
    }
}

fn dtypes(device: &Device) -> Vec<DType> {
    if anygrad_testing::f16_or_skip(
        device,
        &format!("{} (f16)", anygrad_testing::current_test()),
    ) {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
    }
}

fn tolerance(dtype: DType) -> f32 {
    if dtype == DType::F16 {
        4e-3
    } else {
        2e-5
    }
}

fn row_primitives_match_composites(device: &Device) {
    let _serial = serial();
    let _off = no_grad();
    for dtype in dtypes(device) {
        for (seed, [rows, length]) in SHAPES.into_iter().enumerate() {
            let seed = seed as u64 * 7;
            let x = random(&[rows, length], seed, 4.0, device)
                .add_scalar(1.5)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            // A strided view of the same shape: the transpose of a [length, rows] tensor.
            let strided = random(&[length, rows], seed + 1, 4.0, device)
                .to_dtype(dtype)
                .unwrap()
                .t()
                .unwrap();
            let weight = random(&[length], seed + 2, 1.0, device);
            let bias = random(&[length], seed + 3, 1.0, device);
            let tol = tolerance(dtype);
            for input in [&x, &strided] {
                let what = format!(
                    "[{rows}, {length}] {dtype:?} contiguous {} on {device}",
                    input.is_contiguous()
                );
                let (out, recorded) = profile(|| input.softmax(-1)).unwrap();
                let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
                assert_eq!(names, ["softmax"], "{what}: one primitive");
                assert_eq!(out.dtype(), dtype);
                let wide = input.to_dtype(DType::F32).unwrap();
                assert_close(
                    &values(&out),
                    &values(&softmax_reference(&wide)),
                    tol,
                    tol,
                    &what,
                );
                let (logs, recorded) = profile(|| input.log_softmax(-1)).unwrap();
                let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
                assert_eq!(names, ["log_softmax"], "{what}: one primitive");
                assert_eq!(logs.dtype(), dtype);
                assert_close(
                    &values(&logs),
                    &values(&log_softmax_reference(&wide)),
                    4.0 * tol,
                    4.0 * tol,
                    &format!("log_softmax {what}"),
                );
                // Rows sum to one.
                let sums = values(&out.to_dtype(DType::F32).unwrap().sum(&[-1], false).unwrap());
                assert!(
                    sums.iter().all(|s| (s - 1.0).abs() < 10.0 * tol),
                    "{what}: {sums:?}"
                );
                for affine in [false, true] {
                    let (w, b) = if affine {
                        (
                            Some(weight.to_dtype(dtype).unwrap()),
                            Some(bias.to_dtype(dtype).unwrap()),
                        )
                    } else {
                        (None, None)
                    };
                    let out = input
                        .layer_norm(&[length], w.as_ref(), b.as_ref(), 1e-5)
                        .unwrap();
                    assert_eq!(out.dtype(), dtype);
                    let (w32, b32) = (
                        w.as_ref().map(|t| t.to_dtype(DType::F32).unwrap()),
                        b.as_ref().map(|t| t.to_dtype(DType::F32).unwrap()),
                    );
                    let expected = layer_norm_reference(&wide, w32.as_ref(), b32.as_ref());
                    // Rows of one element normalize to exactly zero (then the bias).
                    assert_close(
                        &values(&out),
                        &values(&expected),
                        4.0 * tol,
                        4.0 * tol,
                        &format!("layer_norm affine {affine} {what}"),
                    );
                    let w = w.as_ref();
                    let (out, recorded) =
                        profile(|| input.rms_norm(&[length], w, Some(1e-5))).unwrap();
                    let names: Vec<&str> =
                        recorded.events.iter().map(|e| e.name.as_str()).collect();
                    assert_eq!(names, ["rms_norm"], "{what}: one primitive");
                    assert_eq!(out.dtype(), dtype);
                    assert_close(
                        &values(&out),
                        &values(&rms_norm_reference(&wide, w32.as_ref(), 1e-5)),
                        4.0 * tol,
                        4.0 * tol,
                        &format!("rms_norm weighted {affine} {what}"),
                    );
                }
            }
        }
    }
}

/// Gradients through the primitive softmax equal the composite's; `layer_norm` with a tracked
/// input takes the composite and records.
fn gradients_match(device: &Device) {
    let _serial = serial();
    let upstream = random(&[6, 40], 11, 1.0, device);
    let grad = |primitive: bool| {
        let x = random(&[6, 40], 12, 3.0, device).requires_grad_(true);
        let y = if primitive {
            x.softmax(-1).unwrap()
        } else {
            softmax_reference(&x)
        };
        y.mul(&upstream)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        values(&x.grad().unwrap())
    };
    assert_close(&grad(true), &grad(false), 1e-5, 1e-5, "softmax gradient");
    // Log-softmax's gradient, by its primitive (one kernel) and by the composite; the
    // upstream gradient a strided view, rows long enough for several passes of a lane.
    for length in [40usize, 700] {
        let upstream = random(&[length, 6], 15, 1.0, device).t().unwrap();
        let grad = |primitive: bool| {
            let x = random(&[6, length], 16, 3.0, device).requires_grad_(true);
            let y = if primitive {
                x.log_softmax(-1).unwrap()
            } else {
                log_softmax_reference(&x)
            };
            let loss = y.mul(&upstream).unwrap().sum_all().unwrap();
            let (_, recorded) = profile(|| loss.backward()).unwrap();
            let names: Vec<String> = recorded.events.iter().map(|e| e.name.clone()).collect();
            assert_eq!(
                names.iter().any(|n| n == "log_softmax_backward"),
                primitive,
                "{names:?}"
            );
            values(&x.grad().unwrap())
        };
        assert_close(
            &grad(true),
            &grad(false),
            2e-5,
            2e-5,
            &format!("log_softmax gradient, rows of {length} on {device}"),
        );
    }
    let x = random(&[4, 3, 8], 13, 2.0, device).requires_grad_(true);
    let weight = random(&[3, 8], 14, 1.0, device).requires_grad_(true);
    let out = x.layer_norm(&[3, 8], Some(&weight), None, 1e-5).unwrap();
    assert!(out.requires_grad());
    out.square().unwrap().sum_all().unwrap().backward().unwrap();
    assert!(x.grad().is_some() && weight.grad().is_some());
    // Two normalized dims under no_grad: the primitive over the flattened 24.
    let _off = no_grad();
    let (fast, recorded) = profile(|| x.layer_norm(&[3, 8], Some(&weight), None, 1e-5)).unwrap();
    assert!(recorded.events.iter().any(|e| e.name == "layer_norm"));
    assert_close(
        &values(&fast),
        &values(&out),
        1e-5,
        1e-5,
        "primitive vs composite, 2 dims",
    );
}

/// `rms_norm` on known rows, by the definition `torch.nn.functional.rms_norm` documents
/// (`x / sqrt(mean(x²) + eps) * weight`, eps the f32 machine epsilon; the values computed in
/// f64 with numpy), and the weight's gradient through the recorded composite.
fn rms_norm_known_values(device: &Device) {
    let _serial = serial();
    let x = Tensor::from_vec(
        vec![1.0f32, 2.0, 3.0, 4.0, -3.0, 0.0, 0.0, 4.0],
        &[2, 4],
        device,
    )
    .unwrap();
    let weight = Tensor::from_vec(vec![1.0f32, 0.5, 2.0, -1.0], &[4], device).unwrap();
    let expected = [
        0.365_148_37,
        0.365_148_37,
        2.190_890_2,
        -1.460_593_5,
        -1.2,
        0.0,
        0.0,
        -1.6,
    ];
    let out = x.rms_norm(&[4], Some(&weight), None).unwrap();
    assert_close(&values(&out), &expected, 1e-6, 1e-6, "rms_norm known row");
    // Gradients through the recorded composite: the input's and the weight's.
    let tracked = x.detach().requires_grad_(true);
    let w = weight.detach().requires_grad_(true);
    let recorded = tracked.rms_norm(&[4], Some(&w), None).unwrap();
    assert_close(&values(&recorded), &expected, 1e-6, 1e-6, "composite");
    recorded.sum_all().unwrap().backward().unwrap();
    // d/dw of sum(x / rms * w) is x / rms summed over rows.
    assert_close(
        &values(&w.grad().unwrap()),
        &[-0.834_851_6, 0.730_296_7, 1.095_445_1, 3.060_593_5],
        1e-5,
        1e-5,
        "weight gradient",
    );
    assert_eq!(values(&tracked.grad().unwrap()).len(), 8);
    // F16 stays F16, computed in f32; eps defaults to the f16 machine epsilon.
    if anygrad_testing::f16_or_skip(device, "rms_norm_known_values (f16)") {
        let _off = no_grad();
        let half = x.to_dtype(DType::F16).unwrap();
        let out = half.rms_norm(&[4], None, None).unwrap();
        assert_eq!(out.dtype(), DType::F16);
        let expected = rms_norm_reference(&x, None, 0.0009765625);
        assert_close(&values(&out), &values(&expected), 2e-3, 2e-3, "f16");
    }
}

/// Fully masked attention rows give zeros (the `safe` softmax), both paths.
fn masked_attention_rows_are_zero(device: &Device) {
    let _serial = serial();
    let q = random(&[1, 2, 3, 4], 15, 1.0, device);
    let k = random(&[1, 2, 5, 4], 16, 1.0, device);
    let v = random(&[1, 2, 5, 4], 17, 1.0, device);
    // Query row 1 sees no key; the others see keys 0..=2.
    let mut allowed = vec![true; 3 * 5];
    for (i, slot) in allowed.iter_mut().enumerate() {
        let (row, key) = (i / 5, i % 5);
        *slot = row != 1 && key <= 2;
    }
    let mask = Tensor::from_vec(allowed, &[3, 5], device).unwrap();
    let out = anygrad_core::scaled_dot_product_attention(&q, &k, &v, Some(&mask), 0.0, false, None)
        .unwrap();
    let out = values(&out);
    assert!(out.iter().all(|v| v.is_finite()));
    for head in 0..2 {
        let row = &out[head * 12 + 4..head * 12 + 8];
        assert!(row.iter().all(|&v| v == 0.0), "{row:?}");
    }
}

/// Log-softmax of rows with infinities: `-inf` entries give `-inf`, a row of only `-inf` gives
/// NaN (as PyTorch's), and the finite entries of a row are the ones without the `-inf`.
fn log_softmax_infinities(device: &Device) {
    let _serial = serial();
    let _off = no_grad();
    let inf = f32::INFINITY;
    let x = Tensor::from_vec(
        vec![0.5f32, -inf, 2.0, -1.0, -inf, -inf, -inf, -inf],
        &[2, 4],
        device,
    )
    .unwrap();
    let out = values(&x.log_softmax(-1).unwrap());
    let finite = values(
        &Tensor::from_vec(vec![0.5f32, 2.0, -1.0], &[3], device)
            .unwrap()
            .log_softmax(-1)
            .unwrap(),
    );
    assert_close(
        &[out[0], out[2], out[3]],
        &finite,
        1e-6,
        1e-6,
        "finite entries",
    );
    assert_eq!(out[1], -inf);
    assert!(out[4..].iter().all(|v| v.is_nan()), "{out:?}");
}

fn bad_shapes_are_errors(device: &Device) {
    let _serial = serial();
    let x = random(&[2, 3, 4], 18, 1.0, device);
    let error = x.layer_norm(&[5], None, None, 1e-5).unwrap_err();
    assert!(
        matches!(
            error,
            Error::InvalidShape {
                op: "layer_norm",
                ..
            }
        ),
        "{error}"
    );
    let wrong = random(&[3], 19, 1.0, device);
    let error = x.layer_norm(&[4], Some(&wrong), None, 1e-5).unwrap_err();
    assert!(
        matches!(
            error,
            Error::ShapeMismatch {
                op: "layer_norm",
                ..
            }
        ),
        "{error}"
    );
    let error = x.rms_norm(&[4], Some(&wrong), None).unwrap_err();
    assert!(
        matches!(error, Error::ShapeMismatch { op: "rms_norm", .. }),
        "{error}"
    );
    let error = x.rms_norm(&[2, 4], None, None).unwrap_err();
    assert!(
        matches!(error, Error::InvalidShape { op: "rms_norm", .. }),
        "{error}"
    );
    let scalar = Tensor::from_vec(vec![1.0f32], &[], device).unwrap();
    assert!(scalar.softmax(-1).is_err());
    assert!(scalar.log_softmax(-1).is_err());
}

/// Empty inputs give empty results (rows of length 0, or no rows), never a panic.
fn empty_rows(device: &Device) {
    let _serial = serial();
    let _off = no_grad();
    for shape in [[0usize, 5], [3, 0]] {
        let x = Tensor::zeros(&shape, DType::F32, device).unwrap();
        assert_eq!(x.softmax(-1).unwrap().shape(), shape);
        assert_eq!(x.log_softmax(-1).unwrap().shape(), shape);
        let normalized = x.layer_norm(&[shape[1]], None, None, 1e-5).unwrap();
        assert_eq!(normalized.shape(), shape);
        assert!(values(&normalized).is_empty());
        let normalized = x.rms_norm(&[shape[1]], None, None).unwrap();
        assert_eq!(normalized.shape(), shape);
    }
}

/// The rotary embedding by hand: for each row at position `p` of `[rows, head_dim]` values
/// (positions cycling), `x·cos + rotate_half(x)·sin` over the first `rotary_dim`.
fn rotary_by_hand(
    x: &[f32],
    head_dim: usize,
    positions: usize,
    cos: &[f32],
    sin: &[f32],
    rotary_dim: usize,
) -> Vec<f32> {
    let half = rotary_dim / 2;
    let mut out = x.to_vec();
    for (row, chunk) in x.chunks(head_dim).enumerate() {
        let p = row % positions;
        for i in 0..rotary_dim {
            let partner = if i < half {
                -chunk[i + half]
            } else {
                chunk[i - half]
            };
            out[row * head_dim + i] =
                chunk[i] * cos[p * rotary_dim + i] + partner * sin[p * rotary_dim + i];
        }
    }
    out
}

fn rotary_embedding_matches_composite(device: &Device) {
    let _serial = serial();
    // [batch, heads, positions, head_dim], rotary_dim: full, partial, one position.
    for (shape, rotary_dim) in [
        ([1usize, 3, 5, 8], 8usize),
        ([2, 2, 3, 10], 4),
        ([1, 9, 1, 64], 64),
        ([1, 2, 4, 6], 2),
    ] {
        let positions = shape[2];
        let head_dim = shape[3];
        for dtype in dtypes(device) {
            let x = random(&shape, 3, 1.0, device).to_dtype(dtype).unwrap();
            let cos = random(&[positions, rotary_dim], 4, 1.0, device)
                .to_dtype(dtype)
                .unwrap();
            let sin = random(&[positions, rotary_dim], 5, 1.0, device)
                .to_dtype(dtype)
                .unwrap();
            let expected = rotary_by_hand(
                &values(&x),
                head_dim,
                positions,
                &values(&cos),
                &values(&sin),
                rotary_dim,
            );
            let what = format!("{device} {dtype:?} {shape:?} rotary {rotary_dim}");
            let fused = {
                let _no_grad = no_grad();
                x.rotary_embedding(&cos, &sin).unwrap()
            };
            assert_eq!(fused.shape(), shape);
            assert_close(
                &values(&fused),
                &expected,
                tolerance(dtype),
                tolerance(dtype),
                &what,
            );
            // With a gradient recorded the composite runs: same values, and a gradient.
            if dtype == DType::F32 {
                let leaf = x.detach().requires_grad_(true);
                let composite = leaf.rotary_embedding(&cos, &sin).unwrap();
                assert!(composite.requires_grad(), "{what}: composite is recorded");
                assert_close(&values(&composite), &expected, 2e-5, 2e-5, &what);
                composite.sum_all().unwrap().backward().unwrap();
                // d/dx of sum(rotary(x)): the transpose of the rotation applied to ones.
                let ones = vec![1.0f32; x.numel()];
                let (c, s) = (values(&cos), values(&sin));
                let mut gradient = ones.clone();
                let half = rotary_dim / 2;
                for row in 0..x.numel() / head_dim {
                    let p = row % positions;
                    for i in 0..rotary_dim {
                        // x[i] feeds out[i] (cos) and out[i ± half] (∓sin there).
                        let other = if i < half { i + half } else { i - half };
                        let sign = if i < half { 1.0 } else { -1.0 };
                        gradient[row * head_dim + i] =
                            c[p * rotary_dim + i] + sign * s[p * rotary_dim + other];
                    }
                }
                assert_close(
                    &values(&leaf.grad().unwrap()),
                    &gradient,
                    2e-5,
                    2e-5,
                    &format!("{what} gradient"),
                );
            }
        }
    }
    // A strided input (heads split from a projection): the same values as its dense copy.
    let _no_grad = no_grad();
    let projection = random(&[1, 4, 3 * 8], 6, 1.0, device);
    let heads = projection
        .reshape([1, 4, 3, 8])
        .unwrap()
        .transpose(1, 2)
        .unwrap();
    let cos = random(&[4, 8], 7, 1.0, device);
    let sin = random(&[4, 8], 8, 1.0, device);
    let strided = heads.rotary_embedding(&cos, &sin).unwrap();
    let dense = heads
        .contiguous()
        .unwrap()
        .rotary_embedding(&cos, &sin)
        .unwrap();
    assert_close(
        &values(&strided),
        &values(&dense),
        0.0,
        0.0,
        "strided input",
    );
}

fn rotary_embedding_bad_tables_are_errors(device: &Device) {
    let x = random(&[1, 2, 3, 8], 1, 1.0, device);
    for (cos_shape, sin_shape) in [
        ([3usize, 7usize], [3usize, 7usize]),
        ([3, 10], [3, 10]),
        ([2, 8], [2, 8]),
        ([3, 8], [3, 4]),
        ([3, 0], [3, 0]),
    ] {
        let cos = Tensor::zeros(&cos_shape, DType::F32, device).unwrap();
        let sin = Tensor::zeros(&sin_shape, DType::F32, device).unwrap();
        let error = x.rotary_embedding(&cos, &sin).unwrap_err();
        assert!(
            error.to_string().contains("rotary_embedding"),
            "{cos_shape:?} {sin_shape:?}: {error}"
        );
    }
    let row = random(&[8], 1, 1.0, device);
    let tables = Tensor::zeros(&[1, 8], DType::F32, device).unwrap();
    assert!(row.rotary_embedding(&tables, &tables).is_err(), "rank 1");
}

anygrad_testing::device_tests!(
    rotary_embedding_matches_composite,
    rotary_embedding_bad_tables_are_errors,
    empty_rows,
    row_primitives_match_composites,
    rms_norm_known_values,
    gradients_match,
    masked_attention_rows_are_zero,
    log_softmax_infinities,
    bad_shapes_are_errors,
);
