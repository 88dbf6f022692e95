//! Batch norm's one-pass reductions on every device against composites of public ops:
//! `batch_norm_stats` (per-channel mean and biased variance) and `batch_norm_backward_sums`
//! (`Σ g`, `Σ g (x - mean)`), for `[n, c]`, `[n, c, l]` and `[n, c, h, w]` (rows shorter and
//! longer than a workgroup's 256 invocations, channels split over several workgroups), a
//! strided input, values far from zero (the
//! variance must not cancel), F32 and F16; bad operands are errors.

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
    match device {
        Device::Gpu(gpu) if !gpu.supports_f16() => vec![DType::F32],
        _ => vec![DType::F32, DType::F16],
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
}

anygrad_testing::device_tests!(stats_match_composites, bad_operands_are_errors);
