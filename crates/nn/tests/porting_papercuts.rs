//! PyTorch idioms of a ported classifier script, on every device: `F.nll_loss` with a
//! `reduction`, and pooling whose stride defaults to the kernel size (`MaxPool2d(2)`,
//! `F.max_pool2d(x, 2)`), with a stride of 0 refused by an error naming the op and `stride`.

use anygrad_core::{Device, Error, Tensor};
use anygrad_nn::*;
use anygrad_testing::{assert_close, values};

fn nll_loss_takes_a_reduction(device: &Device) {
    // Log-probabilities of three samples over three classes.
    let rows = [[0.2f32, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]];
    let log_probs: Vec<f32> = rows.iter().flatten().map(|p| p.ln()).collect();
    let log_probs = Tensor::from_vec(log_probs, &[3, 3], device)
        .unwrap()
        .requires_grad_(true);
    let target = Tensor::from_slice(&[1i32, 2, 1], &[3], device).unwrap();
    let per_sample: Vec<f32> = [0.5f32, 0.8, 0.3].iter().map(|p| -p.ln()).collect();
    let total: f32 = per_sample.iter().sum();

    let none = nll_loss(&log_probs, &target, Reduction::None).unwrap();
    assert_eq!(none.shape(), &[3]);
    assert_close(&values(&none), &per_sample, 1e-6, 1e-5, "reduction none");
    let sum = nll_loss(&log_probs, &target, Reduction::Sum).unwrap();
    assert_eq!(sum.shape(), &[] as &[usize]);
    assert_close(&values(&sum), &[total], 1e-6, 1e-5, "reduction sum");
    let mean = nll_loss(&log_probs, &target, Reduction::Mean).unwrap();
    assert_close(&values(&mean), &[total / 3.0], 1e-6, 1e-5, "reduction mean");

    // The summed loss's gradient is -1 at each target, 0 elsewhere.
    sum.backward().unwrap();
    assert_eq!(
        values(&log_probs.grad().unwrap()),
        vec![0.0, -1.0, 0.0, 0.0, 0.0, -1.0, 0.0, -1.0, 0.0]
    );
}

fn pooling_stride_defaults_to_the_kernel(device: &Device) {
    let x = Tensor::from_vec((0..36).map(|v| v as f32).collect(), &[1, 1, 6, 6], device).unwrap();
    let explicit = x.max_pool2d((2, 2), (2, 2), (0, 0)).unwrap();
    assert_eq!(explicit.shape(), &[1, 1, 3, 3]);
    let defaulted = x.max_pool2d((2, 2), None, (0, 0)).unwrap();
    assert_eq!(defaulted.shape(), &[1, 1, 3, 3]);
    assert_eq!(values(&defaulted), values(&explicit));
    assert_eq!(
        values(&defaulted),
        vec![7.0, 9.0, 11.0, 19.0, 21.0, 23.0, 31.0, 33.0, 35.0]
    );
    // A 3x3 window, default stride 3.
    let average = x.avg_pool2d((3, 3), None, (0, 0)).unwrap();
    assert_eq!(values(&average), vec![7.0, 10.0, 25.0, 28.0]);

    assert_eq!(
        values(&MaxPool2d::with(2, None, 0).forward(&x).unwrap()),
        values(&explicit)
    );
    assert_eq!(
        values(&MaxPool2d::new(2).forward(&x).unwrap()),
        values(&explicit)
    );
    // An explicit stride still wins over the default.
    let overlapping = MaxPool2d::with(3, 1, 0).forward(&x).unwrap();
    assert_eq!(overlapping.shape(), &[1, 1, 4, 4]);
    let built = MaxPool2d::new(3).stride(1).forward(&x).unwrap();
    assert_eq!(values(&built), values(&overlapping));
    let padded = AvgPool2d::new(2).padding(1).forward(&x).unwrap();
    assert_eq!(padded.shape(), &[1, 1, 4, 4]);
    assert_eq!(
        values(&AvgPool2d::with(3, None, 0).forward(&x).unwrap()),
        values(&average)
    );
}

fn a_stride_of_zero_names_the_op_and_stride(device: &Device) {
    let x = Tensor::zeros(&[1, 1, 4, 4], anygrad_core::DType::F32, device).unwrap();
    for (error, op) in [
        (
            x.max_pool2d((2, 2), (0, 2), (0, 0)).unwrap_err(),
            "max_pool2d",
        ),
        (
            x.avg_pool2d((2, 2), (2, 0), (0, 0)).unwrap_err(),
            "avg_pool2d",
        ),
        (
            MaxPool2d::with(2, 0, 0).forward(&x).unwrap_err(),
            "max_pool2d",
        ),
        (
            AvgPool2d::new(2).stride(0).forward(&x).unwrap_err(),
            "avg_pool2d",
        ),
    ] {
        assert!(
            matches!(error, Error::InvalidArgument { op: name, .. } if name == op),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{op}: stride")),
            "{op}: {message}"
        );
    }
}

anygrad_testing::device_tests!(
    nll_loss_takes_a_reduction,
    pooling_stride_defaults_to_the_kernel,
    a_stride_of_zero_names_the_op_and_stride,
);
