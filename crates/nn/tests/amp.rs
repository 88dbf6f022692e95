//! Mixed precision: under autocast matmul runs in f16 and softmax in f32, gradients reach the
//! f32 master weights in f32, a model trained with autocast + GradScaler learns like one in
//! f32, and the scaler skips steps (and lowers its scale) when the loss overflows — SGD on the
//! device, without a readback — and divides every gradient exactly once, also gradients that
//! share storage.

use anygrad_core::{autocast, no_grad, DType, Device, Tensor};
use anygrad_nn::{
    Adam, AdamConfig, CrossEntropyLoss, GradScaler, Linear, Module, Optimizer, Parameter, ReLU,
    Sequential, Sgd, SgdConfig,
};

fn autocast_op_precisions(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_op_precisions") {
        return;
    }
    let w = Tensor::randn(&[8, 4], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let x = Tensor::randn(&[3, 8], DType::F32, device).unwrap();
    let (product, probabilities) = {
        let _guard = autocast(DType::F16, device).unwrap();
        let product = x.matmul(&w).unwrap();
        (product.clone(), product.softmax(1).unwrap())
    };
    assert_eq!(product.dtype(), DType::F16, "matmul runs in f16");
    assert_eq!(probabilities.dtype(), DType::F32, "softmax stays in f32");
    let reference = x.matmul(&w).unwrap().to_vec_f32().unwrap();
    let low = product.to_vec_f32().unwrap();
    for (a, b) in low.iter().zip(&reference) {
        assert!((a - b).abs() <= 2e-2 * (1.0 + b.abs()), "{a} vs {b}");
    }
    probabilities.sum_all().unwrap().backward().unwrap();
    let grad = w.grad().expect("gradient reaches the master weight");
    assert_eq!(grad.dtype(), DType::F32);
}

/// `Linear` under autocast runs whole in f16 (its f32 bias joins the f16 product in f16, as
/// PyTorch's `linear`), so its output is f16; the bias still gets an f32 gradient.
fn autocast_linear_stays_f16(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_linear_stays_f16") {
        return;
    }
    let layer = Linear::new(8, 5, true, device).unwrap();
    let x = Tensor::randn(&[3, 8], DType::F32, device).unwrap();
    let reference = layer.forward(&x).unwrap().to_vec_f32().unwrap();
    let out = {
        let _guard = autocast(DType::F16, device).unwrap();
        layer.forward(&x).unwrap()
    };
    assert_eq!(out.dtype(), DType::F16, "linear runs in f16 under autocast");
    for (a, b) in out.to_vec_f32().unwrap().iter().zip(&reference) {
        assert!((a - b).abs() <= 2e-2 * (1.0 + b.abs()), "{a} vs {b}");
    }
    out.to_dtype(DType::F32)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let bias = layer.bias.as_ref().expect("a bias");
    let grad = bias.grad().expect("gradient reaches the bias");
    assert_eq!(grad.dtype(), DType::F32);
    assert_eq!(grad.to_vec_f32().unwrap(), vec![3.0; 5]);
}

fn amp_training_matches_f32(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "amp_training_matches_f32") {
        return;
    }
    let train = |amp: bool| -> f64 {
        anygrad_core::manual_seed(3);
        let model = Sequential::new()
            .add(Linear::new(16, 32, true, device).unwrap())
            .add(ReLU)
            .add(Linear::new(32, 4, true, device).unwrap());
        let x = Tensor::randn(&[64, 16], DType::F32, device).unwrap();
        let labels = x.narrow(1, 0, 4).unwrap().argmax(1, false).unwrap();
        let mut optimizer =
            Adam::new(model.named_parameter_slots(), AdamConfig::new(1e-2)).unwrap();
        let mut scaler = GradScaler::default();
        let loss_fn = CrossEntropyLoss::new();
        for _ in 0..60 {
            optimizer.zero_grad();
            if amp {
                let loss = {
                    let _guard = autocast(DType::F16, device).unwrap();
                    loss_fn
                        .forward(&model.forward(&x).unwrap(), &labels)
                        .unwrap()
                };
                scaler.scale(&loss).unwrap().backward().unwrap();
                scaler.step(&mut optimizer).unwrap();
                scaler.update();
            } else {
                loss_fn
                    .forward(&model.forward(&x).unwrap(), &labels)
                    .unwrap()
                    .backward()
                    .unwrap();
                optimizer.step().unwrap();
            }
        }
        let predicted = model.forward(&x).unwrap().argmax(1, false).unwrap();
        predicted
            .eq(&labels)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .mean_all()
            .unwrap()
            .item_f64()
            .unwrap()
    };
    let (full, mixed) = (train(false), train(true));
    assert!(full > 0.9, "f32 accuracy {full}");
    assert!(
        mixed > 0.9 && (full - mixed).abs() < 0.05,
        "amp accuracy {mixed} vs f32 {full}"
    );
}

fn scaler_skips_overflowing_steps(device: &Device) {
    let layer = Linear::new(4, 2, true, device).unwrap();
    let mut optimizer = Adam::new(layer.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    let before = layer.named_parameters()[0].1.to_vec_f32().unwrap();
    let mut scaler = GradScaler::new(1024.0, 2.0, 0.5, 2);
    let x = Tensor::full(&[1, 4], 1e30, DType::F32, device).unwrap();
    // An overflowing loss: (1e30 * w)² * 1024 is inf in f32.
    let loss = layer
        .forward(&x)
        .unwrap()
        .square()
        .unwrap()
        .sum_all()
        .unwrap();
    scaler.scale(&loss).unwrap().backward().unwrap();
    scaler.step(&mut optimizer).unwrap();
    scaler.update();
    assert_eq!(scaler.scale_value(), 512.0);
    assert_eq!(scaler.skipped_steps(), 1);
    assert_eq!(
        layer.named_parameters()[0].1.to_vec_f32().unwrap(),
        before,
        "weights unchanged"
    );
    // Two good steps grow the scale back.
    for _ in 0..2 {
        optimizer.zero_grad();
        let x = Tensor::ones(&[1, 4], DType::F32, device).unwrap();
        let loss = layer.forward(&x).unwrap().sum_all().unwrap();
        scaler.scale(&loss).unwrap().backward().unwrap();
        scaler.step(&mut optimizer).unwrap();
        scaler.update();
        assert_eq!(scaler.skipped_steps(), 1, "a good step is taken");
    }
    assert_eq!(scaler.scale_value(), 1024.0);
    assert_ne!(layer.named_parameters()[0].1.to_vec_f32().unwrap(), before);
}

/// SGD with momentum skips an overflowing step on the device (its fused kernel reads the
/// flag; nothing is read back before the next step): parameters and momentum buffers stay as
/// the good step before left them, and the next good step continues from there exactly as
/// if the overflowing one had never run.
fn sgd_skips_overflowing_steps_on_the_device(device: &Device) {
    // The same layer and optimizer each time, and the loss of an input filled with `value`.
    // The parameters are set to fixed values: the global generator is shared with the tests
    // running alongside, which may reseed it or draw from it between a seed and this layer.
    let setup = || {
        let layer = Linear::new(4, 2, true, device).unwrap();
        for (index, (_, parameter)) in layer.named_parameters().into_iter().enumerate() {
            let values: Vec<f32> = (0..parameter.numel())
                .map(|i| ((i * 7 + index * 3) % 11) as f32 / 10.0 - 0.5)
                .collect();
            let fixed = Tensor::from_vec(values, parameter.shape(), device).unwrap();
            parameter.assign(&fixed).unwrap();
        }
        let optimizer = Sgd::new(
            layer.named_parameter_slots(),
            SgdConfig::new(0.1).momentum(0.9).dampening(0.25),
        )
        .unwrap();
        (layer, optimizer)
    };
    let loss_of = |layer: &Linear, value: f64| {
        let x = Tensor::full(&[1, 4], value, DType::F32, device).unwrap();
        layer
            .forward(&x)
            .unwrap()
            .square()
            .unwrap()
            .sum_all()
            .unwrap()
    };
    let run = |overflow_at: Option<usize>| -> (Vec<f32>, usize, f64) {
        let (layer, mut optimizer) = setup();
        let mut scaler = GradScaler::new(1024.0, 2.0, 0.5, 1000);
        for step in 0..4 {
            optimizer.zero_grad();
            let value = if Some(step) == overflow_at { 1e30 } else { 1.0 };
            scaler
                .scale(&loss_of(&layer, value))
                .unwrap()
                .backward()
                .unwrap();
            scaler.step(&mut optimizer).unwrap();
            scaler.update();
        }
        let weights = layer.named_parameters()[0].1.to_vec_f32().unwrap();
        (weights, scaler.skipped_steps(), scaler.scale_value())
    };
    let (clean, clean_skipped, clean_scale) = run(None);
    assert_eq!((clean_skipped, clean_scale), (0, 1024.0));
    // An overflow at step 2 (after the buffers exist: decided on the device) leaves three good
    // steps; so does an overflow at step 0 (before they exist: read back, no buffer made).
    let three_steps = {
        let (layer, mut optimizer) = setup();
        for _ in 0..3 {
            optimizer.zero_grad();
            loss_of(&layer, 1.0).backward().unwrap();
            optimizer.step().unwrap();
        }
        layer.named_parameters()[0].1.to_vec_f32().unwrap()
    };
    for overflow_at in [0, 2] {
        let (weights, skipped, scale) = run(Some(overflow_at));
        assert_eq!(
            (skipped, scale),
            (1, 512.0),
            "overflow at step {overflow_at}"
        );
        assert_ne!(weights, clean, "overflow at step {overflow_at}");
        for (a, b) in weights.iter().zip(&three_steps) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "overflow at step {overflow_at}: {weights:?} vs three good steps {three_steps:?}"
            );
        }
    }
}

/// Gradients that are one tensor, or disjoint rows of one tensor, are each divided once.
fn scaler_divides_shared_gradients_once(device: &Device) {
    let parameter = |name: &str| {
        let tensor = Tensor::zeros(&[2], DType::F32, device).unwrap();
        (
            name.to_string(),
            Parameter::new(tensor.requires_grad_(true)),
        )
    };
    let slots = vec![
        parameter("a"),
        parameter("b"),
        parameter("c"),
        parameter("d"),
    ];
    let shared = Tensor::from_vec(vec![8.0f32, 16.0], &[2], device).unwrap();
    let rows = Tensor::from_vec(vec![2.0f32, 4.0, 6.0, 8.0], &[2, 2], device).unwrap();
    slots[0].1.set_grad(Some(shared.clone()));
    slots[1].1.set_grad(Some(shared.clone()));
    slots[2]
        .1
        .set_grad(Some(rows.narrow(0, 0, 1).unwrap().reshape([2]).unwrap()));
    slots[3]
        .1
        .set_grad(Some(rows.narrow(0, 1, 1).unwrap().reshape([2]).unwrap()));
    let optimizer = Sgd::new(slots.clone(), SgdConfig::new(0.1)).unwrap();
    let mut scaler = GradScaler::new(2.0, 2.0, 0.5, 10);
    scaler.unscale(&optimizer).unwrap();
    let grad = |i: usize| slots[i].1.grad().unwrap().to_vec_f32().unwrap();
    assert_eq!(grad(0), vec![4.0, 8.0]);
    assert_eq!(grad(1), vec![4.0, 8.0]);
    assert_eq!(grad(2), vec![1.0, 2.0]);
    assert_eq!(grad(3), vec![3.0, 4.0]);
}

/// Inference under autocast keeps its f16 copies of the parameters between forwards
/// (`no_grad`), and parameters assigned new values in place are read with those values: the
/// output then equals that of a model built with them.
fn autocast_inference_sees_assigned_parameters(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_inference_sees_assigned_parameters") {
        return;
    }
    let build = |seed: u64| {
        anygrad_core::manual_seed(seed);
        Sequential::new()
            .add(Linear::new(8, 16, true, device).unwrap())
            .add(ReLU)
            .add(Linear::new(16, 4, true, device).unwrap())
    };
    let (model, other) = (build(5), build(6));
    let x = Tensor::randn(&[5, 8], DType::F32, device).unwrap();
    let run = |model: &Sequential| {
        let _no_grad = no_grad();
        let _autocast = autocast(DType::F16, device).unwrap();
        let y = model.forward(&x).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        y.to_vec_f32().unwrap()
    };
    let first = run(&model);
    assert_eq!(run(&model), first, "the kept copies give the same output");
    for (slot, values) in model.parameters().iter().zip(other.parameters()) {
        slot.assign(&values).unwrap();
    }
    let after = run(&model);
    assert_eq!(after, run(&other), "the assigned values are read");
    assert_ne!(after, first);
}

anygrad_testing::device_tests!(
    autocast_inference_sees_assigned_parameters,
    autocast_op_precisions,
    autocast_linear_stays_f16,
    amp_training_matches_f32,
    scaler_skips_overflowing_steps,
    sgd_skips_overflowing_steps_on_the_device,
    scaler_divides_shared_gradients_once
);
