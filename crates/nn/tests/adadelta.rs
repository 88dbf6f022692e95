//! `Adadelta` against PyTorch's update rule written out here in f64 (PyTorch is not needed to
//! run it: the reference is the documented `torch.optim.Adadelta` arithmetic), with parameter
//! groups, checkpoints, partial steps and hyper-parameter validation, on every device.

use anygrad_core::{DType, Device, Tensor};
use anygrad_nn::optim::{Adadelta, AdadeltaConfig, ParamGroup};
use anygrad_nn::{load_optimizer, save_optimizer, Adam, AdamConfig, Optimizer, Parameter};
use anygrad_testing::{assert_close, temp_dir};

const START: [f64; 4] = [1.0, -2.0, 0.5, 0.0];

/// The gradient the tests feed at step `t` for parameter values `p`: that of `Σ p²` plus a
/// drift that changes sign, so the averages see varied gradients (and a zero start).
fn gradient(p: &[f64], t: usize) -> Vec<f64> {
    let drift = [0.1, -0.3, 0.2, 0.05];
    p.iter()
        .zip(drift)
        .map(|(&p, d)| 2.0 * p + d * (t as f64 - 2.5))
        .collect()
}

/// PyTorch's Adadelta over `steps` steps, in f64.
fn adadelta_by_hand(config: AdadeltaConfig, steps: usize) -> Vec<f64> {
    let AdadeltaConfig {
        lr,
        rho,
        eps,
        weight_decay,
    } = config;
    let mut p = START.to_vec();
    let mut v = vec![0.0; p.len()];
    let mut u = vec![0.0; p.len()];
    for t in 0..steps {
        let grads = gradient(&p, t);
        for i in 0..p.len() {
            let g = grads[i] + weight_decay * p[i];
            v[i] = rho * v[i] + (1.0 - rho) * g * g;
            let delta = (u[i] + eps).sqrt() / (v[i] + eps).sqrt() * g;
            u[i] = rho * u[i] + (1.0 - rho) * delta * delta;
            p[i] -= lr * delta;
        }
    }
    p
}

fn parameter(device: &Device) -> Parameter {
    let start: Vec<f32> = START.iter().map(|&v| v as f32).collect();
    Parameter::new(Tensor::from_vec(start, &[2, 2], device).unwrap())
}

/// Feed [`gradient`] of each parameter's current values and step, `steps` times.
fn run(optimizer: &mut dyn Optimizer, steps: usize) {
    for t in 0..steps {
        for (_, slot) in optimizer.parameters() {
            let tensor = slot.tensor();
            let current: Vec<f64> = tensor.to_vec_f64().unwrap();
            let grad: Vec<f32> = gradient(&current, t).iter().map(|&g| g as f32).collect();
            tensor.set_grad(Some(
                Tensor::from_vec(grad, tensor.shape(), tensor.device()).unwrap(),
            ));
        }
        optimizer.step().unwrap();
    }
}

fn values(slot: &Parameter) -> Vec<f32> {
    slot.tensor().to_vec::<f32>().unwrap()
}

fn as_f32(values: &[f64]) -> Vec<f32> {
    values.iter().map(|&v| v as f32).collect()
}

fn matches_the_reference_update(device: &Device) {
    let defaults = AdadeltaConfig::default();
    assert_eq!(
        (
            defaults.lr,
            defaults.rho,
            defaults.eps,
            defaults.weight_decay
        ),
        (1.0, 0.9, 1e-6, 0.0)
    );
    let tuned = AdadeltaConfig::new(0.5)
        .rho(0.8)
        .eps(1e-4)
        .weight_decay(0.1);
    // Two groups with different hyper-parameters in one optimizer.
    let (plain, decayed) = (parameter(device), parameter(device));
    let mut optimizer = Adadelta::with_groups(vec![
        ParamGroup::new(vec![("plain".into(), plain.clone())], defaults),
        ParamGroup::new(vec![("decayed".into(), decayed.clone())], tuned),
    ])
    .unwrap();
    run(&mut optimizer, 6);
    let expected = adadelta_by_hand(defaults, 6);
    assert_close(
        &values(&plain),
        &as_f32(&expected),
        1e-6,
        1e-4,
        "defaults after 6 steps",
    );
    // The parameters moved: the comparison is not of two starting points.
    assert!((expected[0] - START[0]).abs() > 1e-3, "{expected:?}");
    assert_close(
        &values(&decayed),
        &as_f32(&adadelta_by_hand(tuned, 6)),
        1e-6,
        1e-4,
        "lr 0.5, rho 0.8, eps 1e-4, weight decay 0.1 after 6 steps",
    );
    assert_eq!(optimizer.group_count(), 2);
    assert_eq!(optimizer.group_learning_rate(1).unwrap(), 0.5);
    assert_eq!(optimizer.group_momentum(0).unwrap(), None);
}

fn checkpoints_resume_exactly(device: &Device) {
    let dir = temp_dir(&format!("adadelta-{}", device.is_gpu()));
    let path = dir.join("adadelta.safetensors");
    let config = AdadeltaConfig::new(0.7).weight_decay(0.01);
    let straight = parameter(device);
    let mut uninterrupted = Adadelta::new(vec![("w".into(), straight.clone())], config).unwrap();
    run(&mut uninterrupted, 4);

    let resumed = parameter(device);
    let mut first = Adadelta::new(vec![("w".into(), resumed.clone())], config).unwrap();
    run(&mut first, 2);
    let state = first.state_dict().unwrap();
    assert_eq!(state.kind, "adadelta");
    assert!(state.tensors.contains_key("state.w.square_avg"));
    assert!(state.tensors.contains_key("state.w.acc_delta"));
    assert_eq!(state.scalars["state.w.step"], 2.0);
    save_optimizer(&first, &path).unwrap();
    let mut second = Adadelta::new(
        vec![("w".into(), resumed.clone())],
        AdadeltaConfig::default(),
    )
    .unwrap();
    load_optimizer(&mut second, &path).unwrap();
    assert_eq!(*second.config(), config, "hyper-parameters come back");
    // Steps 2 and 3 again (the gradient depends on the step index).
    for t in 2..4 {
        let current = resumed.tensor().to_vec_f64().unwrap();
        let grad: Vec<f32> = gradient(&current, t).iter().map(|&g| g as f32).collect();
        resumed
            .tensor()
            .set_grad(Some(Tensor::from_vec(grad, &[2, 2], device).unwrap()));
        second.step().unwrap();
    }
    assert_eq!(values(&resumed), values(&straight));

    // Another optimizer's state is refused, and a negative running average is corrupt.
    let mut adam = Adam::new(vec![("w".into(), parameter(device))], AdamConfig::new(0.1)).unwrap();
    let error = load_optimizer(&mut adam, &path).unwrap_err().to_string();
    assert!(error.contains("adadelta"), "{error}");
    let mut corrupt = state.clone();
    corrupt.tensors.insert(
        "state.w.acc_delta".into(),
        Tensor::full(&[2, 2], -1.0, DType::F32, device).unwrap(),
    );
    let mut fresh = Adadelta::new(vec![("w".into(), parameter(device))], config).unwrap();
    let error = fresh.load_state_dict(&corrupt).unwrap_err().to_string();
    assert!(error.contains("acc_delta"), "{error}");
    let mut unknown = state.clone();
    unknown.scalars.insert("momentum".into(), 0.9);
    let error = fresh.load_state_dict(&unknown).unwrap_err().to_string();
    assert!(error.contains("momentum"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn partial_steps_equal_a_step(device: &Device) {
    let (a, b) = (parameter(device), parameter(device));
    let (c, d) = (parameter(device), parameter(device));
    let config = AdadeltaConfig::default();
    let mut whole = Adadelta::new(
        vec![("a".into(), a.clone()), ("b".into(), b.clone())],
        config,
    )
    .unwrap();
    let mut parts = Adadelta::new(
        vec![("a".into(), c.clone()), ("b".into(), d.clone())],
        config,
    )
    .unwrap();
    assert!(parts.supports_partial_step());
    for t in 0..3 {
        for optimizer in [&whole, &parts] {
            for (_, slot) in optimizer.parameters() {
                let current = slot.tensor().to_vec_f64().unwrap();
                let grad: Vec<f32> = gradient(&current, t).iter().map(|&g| g as f32).collect();
                slot.tensor()
                    .set_grad(Some(Tensor::from_vec(grad, &[2, 2], device).unwrap()));
            }
        }
        whole.step().unwrap();
        parts.step_parameters(&[1]).unwrap();
        parts.step_parameters(&[0]).unwrap();
    }
    assert_eq!(values(&a), values(&c));
    assert_eq!(values(&b), values(&d));
    assert!(parts.step_parameters(&[2]).is_err());
}

#[test]
fn bad_hyper_parameters_are_refused() {
    let slots = || vec![("w".to_string(), parameter(&Device::Cpu))];
    for (config, key) in [
        (AdadeltaConfig::new(f64::NAN), "lr"),
        (AdadeltaConfig::new(-1.0), "lr"),
        (AdadeltaConfig::default().rho(1.5), "rho"),
        (AdadeltaConfig::default().rho(-0.1), "rho"),
        (AdadeltaConfig::default().eps(-1e-6), "eps"),
        (
            AdadeltaConfig::default().weight_decay(f64::INFINITY),
            "weight_decay",
        ),
    ] {
        let error = Adadelta::new(slots(), config).err().expect("refused");
        assert!(error.to_string().contains(key), "{key}: {error}");
    }
    assert!(Adadelta::new(slots(), AdadeltaConfig::default().rho(1.0)).is_ok());
}

anygrad_testing::device_tests!(
    matches_the_reference_update,
    checkpoints_resume_exactly,
    partial_steps_equal_a_step,
);
