//! Optimizer state tensors and entries are validated on load: a non-finite buffer, a negative
//! second moment (Adam/AdamW `exp_avg_sq`, RMSprop `square_avg`, Adagrad `sum`), a shape that
//! differs from the parameter's, and any scalar or tensor the optimizer does not use are
//! refused with an error naming the entry and the parameter, and a refused checkpoint changes
//! neither the optimizer nor the model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::temp_dir;

/// A `Linear(3 → 2)` (parameters `weight` and `bias`) with fixed values.
fn linear() -> Linear {
    let layer = Linear::new(3, 2, true, &Device::Cpu).unwrap();
    let weights: Vec<f32> = (0..6).map(|i| i as f32 * 0.1 - 0.2).collect();
    layer
        .weight
        .assign(&Tensor::from_vec(weights, &[2, 3], &Device::Cpu).unwrap())
        .unwrap();
    layer
}

/// Two steps with fixed gradients, so every state buffer exists.
fn train(optimizer: &mut dyn Optimizer) {
    for step in 0..2 {
        for (_, parameter) in optimizer.parameters() {
            let numel = parameter.numel();
            let gradient: Vec<f32> = (0..numel)
                .map(|i| (i as f32 + 1.0) * 0.05 * if step == 0 { 1.0 } else { -0.5 })
                .collect();
            parameter.set_grad(Some(
                Tensor::from_vec(gradient, &parameter.shape(), &Device::Cpu).unwrap(),
            ));
        }
        optimizer.step().unwrap();
    }
}

/// A checkpoint of `model` and `optimizer` after two steps.
fn saved(dir: &Path, name: &str, model: &Linear, optimizer: &mut dyn Optimizer) -> PathBuf {
    train(optimizer);
    let path = dir.join(name);
    let metadata = BTreeMap::from([("epoch".to_string(), "1".to_string())]);
    save_checkpoint(model, Some(&*optimizer), &metadata, &path).unwrap();
    path
}

/// Copy `source` to `target` with `edit` applied to its tensors and metadata.
fn rewritten(
    source: &Path,
    target: &Path,
    edit: impl FnOnce(&mut BTreeMap<String, Tensor>, &mut BTreeMap<String, String>),
) {
    let (mut tensors, mut metadata) = load_tensors(source, &Device::Cpu).unwrap();
    edit(&mut tensors, &mut metadata);
    let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
    save_tensors(&tensors, &metadata, target).unwrap();
}

/// `name` with every value replaced by `value` (same shape).
fn fill(tensors: &mut BTreeMap<String, Tensor>, name: &str, value: f32) {
    let shape = tensors
        .get(name)
        .unwrap_or_else(|| panic!("{name} not in {:?}", tensors.keys()))
        .shape()
        .to_vec();
    let count: usize = shape.iter().product();
    let mut values = vec![1.0f32; count];
    values[count - 1] = value;
    tensors.insert(
        name.to_string(),
        Tensor::from_vec(values, &shape, &Device::Cpu).unwrap(),
    );
}

/// Loading `bad` into a fresh optimizer (and the model) fails with every text of `expected`,
/// and changes neither the optimizer's state nor the model's weights.
fn assert_refused(
    bad: &Path,
    model: &Linear,
    fresh: &mut dyn Optimizer,
    expected: &[&str],
) -> String {
    let weights_before = model.weight.tensor().to_vec::<f32>().unwrap();
    let state_before = fresh.state_dict().unwrap();
    let error = load_checkpoint(model, Some(&mut *fresh), bad)
        .expect_err("the damaged state must be refused")
        .to_string();
    for text in expected {
        assert!(error.contains(text), "`{text}` not in: {error}");
    }
    assert!(
        error.contains(&bad.file_name().unwrap().to_string_lossy().into_owned()),
        "{error}"
    );
    let again = load_optimizer(fresh, bad)
        .expect_err("load_optimizer must refuse it too")
        .to_string();
    assert!(again.contains(expected[0]), "{again}");
    assert_eq!(
        model.weight.tensor().to_vec::<f32>().unwrap(),
        weights_before,
        "a refused checkpoint changed the model"
    );
    let state_after = fresh.state_dict().unwrap();
    assert_eq!(
        state_after.tensors.keys().collect::<Vec<_>>(),
        state_before.tensors.keys().collect::<Vec<_>>(),
        "a refused checkpoint changed the optimizer"
    );
    error
}

fn adam(model: &Linear) -> Adam {
    Adam::new(model.named_parameter_slots(), AdamConfig::new(0.01)).unwrap()
}

#[test]
fn adam_refuses_negative_or_non_finite_moments() {
    let dir = temp_dir("optimizer-validation-adam");
    let model = linear();
    let good = saved(&dir, "good.safetensors", &model, &mut adam(&model));
    let bad = dir.join("bad.safetensors");
    let cases: [(&str, f32, &[&str]); 5] = [
        (
            "optimizer.state.weight.exp_avg_sq",
            -1.0,
            &[
                "state.weight.exp_avg_sq",
                "parameter `weight`",
                ">= 0",
                "-1",
            ],
        ),
        (
            "optimizer.state.bias.exp_avg_sq",
            f32::INFINITY,
            &["state.bias.exp_avg_sq", "parameter `bias`", "inf"],
        ),
        (
            "optimizer.state.weight.exp_avg",
            f32::NAN,
            &[
                "state.weight.exp_avg",
                "parameter `weight`",
                "finite",
                "NaN",
            ],
        ),
        (
            "optimizer.state.bias.exp_avg",
            f32::NEG_INFINITY,
            &["state.bias.exp_avg", "parameter `bias`", "finite"],
        ),
        (
            "optimizer.state.weight.exp_avg_sq",
            f32::NAN,
            &["state.weight.exp_avg_sq", "parameter `weight`"],
        ),
    ];
    for (entry, value, expected) in cases {
        rewritten(&good, &bad, |tensors, _| fill(tensors, entry, value));
        let model_again = linear();
        assert_refused(&bad, &model_again, &mut adam(&model_again), expected);
    }
    // The good file still loads (the cases fail for their values, not the rewrite).
    let copy = dir.join("copy.safetensors");
    rewritten(&good, &copy, |_, _| {});
    let mut fresh = adam(&model);
    load_checkpoint(&model, Some(&mut fresh), &copy).unwrap();
    assert_eq!(fresh.step_count("weight"), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn adamw_amsgrad_refuses_a_negative_running_maximum() {
    let dir = temp_dir("optimizer-validation-amsgrad");
    let model = linear();
    let config = AdamConfig::new(0.01).amsgrad(true);
    let make = |model: &Linear| AdamW::new(model.named_parameter_slots(), config).unwrap();
    let good = saved(&dir, "good.safetensors", &model, &mut make(&model));
    let bad = dir.join("bad.safetensors");
    rewritten(&good, &bad, |tensors, _| {
        fill(tensors, "optimizer.state.weight.max_exp_avg_sq", -0.5)
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut make(&model_again),
        &["state.weight.max_exp_avg_sq", "parameter `weight`", ">= 0"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rmsprop_adagrad_and_sgd_refuse_bad_buffers() {
    let dir = temp_dir("optimizer-validation-others");
    let model = linear();
    let rmsprop = |model: &Linear| {
        RMSprop::new(
            model.named_parameter_slots(),
            RMSpropConfig::new(0.01).momentum(0.9).centered(true),
        )
        .unwrap()
    };
    let adagrad = |model: &Linear| {
        Adagrad::new(model.named_parameter_slots(), AdagradConfig::new(0.1)).unwrap()
    };
    let sgd = |model: &Linear| {
        Sgd::new(
            model.named_parameter_slots(),
            SgdConfig::new(0.1).momentum(0.9),
        )
        .unwrap()
    };
    let bad = dir.join("bad.safetensors");

    let good = saved(&dir, "rmsprop.safetensors", &model, &mut rmsprop(&model));
    for (entry, value, expected) in [
        ("square_avg", -2.0, ">= 0"),
        ("square_avg", f32::NAN, ">= 0"),
        ("momentum_buffer", f32::INFINITY, "finite"),
        ("grad_avg", f32::NAN, "finite"),
    ] {
        let key = format!("optimizer.state.bias.{entry}");
        rewritten(&good, &bad, |tensors, _| fill(tensors, &key, value));
        let model_again = linear();
        assert_refused(
            &bad,
            &model_again,
            &mut rmsprop(&model_again),
            &[&format!("state.bias.{entry}"), "parameter `bias`", expected],
        );
    }

    let good = saved(&dir, "adagrad.safetensors", &model, &mut adagrad(&model));
    for (value, expected) in [(-1.0, ">= 0"), (f32::NAN, "NaN")] {
        rewritten(&good, &bad, |tensors, _| {
            fill(tensors, "optimizer.state.weight.sum", value)
        });
        let model_again = linear();
        assert_refused(
            &bad,
            &model_again,
            &mut adagrad(&model_again),
            &["state.weight.sum", "parameter `weight`", expected],
        );
    }

    let good = saved(&dir, "sgd.safetensors", &model, &mut sgd(&model));
    rewritten(&good, &bad, |tensors, _| {
        fill(tensors, "optimizer.state.weight.momentum_buffer", f32::NAN)
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut sgd(&model_again),
        &[
            "state.weight.momentum_buffer",
            "parameter `weight`",
            "finite",
        ],
    );
    // A negative momentum buffer is an ordinary value.
    rewritten(&good, &bad, |tensors, _| {
        fill(tensors, "optimizer.state.weight.momentum_buffer", -3.0)
    });
    let model_again = linear();
    load_checkpoint(&model_again, Some(&mut sgd(&model_again)), &bad).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mis_shaped_state_names_the_parameter() {
    let dir = temp_dir("optimizer-validation-shape");
    let model = linear();
    let good = saved(&dir, "good.safetensors", &model, &mut adam(&model));
    let bad = dir.join("bad.safetensors");
    rewritten(&good, &bad, |tensors, _| {
        tensors.insert(
            "optimizer.state.weight.exp_avg".into(),
            Tensor::zeros(&[3, 2], anygrad_core::DType::F32, &Device::Cpu).unwrap(),
        );
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut adam(&model_again),
        &[
            "state.weight.exp_avg",
            "[3, 2]",
            "parameter `weight`",
            "[2, 3]",
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_scalars_are_refused_like_unknown_tensors() {
    let dir = temp_dir("optimizer-validation-unknown");
    let model = linear();
    let good = saved(&dir, "good.safetensors", &model, &mut adam(&model));
    let bad = dir.join("bad.safetensors");
    let scalar = |name: &str| format!("anygrad.optimizer.scalar.{name}");
    // Unknown scalars: top-level, per parameter, and a second group's hyper-parameter.
    for name in ["bogus", "state.weight.bogus", "group.1.lr", "momentum"] {
        rewritten(&good, &bad, |_, metadata| {
            metadata.insert(scalar(name), "0.5".into());
        });
        let model_again = linear();
        let error = assert_refused(
            &bad,
            &model_again,
            &mut adam(&model_again),
            &[&format!("`{name}`"), "scalars"],
        );
        assert!(error.contains("unexpected"), "{error}");
    }
    // Unknown tensors: an entry Adam does not keep, and moments without a step count.
    rewritten(&good, &bad, |tensors, _| {
        let like = tensors["optimizer.state.weight.exp_avg"].clone();
        tensors.insert("optimizer.state.weight.momentum_buffer".into(), like);
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut adam(&model_again),
        &["state.weight.momentum_buffer", "unexpected", "tensors"],
    );
    rewritten(&good, &bad, |_, metadata| {
        metadata.remove(&scalar("state.bias.step"));
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut adam(&model_again),
        &["state.bias.exp_avg", "unexpected"],
    );
    // Unknown optimizer metadata beside the scalars.
    rewritten(&good, &bad, |_, metadata| {
        metadata.insert("anygrad.optimizer.scalars.lr".into(), "0.1".into());
    });
    let model_again = linear();
    assert_refused(
        &bad,
        &model_again,
        &mut adam(&model_again),
        &["anygrad.optimizer.scalars.lr"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn step_counts_must_be_positive_whole_numbers() {
    let dir = temp_dir("optimizer-validation-steps");
    let model = linear();
    let good = saved(&dir, "good.safetensors", &model, &mut adam(&model));
    let bad = dir.join("bad.safetensors");
    for value in ["-1.0", "2.5", "NaN"] {
        rewritten(&good, &bad, |_, metadata| {
            metadata.insert(
                "anygrad.optimizer.scalar.state.weight.step".into(),
                value.into(),
            );
        });
        let model_again = linear();
        assert_refused(
            &bad,
            &model_again,
            &mut adam(&model_again),
            &["state.weight.step", "whole number"],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
