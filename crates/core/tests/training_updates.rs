//! The optimizers' in-place updates and mixed precision's unscaling below the optimizers, on
//! every device: `Tensor::sgd_step_` and `Tensor::adam_step_` against their composite ops,
//! `sgd_step_unless_` skipping on a set flag, `unscale_` and its inf/NaN flag, and `read_later`, the readback the gradient
//! scaler takes its flag through.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{assert_close, tensor, values};

/// `sgd_step_` (the fused update on dense operands) equals its composite ops over three
/// steps, for momentum with and without dampening and Nesterov, weight decay, no momentum,
/// f32 and f16, views at an offset, and a strided parameter (which takes the composite); bad operands are errors
/// naming the op.
fn sgd_steps(device: &Device) {
    use anygrad_core::SgdStep;
    let configs = [
        (0.1, 0.9, 0.0, 0.0, false),
        (0.05, 0.9, 0.3, 0.01, false),
        (0.05, 0.8, 0.0, 0.02, true),
        (0.2, 0.0, 0.0, 0.1, false),
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16 && !anygrad_testing::f16_or_skip(device, "sgd_steps (f16)") {
            continue;
        }
        for (n, &(lr, momentum, dampening, weight_decay, nesterov)) in configs.iter().enumerate() {
            let start = Tensor::randn(&[5, 7], DType::F32, device).unwrap();
            // A contiguous view at an offset (a row narrowed off a larger tensor).
            let holder = Tensor::zeros(&[6, 7], dtype, device).unwrap();
            let fused = holder.narrow(0, 1, 5).unwrap();
            fused.assign(&start.to_dtype(dtype).unwrap()).unwrap();
            let original = values(&fused);
            let reference = fused.copy().unwrap();
            let (fused_buffer, reference_buffer) =
                (fused.zeros_like().unwrap(), reference.zeros_like().unwrap());
            for round in 0..3 {
                let grad = Tensor::randn(&[7, 7], DType::F32, device)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
                    .narrow(0, 2, 5)
                    .unwrap();
                let step = SgdStep {
                    lr,
                    momentum,
                    dampening,
                    weight_decay,
                    nesterov,
                    first: round == 0,
                };
                fused.sgd_step_(&grad, Some(&fused_buffer), &step).unwrap();
                // A transposed view of a transposed copy: the same values, not dense.
                let strided = reference.t().unwrap().copy().unwrap().t().unwrap();
                let strided_buffer = reference_buffer.t().unwrap().copy().unwrap().t().unwrap();
                strided
                    .sgd_step_(&grad, Some(&strided_buffer), &step)
                    .unwrap();
                reference.assign(&strided).unwrap();
                reference_buffer.assign(&strided_buffer).unwrap();
                let tolerance = if dtype == DType::F16 { 4e-3 } else { 1e-6 };
                let what = format!("{dtype:?} config {n} round {round}");
                assert_close(
                    &values(&fused),
                    &values(&reference),
                    tolerance,
                    tolerance,
                    &what,
                );
                if momentum != 0.0 {
                    assert_close(
                        &values(&fused_buffer),
                        &values(&reference_buffer),
                        tolerance,
                        tolerance,
                        &what,
                    );
                }
            }
            assert!(
                values(&fused) != original,
                "{dtype:?} config {n}: no update"
            );
        }
    }
    // Plain SGD by hand: p - lr * (g + wd * p) with momentum off.
    let p = tensor(&[1.0, -2.0], &[2], device);
    let g = tensor(&[0.5, 1.0], &[2], device);
    let plain = SgdStep {
        lr: 0.1,
        momentum: 0.0,
        dampening: 0.0,
        weight_decay: 0.5,
        nesterov: false,
        first: false,
    };
    p.sgd_step_(&g, None, &plain).unwrap();
    assert_close(
        &values(&p),
        &[1.0 - 0.1 * 1.0, -2.0 - 0.1 * 0.0],
        1e-6,
        1e-6,
        "plain",
    );
    let with_momentum = SgdStep {
        momentum: 0.9,
        ..plain
    };
    let error = p.sgd_step_(&g, None, &with_momentum).unwrap_err();
    assert!(error.to_string().contains("sgd_step"), "{error}");
    let wrong = tensor(&[1.0, 2.0, 3.0], &[3], device);
    let error = p.sgd_step_(&wrong, None, &plain).unwrap_err();
    assert!(error.to_string().contains("sgd_step"), "{error}");
    // `sgd_step_unless_`: nothing changes where the flag is set (the fused kernel reads it on
    // the device; a strided parameter takes the composite, which reads it back); a clear
    // flag steps exactly like `sgd_step_`.
    let set = Tensor::full(&[1], 1.0, DType::U32, device).unwrap();
    let clear = Tensor::zeros(&[1], DType::U32, device).unwrap();
    let before = values(&p);
    p.sgd_step_unless_(&g, None, &plain, &set).unwrap();
    assert_eq!(values(&p), before, "skipped by the fused step");
    let strided = tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device).t().unwrap();
    let strided_grad = tensor(&[1.0, 1.0, 1.0, 1.0], &[2, 2], device);
    strided
        .sgd_step_unless_(&strided_grad, None, &plain, &set)
        .unwrap();
    assert_eq!(
        values(&strided),
        vec![1.0, 3.0, 2.0, 4.0],
        "skipped by the composite"
    );
    let reference = p.copy().unwrap();
    reference.sgd_step_(&g, None, &plain).unwrap();
    p.sgd_step_unless_(&g, None, &plain, &clear).unwrap();
    assert_eq!(values(&p), values(&reference), "a clear flag steps");
    let error = p
        .sgd_step_unless_(
            &g,
            None,
            &plain,
            &Tensor::zeros(&[1], DType::F32, device).unwrap(),
        )
        .unwrap_err();
    assert!(error.to_string().contains("sgd_step"), "{error}");
}

/// `unscale_` divides in place (a view at an offset, a strided view, f16) and sets the flag
/// only for inf or NaN, keeping it set across later calls; bad flags are errors.
fn unscaling(device: &Device) {
    let flag = Tensor::zeros(&[1], DType::U32, device).unwrap();
    let holder = tensor(&[9.0, 8.0, 4.0, -6.0, 3.4e38, 1.0], &[6], device);
    let view = holder.narrow(0, 1, 4).unwrap();
    view.unscale_(2.0, &flag).unwrap();
    assert_eq!(values(&holder), vec![9.0, 4.0, 2.0, -3.0, 1.7e38, 1.0]);
    assert_eq!(
        flag.item_f64().unwrap(),
        0.0,
        "large finite values are not overflow"
    );
    let strided = tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device).t().unwrap();
    strided.unscale_(4.0, &flag).unwrap();
    assert_eq!(values(&strided), vec![0.25, 0.75, 0.5, 1.0]);
    assert_eq!(flag.item_f64().unwrap(), 0.0);
    for bad in [f32::INFINITY, f32::NAN] {
        let flag = Tensor::zeros(&[1], DType::U32, device).unwrap();
        tensor(&[1.0, bad, 2.0], &[3], device)
            .unscale_(2.0, &flag)
            .unwrap();
        assert_ne!(flag.item_f64().unwrap(), 0.0, "{bad} sets the flag");
        // Later finite gradients leave it set.
        tensor(&[1.0], &[1], device).unscale_(2.0, &flag).unwrap();
        assert_ne!(flag.item_f64().unwrap(), 0.0);
    }
    if anygrad_testing::f16_or_skip(device, "unscaling (f16)") {
        let half = tensor(&[6.0, -2.0], &[2], device)
            .to_dtype(DType::F16)
            .unwrap();
        half.unscale_(2.0, &flag).unwrap();
        assert_eq!(values(&half), vec![3.0, -1.0]);
    }
    let wrong = Tensor::zeros(&[1], DType::F32, device).unwrap();
    let error = holder.unscale_(2.0, &wrong).unwrap_err();
    assert!(error.to_string().contains("unscale"), "{error}");
    // `read_later` (how the gradient scaler reads its flag): the values the tensor holds when
    // the read is started, whatever is written after; a strided view reads in its order.
    let pending_flag = flag.read_later().unwrap();
    let matrix = tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device);
    let pending = matrix.t().unwrap().read_later().unwrap();
    assert_eq!(pending.shape(), &[2, 2]);
    matrix.assign(&matrix.mul_scalar(10.0).unwrap()).unwrap();
    assert_eq!(pending.wait().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
    assert_eq!(pending_flag.wait().unwrap(), vec![flag.item_f64().unwrap()]);
    assert_eq!(values(&matrix), vec![10.0, 20.0, 30.0, 40.0]);
}

/// `adam_step_` (the fused update on dense operands) equals its composite ops (taken by a
/// strided parameter) over three steps, for Adam, Adam with L2 decay, AdamW and AMSGrad, in
/// f32 and f16, on views at an offset; a first step by hand matches PyTorch's rule; bad
/// operands are errors naming the op.
fn adam_steps(device: &Device) {
    use anygrad_core::AdamStep;
    let base = AdamStep {
        lr: 0.01,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.0,
        decoupled: false,
        amsgrad: false,
        step: 1,
    };
    let configs = [
        base,
        AdamStep {
            weight_decay: 0.1,
            ..base
        },
        AdamStep {
            weight_decay: 0.05,
            decoupled: true,
            lr: 0.05,
            ..base
        },
        AdamStep {
            amsgrad: true,
            beta1: 0.8,
            beta2: 0.9,
            ..base
        },
    ];
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16 && !anygrad_testing::f16_or_skip(device, "adam_steps (f16)") {
            continue;
        }
        for (n, config) in configs.iter().enumerate() {
            let start = Tensor::randn(&[5, 7], DType::F32, device).unwrap();
            let holder = Tensor::zeros(&[6, 7], dtype, device).unwrap();
            let fused = holder.narrow(0, 1, 5).unwrap();
            fused.assign(&start.to_dtype(dtype).unwrap()).unwrap();
            let original = values(&fused);
            let reference = fused.copy().unwrap();
            let state = |t: &Tensor| {
                [
                    t.zeros_like().unwrap(),
                    t.zeros_like().unwrap(),
                    t.zeros_like().unwrap(),
                ]
            };
            let (fused_state, reference_state) = (state(&fused), state(&reference));
            for round in 1..=3u64 {
                let grad = Tensor::randn(&[7, 7], DType::F32, device)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
                    .narrow(0, 2, 5)
                    .unwrap();
                let step = AdamStep {
                    step: round,
                    ..*config
                };
                let [m, v, x] = &fused_state;
                fused.adam_step_(&grad, m, v, Some(x), &step).unwrap();
                // Transposed views of transposed copies: the same values, not dense.
                let strided = |t: &Tensor| t.t().unwrap().copy().unwrap().t().unwrap();
                let parameter = strided(&reference);
                let [m, v, x] = reference_state.each_ref().map(strided);
                parameter
                    .adam_step_(&grad, &m, &v, Some(&x), &step)
                    .unwrap();
                reference.assign(&parameter).unwrap();
                for (kept, new) in reference_state.iter().zip([&m, &v, &x]) {
                    kept.assign(new).unwrap();
                }
                let tolerance = if dtype == DType::F16 { 4e-3 } else { 1e-6 };
                let what = format!("{dtype:?} config {n} round {round}");
                assert_close(
                    &values(&fused),
                    &values(&reference),
                    tolerance,
                    tolerance,
                    &what,
                );
                for (a, b) in fused_state.iter().zip(&reference_state) {
                    assert_close(&values(a), &values(b), tolerance, tolerance, &what);
                }
            }
            assert!(
                values(&fused) != original,
                "{dtype:?} config {n}: no update"
            );
        }
    }
    // The first step by hand: m = 0.1 g, v = 0.001 g², and the bias corrections make the
    // update lr · sign(g) (up to eps); with L2 decay the gradient is g + wd · p.
    let p = tensor(&[1.0, -2.0, 0.5], &[3], device);
    let g = tensor(&[0.5, -1.0, 0.0], &[3], device);
    let (m, v) = (p.zeros_like().unwrap(), p.zeros_like().unwrap());
    p.adam_step_(&g, &m, &v, None, &base).unwrap();
    assert_close(&values(&p), &[0.99, -1.99, 0.5], 1e-6, 1e-6, "first step");
    assert_close(&values(&m), &[0.05, -0.1, 0.0], 1e-6, 1e-6, "first moment");
    assert_close(
        &values(&v),
        &[0.00025, 0.001, 0.0],
        1e-6,
        1e-6,
        "second moment",
    );
    let amsgrad = AdamStep {
        amsgrad: true,
        ..base
    };
    let error = p.adam_step_(&g, &m, &v, None, &amsgrad).unwrap_err();
    assert!(error.to_string().contains("adam_step"), "{error}");
    let wrong = tensor(&[1.0, 2.0], &[2], device);
    let error = p.adam_step_(&g, &wrong, &v, None, &base).unwrap_err();
    assert!(error.to_string().contains("adam_step"), "{error}");
    let error = p.adam_step_(&g, &m, &m, None, &base);
    assert!(
        error.is_ok(),
        "one tensor as both moments takes the composite: {error:?}"
    );
}

anygrad_testing::device_tests!(sgd_steps, adam_steps, unscaling);
