//! `Tensor::class_pick`, the fused core of cross-entropy and NLL, on every device: each row's
//! weighted class score and weight against a host loop (with and without class weights, with
//! an ignored class, on a view at an offset), the gradient (`w[t] · g` at the picked class,
//! zero elsewhere and on ignored rows), and targets out of range as errors naming the op.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{assert_close, values};

/// The expected `[2, n]` pick of row-major `scores` (`classes` wide).
fn expected(
    scores: &[f32],
    classes: usize,
    targets: &[i32],
    weight: Option<&[f32]>,
    ignore: i32,
) -> Vec<f32> {
    let rows = targets.len();
    let mut out = vec![0.0; 2 * rows];
    for (i, &t) in targets.iter().enumerate() {
        if t == ignore {
            continue;
        }
        let w = weight.map_or(1.0, |w| w[t as usize]);
        out[i] = w * scores[i * classes + t as usize];
        out[rows + i] = w;
    }
    out
}

/// Picks with and without weights and an ignored class, on a narrowed view of the scores.
fn picks_match_a_host_loop(device: &Device) {
    let (rows, classes) = (6, 5);
    let all = Tensor::randn(&[rows + 2, classes], DType::F32, device).unwrap();
    let scores = all.narrow(0, 1, rows).unwrap();
    let host = values(&scores);
    let targets = vec![4i32, -100, 0, 2, -100, 3];
    let target = Tensor::from_vec(targets.clone(), &[rows], device).unwrap();
    let weight_values = vec![0.5f32, 2.0, 1.0, 0.25, 3.0];
    let weight = Tensor::from_vec(weight_values.clone(), &[classes], device).unwrap();
    let unweighted = scores.class_pick(&target, None, Some(-100)).unwrap();
    assert_eq!(unweighted.shape(), &[2, rows]);
    assert_close(
        &values(&unweighted),
        &expected(&host, classes, &targets, None, -100),
        1e-6,
        1e-6,
        "unweighted",
    );
    let weighted = scores
        .class_pick(&target, Some(&weight), Some(-100))
        .unwrap();
    assert_close(
        &values(&weighted),
        &expected(&host, classes, &targets, Some(&weight_values), -100),
        1e-6,
        1e-6,
        "weighted",
    );
    // Nothing ignored: every row picks (a class index may equal any ignore value not given).
    let plain_targets = vec![4i32, 1, 0, 2, 2, 3];
    let plain = Tensor::from_vec(plain_targets.clone(), &[rows], device).unwrap();
    assert_close(
        &values(&scores.class_pick(&plain, None, None).unwrap()),
        &expected(&host, classes, &plain_targets, None, i32::MIN),
        1e-6,
        1e-6,
        "nothing ignored",
    );
    if device.is_gpu() && !anygrad_testing::f16_or_skip(device, "class_pick (f16)") {
        return;
    }
    let half = scores.to_dtype(DType::F16).unwrap();
    let picked = half.class_pick(&target, None, Some(-100)).unwrap();
    assert_eq!(picked.dtype(), DType::F16);
    assert_close(
        &values(&picked),
        &expected(&values(&half), classes, &targets, None, -100),
        1e-3,
        1e-3,
        "f16",
    );
}

/// The gradient of `Σ upstream · row 0` is `w[t_i] · upstream_i` at `(i, t_i)`.
fn gradient_lands_at_the_picked_classes(device: &Device) {
    let (rows, classes) = (4, 3);
    let scores = Tensor::randn(&[rows, classes], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let target = Tensor::from_vec(vec![2i32, -1, 0, 2], &[rows], device).unwrap();
    let weight = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[classes], device).unwrap();
    let upstream = Tensor::from_vec(vec![1.0f32, 10.0, 100.0, 1000.0], &[rows], device).unwrap();
    let picked = scores.class_pick(&target, Some(&weight), Some(-1)).unwrap();
    picked
        .narrow(0, 0, 1)
        .unwrap()
        .reshape([rows])
        .unwrap()
        .mul(&upstream)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let grad = values(&scores.grad().unwrap());
    let expected = vec![
        0.0, 0.0, 3.0, //
        0.0, 0.0, 0.0, // ignored
        100.0, 0.0, 0.0, //
        0.0, 0.0, 3000.0,
    ];
    assert_close(&grad, &expected, 1e-6, 1e-6, "gradient");
}

/// A target past the classes (or negative and not ignored) is an error naming the op, on a
/// GPU at the readback; the device works afterwards.
fn targets_out_of_range_are_errors(device: &Device) {
    let scores = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    for bad in [3i32, -2] {
        let target = Tensor::from_vec(vec![0i32, bad], &[2], device).unwrap();
        let error = scores
            .class_pick(&target, None, Some(-100))
            .and_then(|picked| picked.to_vec_f64())
            .expect_err("a target out of range");
        let text = error.to_string();
        assert!(
            text.contains("class_pick") || text.contains("index"),
            "{text}"
        );
    }
    let fine = Tensor::from_vec(vec![1i32, 2], &[2], device).unwrap();
    assert_eq!(
        values(&scores.class_pick(&fine, None, None).unwrap()),
        vec![0.0, 0.0, 1.0, 1.0]
    );
    let wrong_shape = Tensor::from_vec(vec![1i32], &[1], device).unwrap();
    let error = scores.class_pick(&wrong_shape, None, None).unwrap_err();
    assert!(error.to_string().contains("class_pick"), "{error}");
}

anygrad_testing::device_tests!(
    picks_match_a_host_loop,
    gradient_lands_at_the_picked_classes,
    targets_out_of_range_are_errors,
);
