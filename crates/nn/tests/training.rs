//! Training behaviour: loss falls over many epochs with ONE optimizer instance whose state
//! persists, gradient accumulation equals one big batch, gradient clipping, LR schedulers
//! driving an optimizer, and optimizer state that survives a save/load.

use anygrad_core::{DType, Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::{assert_close, values};

/// Three Gaussian blobs in 2-D, 60 points, labels 0..3.
fn blobs(device: &Device) -> (Tensor, Tensor) {
    anygrad_core::manual_seed(42);
    let noise = Tensor::randn(&[60, 2], DType::F32, device)
        .unwrap()
        .mul_scalar(0.5)
        .unwrap();
    let centers = [(-2.0f32, 0.0f32), (2.0, 0.0), (0.0, 2.5)];
    let mut c = Vec::new();
    let mut labels = Vec::new();
    for i in 0..60 {
        let (x, y) = centers[i % 3];
        c.extend([x, y]);
        labels.push((i % 3) as i32);
    }
    let x = Tensor::from_vec(c, &[60, 2], device)
        .unwrap()
        .add(&noise)
        .unwrap();
    (x, Tensor::from_vec(labels, &[60], device).unwrap())
}

fn mlp(device: &Device) -> Sequential {
    Sequential::new()
        .add(Linear::new(2, 16, true, device).unwrap())
        .add(ReLU)
        .add(Linear::new(16, 3, true, device).unwrap())
}

fn train(
    model: &Sequential,
    optimizer: &mut dyn Optimizer,
    x: &Tensor,
    y: &Tensor,
    epochs: usize,
) -> Vec<f64> {
    let mut losses = Vec::new();
    for _ in 0..epochs {
        optimizer.zero_grad();
        let loss = cross_entropy(&model.forward(x).unwrap(), y).unwrap();
        loss.backward().unwrap();
        optimizer.step().unwrap();
        losses.push(loss.item_f64().unwrap());
    }
    losses
}

fn adam_loss_decreases_with_one_optimizer(device: &Device) {
    let (x, y) = blobs(device);
    let model = mlp(device);
    let mut optimizer = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.02)).unwrap();
    let losses = train(&model, &mut optimizer, &x, &y, 100);
    assert!(
        losses[99] < 0.25 * losses[0],
        "loss {} -> {}",
        losses[0],
        losses[99]
    );
    assert!(losses[99] < 0.2, "final loss {}", losses[99]);
    // The state persisted: every parameter was stepped 100 times by the same instance.
    for (name, _) in model.named_parameters() {
        assert_eq!(optimizer.step_count(&name), 100, "{name}");
    }
    let state = optimizer.state_dict().unwrap();
    assert_eq!(state.scalars["state.0.weight.step"], 100.0);
    let moment = values(&state.tensors["state.0.weight.exp_avg_sq"]);
    assert!(moment.iter().all(|v| v.is_finite()) && moment.iter().any(|&v| v > 0.0));
    assert_eq!(
        state.tensors["state.0.weight.exp_avg"].device(),
        device,
        "state lives on the parameters' device"
    );
    // Accuracy on the (easy) training set.
    let predictions = model.forward(&x).unwrap().argmax(1, false).unwrap();
    let correct = predictions
        .eq(&y)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .sum_all()
        .unwrap()
        .item_f64()
        .unwrap();
    assert!(correct >= 57.0, "accuracy {correct}/60");
}

fn sgd_momentum_and_adamw_decrease(device: &Device) {
    let (x, y) = blobs(device);
    let model = mlp(device);
    let mut sgd = Sgd::new(
        model.named_parameter_slots(),
        SgdConfig::new(0.1)
            .momentum(0.9)
            .nesterov(true)
            .weight_decay(1e-4),
    )
    .unwrap();
    let losses = train(&model, &mut sgd, &x, &y, 100);
    assert!(
        losses[99] < 0.25 * losses[0],
        "sgd loss {} -> {}",
        losses[0],
        losses[99]
    );
    assert!(sgd
        .state_dict()
        .unwrap()
        .tensors
        .contains_key("state.2.bias.momentum_buffer"));
    let model = mlp(device);
    let mut adamw = Adam::adamw(
        model.named_parameter_slots(),
        AdamConfig::new(0.02).weight_decay(0.01),
    )
    .unwrap();
    let losses = train(&model, &mut adamw, &x, &y, 100);
    assert!(
        losses[99] < 0.25 * losses[0],
        "adamw loss {} -> {}",
        losses[0],
        losses[99]
    );
}

fn gradient_accumulation_matches_full_batch(device: &Device) {
    let (x, y) = blobs(device);
    let model = mlp(device);
    // Full batch, summed loss.
    let loss = CrossEntropyLoss::new().reduction(Reduction::Sum);
    loss.forward(&model.forward(&x).unwrap(), &y)
        .unwrap()
        .backward()
        .unwrap();
    let full: Vec<Vec<f32>> = model
        .parameters()
        .iter()
        .map(|p| values(&p.grad().unwrap()))
        .collect();
    model.zero_grad();
    assert!(model.parameters().iter().all(|p| p.grad().is_none()));
    // Three micro-batches; gradients accumulate until zero_grad.
    for chunk in 0..3 {
        let xs = x.narrow(0, chunk * 20, 20).unwrap();
        let ys = y.narrow(0, chunk * 20, 20).unwrap();
        loss.forward(&model.forward(&xs).unwrap(), &ys)
            .unwrap()
            .backward()
            .unwrap();
    }
    for (p, expected) in model.parameters().iter().zip(&full) {
        assert_close(
            &values(&p.grad().unwrap()),
            expected,
            1e-4,
            1e-4,
            "accumulated gradient",
        );
    }
    // An optimizer step after accumulation uses the accumulated gradient.
    let before = values(&model.parameters()[0]);
    let mut sgd = Sgd::new(model.named_parameter_slots(), SgdConfig::new(0.01)).unwrap();
    sgd.step().unwrap();
    let after = values(&model.parameters()[0]);
    let expected: Vec<f32> = before
        .iter()
        .zip(&full[0])
        .map(|(p, g)| p - 0.01 * g)
        .collect();
    assert_close(
        &after,
        &expected,
        1e-5,
        1e-5,
        "step with accumulated gradient",
    );
}

fn clipping(device: &Device) {
    let a = anygrad_testing::tensor(&[0.0, 0.0], &[2], device).requires_grad_(true);
    let b = anygrad_testing::tensor(&[0.0], &[1], device).requires_grad_(true);
    a.set_grad(Some(anygrad_testing::tensor(&[3.0, 0.0], &[2], device)));
    b.set_grad(Some(anygrad_testing::tensor(&[4.0], &[1], device)));
    let c = anygrad_testing::tensor(&[1.0], &[1], device).requires_grad_(true); // no gradient: skipped
    let norm = clip_grad_norm_(&[a.clone(), b.clone(), c], 1.0).unwrap();
    assert!((norm - 5.0).abs() < 1e-5);
    assert_close(
        &values(&a.grad().unwrap()),
        &[0.6, 0.0],
        1e-5,
        0.0,
        "clipped a",
    );
    assert_close(&values(&b.grad().unwrap()), &[0.8], 1e-5, 0.0, "clipped b");
    // Below the limit nothing changes.
    let norm = clip_grad_norm_(&[a.clone(), b.clone()], 10.0).unwrap();
    assert!((norm - 1.0).abs() < 1e-5);
    assert_close(
        &values(&b.grad().unwrap()),
        &[0.8],
        1e-5,
        0.0,
        "unclipped b",
    );
    clip_grad_value_(std::slice::from_ref(&a), 0.5).unwrap();
    assert_close(
        &values(&a.grad().unwrap()),
        &[0.5, 0.0],
        1e-6,
        0.0,
        "value clipped",
    );
}

fn scheduler_drives_optimizer(device: &Device) {
    let model = mlp(device);
    let mut optimizer = Sgd::new(model.named_parameter_slots(), SgdConfig::new(1.0)).unwrap();
    let mut scheduler = StepLR::new(&optimizer, 2, 0.1);
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(optimizer.learning_rate());
        scheduler.step(&mut optimizer).expect("step");
    }
    assert_close(
        &seen.iter().map(|&v| v as f32).collect::<Vec<_>>(),
        &[1.0, 1.0, 0.1, 0.1, 0.01],
        1e-7,
        1e-6,
        "step lr",
    );
    assert!((scheduler.last_lr() - 0.01).abs() < 1e-12);
}

fn optimizer_state_survives_checkpoint(device: &Device) {
    let dir = anygrad_testing::temp_dir(&format!("optstate-{}", device.is_gpu()));
    let (x, y) = blobs(device);
    let model = mlp(device);
    let mut optimizer = Adam::new(
        model.named_parameter_slots(),
        AdamConfig::new(0.01).amsgrad(true),
    )
    .unwrap();
    train(&model, &mut optimizer, &x, &y, 5);
    let path = dir.join("checkpoint.safetensors");
    let mut meta = std::collections::BTreeMap::new();
    meta.insert("epoch".to_string(), "5".to_string());
    save_checkpoint(&model, Some(&optimizer), &meta, &path).unwrap();
    // A fresh model and optimizer resume from the file...
    let resumed = mlp(device);
    let mut resumed_optimizer =
        Adam::new(resumed.named_parameter_slots(), AdamConfig::new(0.5)).unwrap();
    let loaded_meta = load_checkpoint(&resumed, Some(&mut resumed_optimizer), &path).unwrap();
    assert_eq!(loaded_meta.get("epoch").map(String::as_str), Some("5"));
    assert_eq!(resumed_optimizer.learning_rate(), 0.01);
    assert!(resumed_optimizer.config().amsgrad);
    assert_eq!(resumed_optimizer.step_count("2.weight"), 5);
    // ...and continue exactly like the original.
    let a = train(&model, &mut optimizer, &x, &y, 3);
    let b = train(&resumed, &mut resumed_optimizer, &x, &y, 3);
    assert_eq!(a, b, "losses after resuming");
    for ((name, p), (_, q)) in model
        .named_parameters()
        .iter()
        .zip(resumed.named_parameters())
    {
        assert_eq!(values(p), values(&q), "{name} after resuming");
    }
    // The model part also loads on its own (optimizer entries are skipped), and the
    // optimizer part through load_optimizer.
    load_safetensors(&resumed, &path).unwrap();
    let opt_path = dir.join("opt.safetensors");
    save_optimizer(&optimizer, &opt_path).unwrap();
    let mut other = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.5)).unwrap();
    load_optimizer(&mut other, &opt_path).unwrap();
    assert_eq!(other.step_count("0.bias"), 8);
    // Wrong optimizer kind or foreign parameters are refused.
    let mut sgd = Sgd::new(model.named_parameter_slots(), SgdConfig::new(0.1)).unwrap();
    assert!(load_optimizer(&mut sgd, &opt_path).is_err());
    let small = Sequential::new().add(Linear::new(2, 16, true, device).unwrap());
    let mut partial = Adam::new(small.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    let error = load_optimizer(&mut partial, &opt_path)
        .unwrap_err()
        .to_string();
    assert!(error.contains("2.weight"), "{error}");
    // A model-only file has no optimizer state.
    let model_only = dir.join("model.safetensors");
    save_safetensors(&model, &model_only).unwrap();
    assert!(load_optimizer(&mut other, &model_only).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

anygrad_testing::device_tests!(
    adam_loss_decreases_with_one_optimizer,
    sgd_momentum_and_adamw_decrease,
    gradient_accumulation_matches_full_batch,
    clipping,
    scheduler_drives_optimizer,
    optimizer_state_survives_checkpoint,
);
