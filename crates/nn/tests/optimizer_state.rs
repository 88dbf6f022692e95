//! Optimizer state as a checkpoint carries it: `AdamW` is decoupled weight decay (checked
//! step by step against the update formula computed here in f64), its checkpoints are of
//! kind `adamw` and refused by `Adam` and the other way round, and every hyper-parameter or
//! step count a file holds is validated on load exactly like the constructor validates it,
//! with an error naming the file and the key.

use std::collections::BTreeMap;

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::{assert_close, temp_dir};

const START: [f32; 3] = [1.0, -2.0, 0.5];
const GRADIENT: [f32; 3] = [0.1, 0.2, -0.3];

fn linear(device: &Device) -> Linear {
    let layer = Linear::new(3, 1, false, device).unwrap();
    let (_, weight) = &layer.named_parameter_slots()[0];
    weight
        .assign(&Tensor::from_vec(START.to_vec(), &[1, 3], device).unwrap())
        .unwrap();
    layer
}

/// Run `steps` optimizer steps with the constant gradient `GRADIENT`; return the weights.
fn run_steps(optimizer: &mut dyn Optimizer, device: &Device, steps: usize) -> Vec<f32> {
    let (_, weight) = optimizer.parameters()[0].clone();
    for _ in 0..steps {
        weight.set_grad(Some(
            Tensor::from_vec(GRADIENT.to_vec(), &[1, 3], device).unwrap(),
        ));
        optimizer.step().unwrap();
    }
    weight.tensor().to_vec::<f32>().unwrap()
}

/// PyTorch's AdamW update (decoupled decay first, then Adam on the plain gradient), in f64.
fn adamw_by_hand(lr: f64, weight_decay: f64, steps: usize) -> Vec<f32> {
    let (beta1, beta2, eps) = (0.9f64, 0.999f64, 1e-8f64);
    START
        .iter()
        .zip(GRADIENT)
        .map(|(&p, g)| {
            let (mut p, g) = (p as f64, g as f64);
            let (mut m, mut v) = (0.0, 0.0);
            for t in 1..=steps as i32 {
                p *= 1.0 - lr * weight_decay;
                m = beta1 * m + (1.0 - beta1) * g;
                v = beta2 * v + (1.0 - beta2) * g * g;
                let m_hat = m / (1.0 - beta1.powi(t));
                let v_hat = v / (1.0 - beta2.powi(t));
                p -= lr * m_hat / (v_hat.sqrt() + eps);
            }
            p as f32
        })
        .collect()
}

fn adamw_is_decoupled_weight_decay(device: &Device) {
    let (lr, weight_decay) = (0.1, 0.5);
    let config = AdamConfig::new(lr).weight_decay(weight_decay);
    let model = linear(device);
    let mut adamw = AdamW::new(model.named_parameter_slots(), config).unwrap();
    let got = run_steps(&mut adamw, device, 3);
    let expected = adamw_by_hand(lr, weight_decay, 3);
    assert_close(&got, &expected, 1e-5, 1e-5, "AdamW after 3 steps");
    // Adam's L2 decay gives visibly different weights: the test tells the two apart.
    let model = linear(device);
    let mut adam = Adam::new(model.named_parameter_slots(), config).unwrap();
    let l2 = run_steps(&mut adam, device, 3);
    assert!(
        l2.iter().zip(&expected).any(|(a, e)| (a - e).abs() > 1e-3),
        "Adam with L2 {l2:?} should differ from AdamW {expected:?}"
    );
    assert_eq!(adamw.state_dict().unwrap().kind, "adamw");
    assert_eq!(adam.state_dict().unwrap().kind, "adam");
}

fn resuming_under_another_optimizer_is_refused(device: &Device) {
    let dir = temp_dir(&format!("optimizer-kind-{}", device.is_gpu()));
    let path = dir.join("adamw.safetensors");
    let model = linear(device);
    let mut adamw = AdamW::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    run_steps(&mut adamw, device, 1);
    save_checkpoint(&model, Some(&adamw), &BTreeMap::new(), &path).unwrap();
    let mut adam = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    let error = load_checkpoint(&model, Some(&mut adam), &path)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("adamw") && error.contains("adamw.safetensors"),
        "{error}"
    );
    let mut again = AdamW::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    load_checkpoint(&model, Some(&mut again), &path).unwrap();
    assert_eq!(again.step_count("weight"), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rewrite one metadata entry of a checkpoint file.
fn with_metadata(source: &std::path::Path, target: &std::path::Path, key: &str, value: &str) {
    let (tensors, mut metadata) = load_tensors(source, &Device::Cpu).unwrap();
    metadata.insert(key.to_string(), value.to_string());
    let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
    save_tensors(&tensors, &metadata, target).unwrap();
}

fn bad_loaded_settings_are_refused(device: &Device) {
    let dir = temp_dir(&format!("optimizer-values-{}", device.is_gpu()));
    let good = dir.join("good.safetensors");
    let model = linear(device);
    let mut adam = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    run_steps(&mut adam, device, 2);
    save_checkpoint(&model, Some(&adam), &BTreeMap::new(), &good).unwrap();
    let scalar = |name: &str| format!("anygrad.optimizer.scalar.{name}");
    let cases = [
        ("lr", "NaN"),
        ("lr", "-1.0"),
        ("lr", "inf"),
        ("beta1", "2.0"),
        ("beta2", "1.0"),
        ("eps", "-1.0"),
        ("weight_decay", "-5.0"),
        ("amsgrad", "0.5"),
        ("state.weight.step", "1e30"),
        ("state.weight.step", "-3.0"),
        ("state.weight.step", "1.5"),
        ("state.weight.step", "NaN"),
        ("state.weight.step", "0.0"),
    ];
    for (name, value) in cases {
        let bad = dir.join("bad.safetensors");
        with_metadata(&good, &bad, &scalar(name), value);
        let mut fresh = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
        let error = load_checkpoint(&model, Some(&mut fresh), &bad)
            .expect_err(&format!("{name} = {value} must be refused"))
            .to_string();
        assert!(
            error.contains("bad.safetensors") && error.contains(&format!("`{name}`")),
            "{name} = {value}: {error}"
        );
        let error = load_optimizer(&mut fresh, &bad)
            .expect_err(&format!("{name} = {value} must be refused"))
            .to_string();
        assert!(error.contains("bad.safetensors"), "{error}");
        // Nothing changed: the fresh optimizer still has no state.
        assert_eq!(fresh.step_count("weight"), 0);
    }
    // The unmodified file still loads (the cases fail for their value, not the rewrite).
    let copy = dir.join("copy.safetensors");
    with_metadata(&good, &copy, &scalar("beta1"), "0.9");
    let mut fresh = Adam::new(model.named_parameter_slots(), AdamConfig::new(0.1)).unwrap();
    load_checkpoint(&model, Some(&mut fresh), &copy).unwrap();
    assert_eq!(fresh.step_count("weight"), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

fn bad_sgd_settings_are_refused(device: &Device) {
    let dir = temp_dir(&format!("optimizer-sgd-{}", device.is_gpu()));
    let good = dir.join("sgd.safetensors");
    let model = linear(device);
    let mut sgd = Sgd::new(
        model.named_parameter_slots(),
        SgdConfig::new(0.1).momentum(0.9),
    )
    .unwrap();
    run_steps(&mut sgd, device, 1);
    save_optimizer(&sgd, &good).unwrap();
    for (name, value) in [
        ("lr", "NaN"),
        ("momentum", "-0.5"),
        ("weight_decay", "inf"),
        ("dampening", "NaN"),
        ("nesterov", "2.0"),
    ] {
        let bad = dir.join("bad-sgd.safetensors");
        with_metadata(
            &good,
            &bad,
            &format!("anygrad.optimizer.scalar.{name}"),
            value,
        );
        let mut fresh = Sgd::new(model.named_parameter_slots(), SgdConfig::new(0.1)).unwrap();
        let error = load_optimizer(&mut fresh, &bad)
            .expect_err(&format!("{name} = {value} must be refused"))
            .to_string();
        assert!(
            error.contains("bad-sgd.safetensors") && error.contains(&format!("`{name}`")),
            "{name} = {value}: {error}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn constructors_refuse_non_finite_values() {
    let model = linear(&Device::Cpu);
    for config in [
        AdamConfig::new(f64::INFINITY),
        AdamConfig::new(0.1).eps(f64::NAN),
        AdamConfig::new(0.1).weight_decay(f64::INFINITY),
    ] {
        assert!(Adam::new(model.named_parameter_slots(), config).is_err());
        assert!(AdamW::new(model.named_parameter_slots(), config).is_err());
    }
    assert!(Sgd::new(model.named_parameter_slots(), SgdConfig::new(f64::NAN)).is_err());
}

/// Partial steps (`step_parameters`) over every parameter, each once, equal one `step`, for
/// every optimizer that supports them; an index out of range is an error.
#[test]
fn partial_steps_add_up_to_a_step() {
    type Factory = fn(Vec<(String, Parameter)>) -> Box<dyn Optimizer>;
    let factories: [(&str, Factory); 5] = [
        ("sgd", |p| {
            Box::new(Sgd::new(p, SgdConfig::new(0.1).momentum(0.9)).unwrap())
        }),
        ("adam", |p| {
            Box::new(Adam::new(p, AdamConfig::new(0.01)).unwrap())
        }),
        ("adamw", |p| {
            Box::new(AdamW::new(p, AdamConfig::new(0.01).weight_decay(0.1)).unwrap())
        }),
        ("adagrad", |p| {
            Box::new(Adagrad::new(p, AdagradConfig::new(0.1)).unwrap())
        }),
        ("rmsprop", |p| {
            Box::new(RMSprop::new(p, RMSpropConfig::new(0.01).momentum(0.5)).unwrap())
        }),
    ];
    let device = Device::Cpu;
    for (name, factory) in factories {
        let model = || {
            Sequential::new()
                .add(Linear::new(3, 4, true, &device).unwrap())
                .add(Linear::new(4, 2, true, &device).unwrap())
        };
        let (whole, parts) = (model(), model());
        // The same start (tests share the global generator across threads: copy, not seed).
        for ((_, from), (_, to)) in whole
            .named_parameter_slots()
            .iter()
            .zip(parts.named_parameter_slots())
        {
            to.tensor().assign(&from.tensor()).unwrap();
        }
        let mut whole_optimizer = factory(whole.named_parameter_slots());
        let mut parts_optimizer = factory(parts.named_parameter_slots());
        assert!(parts_optimizer.supports_partial_step(), "{name}");
        for step in 0..3 {
            for optimizer in [&whole_optimizer, &parts_optimizer] {
                for (index, (_, parameter)) in optimizer.parameters().iter().enumerate() {
                    let tensor = parameter.tensor();
                    let values: Vec<f32> = (0..tensor.numel())
                        .map(|i| ((i + index + step) % 5) as f32 * 0.1 - 0.2)
                        .collect();
                    tensor.set_grad(Some(
                        Tensor::from_vec(values, tensor.shape(), &device).unwrap(),
                    ));
                }
            }
            whole_optimizer.step().unwrap();
            parts_optimizer.step_parameters(&[3, 0]).unwrap();
            parts_optimizer.step_parameters(&[1, 2]).unwrap();
        }
        for ((parameter, a), (_, b)) in whole
            .named_parameters()
            .iter()
            .zip(parts.named_parameters())
        {
            assert_eq!(
                a.to_vec::<f32>().unwrap(),
                b.to_vec::<f32>().unwrap(),
                "{name}: `{parameter}`"
            );
        }
        assert!(parts_optimizer.step_parameters(&[4]).is_err(), "{name}");
    }
}

anygrad_testing::device_tests!(
    adamw_is_decoupled_weight_decay,
    resuming_under_another_optimizer_is_refused,
    bad_loaded_settings_are_refused,
    bad_sgd_settings_are_refused,
);
