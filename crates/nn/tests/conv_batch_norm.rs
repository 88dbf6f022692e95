//! `conv_batch_norm` against the modules' own forward passes on every device: in eval mode
//! (one fused convolution; trained running statistics, a convolution bias, a residual, ReLU
//! or none) and in training mode (the modules themselves, batch statistics and running
//! updates alike), a batch norm of the wrong width refused, and the eval-mode fold kept
//! between calls until its statistics change.

use anygrad_core::profiler::profile;
use anygrad_core::{no_grad, Device, EpilogueActivation, Error, Tensor};
use anygrad_nn::*;
use anygrad_testing::{assert_close, random_tensor, values};

/// The profiler is process-wide: the tests here run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn random(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    random_tensor(shape, seed, device)
}

/// The modules' forward passes written out: `activation(bn(conv(x)) + residual)`.
fn modules(
    x: &Tensor,
    conv: &Conv2d,
    bn: &BatchNorm2d,
    residual: Option<&Tensor>,
    activation: EpilogueActivation,
) -> Tensor {
    let mut out = bn.forward(&conv.forward(x).unwrap()).unwrap();
    if let Some(residual) = residual {
        out = out.add(residual).unwrap();
    }
    match activation {
        EpilogueActivation::Identity => out,
        EpilogueActivation::Relu => out.relu().unwrap(),
    }
}

fn eval_mode_is_one_fused_convolution(device: &Device) {
    let _serial = serial();
    for bias in [false, true] {
        let options = Conv2dOptions::default().stride(2).padding(1).bias(bias);
        let conv = Conv2d::square(6, 8, 3, options, device).unwrap();
        let bn = BatchNorm2d::new_2d(8, device).unwrap();
        // Statistics and affine parameters away from their initial values.
        bn.running_mean.set(random(&[8], 1, device));
        let var = random(&[8], 2, device)
            .abs()
            .unwrap()
            .add_scalar(0.5)
            .unwrap();
        bn.running_var.set(var);
        if let (Some(weight), Some(b)) = (&bn.weight, &bn.bias) {
            weight.set(random(&[8], 3, device));
            b.set(random(&[8], 4, device));
        }
        bn.eval();
        let x = random(&[2, 6, 9, 10], 5, device);
        let residual = random(&[2, 8, 5, 5], 6, device);
        let _off = no_grad();
        for activation in [EpilogueActivation::Identity, EpilogueActivation::Relu] {
            for residual in [None, Some(&residual)] {
                let what = format!("bias {bias} {activation:?} residual {}", residual.is_some());
                let (fused, recorded) =
                    profile(|| conv_batch_norm(&x, &conv, &bn, residual, activation)).unwrap();
                let names: Vec<&str> = recorded.events.iter().map(|e| e.name.as_str()).collect();
                assert!(names.contains(&"conv2d_epilogue"), "{what}: {names:?}");
                assert!(!names.contains(&"conv2d"), "{what}: {names:?}");
                let expected = modules(&x, &conv, &bn, residual, activation);
                assert_close(&values(&fused), &values(&expected), 1e-4, 1e-4, &what);
            }
        }
    }
}

fn training_mode_is_the_modules(device: &Device) {
    let _serial = serial();
    let options = Conv2dOptions::default().padding(1).bias(false);
    let conv = Conv2d::square(4, 5, 3, options, device).unwrap();
    let (bn, reference_bn) = (
        BatchNorm2d::new_2d(5, device).unwrap(),
        BatchNorm2d::new_2d(5, device).unwrap(),
    );
    let x = random(&[3, 4, 6, 6], 7, device);
    let residual = random(&[3, 5, 6, 6], 8, device);
    let out = conv_batch_norm(&x, &conv, &bn, Some(&residual), EpilogueActivation::Relu).unwrap();
    let expected = modules(
        &x,
        &conv,
        &reference_bn,
        Some(&residual),
        EpilogueActivation::Relu,
    );
    assert_close(
        &values(&out),
        &values(&expected),
        1e-5,
        1e-5,
        "training output",
    );
    assert_close(
        &values(&bn.running_mean.tensor()),
        &values(&reference_bn.running_mean.tensor()),
        1e-6,
        1e-6,
        "running mean updated",
    );
    assert!(out.requires_grad(), "training records for backward");
    out.sum_all().unwrap().backward().unwrap();
    assert!(conv.weight.tensor().grad().is_some());
}

fn mismatched_batch_norm_is_an_error(device: &Device) {
    let _serial = serial();
    let conv = Conv2d::square(3, 4, 3, Conv2dOptions::default(), device).unwrap();
    let bn = BatchNorm2d::new_2d(5, device).unwrap();
    bn.eval();
    let x = random(&[1, 3, 5, 5], 9, device);
    let error = conv_batch_norm(&x, &conv, &bn, None, EpilogueActivation::Relu).unwrap_err();
    assert!(
        matches!(
            error,
            Error::ShapeMismatch {
                op: "conv_batch_norm",
                ..
            }
        ),
        "{error}"
    );
}

/// Under `no_grad` the folded scale and shift are computed once and kept (no kernels on the
/// second call); an in-place write to the running variance, a replaced mean and a new `eps`
/// each make the next call fold again, with the new values.
fn eval_fold_is_kept_until_its_sources_change(device: &Device) {
    let _serial = serial();
    let mut bn = BatchNorm2d::new_2d(6, device).unwrap();
    bn.running_var.set(
        random(&[6], 10, device)
            .abs()
            .unwrap()
            .add_scalar(0.5)
            .unwrap(),
    );
    bn.eval();
    let _off = no_grad();
    let expected = |bn: &BatchNorm2d| {
        let var = bn.running_var.tensor().add_scalar(bn.eps).unwrap();
        let scale = bn
            .weight
            .as_ref()
            .unwrap()
            .tensor()
            .div(&var.sqrt().unwrap())
            .unwrap();
        let shift = bn
            .bias
            .as_ref()
            .unwrap()
            .tensor()
            .sub(&bn.running_mean.tensor().mul(&scale).unwrap())
            .unwrap();
        (values(&scale), values(&shift))
    };
    let check = |bn: &BatchNorm2d, what: &str| {
        let (scale, shift) = bn.eval_scale_shift().unwrap();
        let (want_scale, want_shift) = expected(bn);
        assert_close(&values(&scale), &want_scale, 1e-6, 1e-6, what);
        assert_close(&values(&shift), &want_shift, 1e-6, 1e-6, what);
    };
    check(&bn, "first fold");
    let (_, recorded) = profile(|| bn.eval_scale_shift()).unwrap();
    assert!(recorded.events.is_empty(), "kept: {:?}", recorded.events);
    bn.running_var
        .assign(
            &random(&[6], 11, device)
                .abs()
                .unwrap()
                .add_scalar(2.0)
                .unwrap(),
        )
        .unwrap();
    check(&bn, "after an in-place write");
    bn.running_mean.set(random(&[6], 12, device));
    check(&bn, "after a new mean");
    bn.eps = 0.25;
    check(&bn, "after a new eps");
}

anygrad_testing::device_tests!(
    eval_fold_is_kept_until_its_sources_change,
    eval_mode_is_one_fused_convolution,
    training_mode_is_the_modules,
    mismatched_batch_norm_is_an_error,
);
