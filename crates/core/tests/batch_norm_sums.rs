//! Batch norm's one-pass reductions on every device against composites of public ops:
//! `batch_norm_stats` (per-channel mean and biased variance) and `batch_norm_backward_sums`
//! (`Σ g`, `Σ g (x - mean)`), for `[n, c]`, `[n, c, l]` and `[n, c, h, w]` (rows shorter and
//! longer than a workgroup's 256 invocations, channels split over several workgroups), a
//! strided input, values far from zero (the
//! variance must not cancel), F32 and F16; `batch_norm_backward_input` (the input gradient in
//! one pass) against the same formula written with public ops; bad operands are errors.

use anygrad_core::{DType, Device, Error, Tensor};
use anygrad_testing::{assert_close, random_tensor, values};

/// The last two give each channel several GPU workgroups (splits of 4,096 elements or more).
const SHAPES: [&[usize]; 6] = [
    &[37, 5],
    &[3, 4, 100],
    &[2, 3, 17, 19],
    &[5, 2, 300],
    &[8, 2, 2000],
    &[3, 3, 50, 61],
];

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

fn stats_match_composites(device: &Device) {
    for dtype in dtypes(device) {
        for (seed, shape) in SHAPES.iter().enumerate() {
            let dims: Vec<isize> = (0..shape.len() as isize).filter(|&d| d != 1).collect();
            // Values around 50: a one-pass variance that cancels would show it.
            let x = random_tensor(shape, seed as u64, device)
                .add_scalar(50.0)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let g = random_tensor(shape, seed as u64 + 9, device)
                .to_dtype(dtype)
                .unwrap();
            let wide = x.to_dtype(DType::F32).unwrap();
            let mean = wide.mean(&dims, false).unwrap();
            let keep = wide.mean(&dims, true).unwrap();
            let var = wide
                .sub(&keep)
                .unwrap()
                .square()
                .unwrap()
                .mean(&dims, false)
                .unwrap();
            let (m, v) = x.batch_norm_stats().unwrap();
            assert_eq!((m.dtype(), v.dtype()), (DType::F32, DType::F32));
            let what = format!("{shape:?} {dtype:?} on {device}");
            assert_close(
                &values(&m),
                &values(&mean),
                1e-4,
                1e-5,
                &format!("mean {what}"),
            );
            assert_close(
                &values(&v),
                &values(&var),
                1e-4,
                1e-3,
                &format!("variance {what}"),
            );
            let g32 = g.to_dtype(DType::F32).unwrap();
            let sum = g32.sum(&dims, false).unwrap();
            let centered = g32
                .mul(&wide.sub(&keep).unwrap())
                .unwrap()
                .sum(&dims, false)
                .unwrap();
            let (s, c) = g.batch_norm_backward_sums(&x, &mean).unwrap();
            assert_close(
                &values(&s),
                &values(&sum),
                1e-3,
                1e-4,
                &format!("Σg {what}"),
            );
            assert_close(
                &values(&c),
                &values(&centered),
                1e-3,
                1e-4,
                &format!("Σg(x-μ) {what}"),
            );
        }
        // A strided input: the transpose of [c, n, l].
        let strided = random_tensor(&[4, 6, 10], 20, device)
            .to_dtype(dtype)
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        let (m, _) = strided.batch_norm_stats().unwrap();
        let expected = strided.contiguous().unwrap().batch_norm_stats().unwrap().0;
        assert_close(&values(&m), &values(&expected), 1e-5, 1e-5, "strided");
    }
}

/// `k·(g − ḡ − (x − μ)·s)` per channel from an F32 `[4, c]` of coefficients, for rows whose
/// length is a multiple of 4 (vec4 kernel) or not, a transposed gradient, values far from
/// zero, F32 and F16 (computed in f32, rounded once).
fn input_gradient_matches_composite(device: &Device) {
    for dtype in dtypes(device) {
        for (seed, shape) in SHAPES.iter().enumerate() {
            let c = shape[1];
            let seed = seed as u64;
            let x = random_tensor(shape, seed, device)
                .add_scalar(20.0)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let g = random_tensor(shape, seed + 3, device)
                .to_dtype(dtype)
                .unwrap();
            let coefficients = random_tensor(&[4, c], seed + 5, device)
                .add_scalar(20.0)
                .unwrap();
            let row = |r: usize| {
                let mut per_channel = vec![1usize; shape.len()];
                per_channel[1] = c;
                coefficients
                    .narrow(0, r, 1)
                    .unwrap()
                    .reshape(per_channel)
                    .unwrap()
            };
            let wide = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let expected = wide(&g)
                .sub(&row(2))
                .unwrap()
                .sub(&wide(&x).sub(&row(0)).unwrap().mul(&row(3)).unwrap())
                .unwrap()
                .mul(&row(1))
                .unwrap();
            let actual = g.batch_norm_backward_input(&x, &coefficients).unwrap();
            assert_eq!(actual.dtype(), dtype);
            let what = format!("input gradient {shape:?} {dtype:?} on {device}");
            // The terms reach ~1,000 and cancel: the f32 composite itself is off by ~1e-4
            // there; f16 rounds the result (5e-4 relative).
            let rtol = if dtype == DType::F16 { 1e-3 } else { 1e-5 };
            assert_close(
                &values(&wide(&actual)),
                &values(&expected),
                2e-3,
                rtol,
                &what,
            );
        }
    }
    // A strided (transposed) gradient of a square [n, c] pair.
    let x = random_tensor(&[6, 6], 1, device);
    let g = random_tensor(&[6, 6], 2, device).t().unwrap();
    let coefficients = random_tensor(&[4, 6], 3, device);
    let dense = g.copy().unwrap();
    assert_close(
        &values(&g.batch_norm_backward_input(&x, &coefficients).unwrap()),
        &values(&dense.batch_norm_backward_input(&x, &coefficients).unwrap()),
        1e-6,
        1e-6,
        "transposed gradient",
    );
}

fn bad_operands_are_errors(device: &Device) {
    let x = random_tensor(&[4, 3, 5], 1, device);
    assert!(random_tensor(&[7], 2, device).batch_norm_stats().is_err());
    let ints = Tensor::from_vec(vec![1i32; 6], &[2, 3], device).unwrap();
    assert!(ints.batch_norm_stats().is_err());
    let mean = random_tensor(&[3], 3, device);
    let wrong_shape = random_tensor(&[4, 3, 6], 4, device);
    let error = wrong_shape.batch_norm_backward_sums(&x, &mean).unwrap_err();
    assert!(matches!(error, Error::ShapeMismatch { .. }), "{error}");
    let wrong_mean = random_tensor(&[4], 5, device);
    let error = x.batch_norm_backward_sums(&x, &wrong_mean).unwrap_err();
    assert!(error.to_string().contains("mean"), "{error}");
    let coefficients = random_tensor(&[4, 3], 6, device);
    let error = wrong_shape
        .batch_norm_backward_input(&x, &coefficients)
        .unwrap_err();
    assert!(matches!(error, Error::ShapeMismatch { .. }), "{error}");
    let error = x
        .batch_norm_backward_input(&x, &random_tensor(&[3, 3], 7, device))
        .unwrap_err();
    assert!(error.to_string().contains("coefficients"), "{error}");
    if dtypes(device).contains(&DType::F16) {
        let half = x.to_dtype(DType::F16).unwrap();
        let error = half
            .batch_norm_backward_input(&x, &coefficients)
            .unwrap_err();
        assert!(matches!(error, Error::DTypeMismatch { .. }), "{error}");
    }
}

anygrad_testing::device_tests!(
    stats_match_composites,
    input_gradient_matches_composite,
    bad_operands_are_errors
);
