//! Module mechanics: PyTorch names through nested containers, parameter counts, train/eval
//! propagation, Dropout, BatchNorm eval vs train (and the function against the module), moving between devices, init statistics,
//! and clear errors for bad inputs.

use anygrad_core::{DType, Device, Tensor};
use anygrad_nn::init::{self, FanMode, Nonlinearity};
use anygrad_nn::*;
use anygrad_testing::{assert_close, values};

fn nested(device: &Device) -> Sequential {
    Sequential::new()
        .add(Conv2d::square(1, 2, 3, Conv2dOptions::default().padding(1), device).unwrap())
        .add(BatchNorm2d::new_2d(2, device).unwrap())
        .add(ReLU)
        .add(
            Sequential::new()
                .add(Flatten::default())
                .add(Dropout::new(0.5).unwrap())
                .add(Linear::new(2 * 4 * 4, 3, false, device).unwrap()),
        )
}

fn names_and_counts(device: &Device) {
    let model = nested(device);
    let names: Vec<String> = model.named_slots().into_iter().map(|(n, _, _)| n).collect();
    assert_eq!(
        names,
        [
            "0.weight",
            "0.bias",
            "1.weight",
            "1.bias",
            "1.running_mean",
            "1.running_var",
            "1.num_batches_tracked",
            "3.2.weight"
        ]
    );
    let params: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        params,
        ["0.weight", "0.bias", "1.weight", "1.bias", "3.2.weight"]
    );
    assert_eq!(model.named_buffers().len(), 3);
    assert_eq!(model.parameter_count(), 2 * 9 + 2 + 2 + 2 + 32 * 3);
    assert!(model.parameters().iter().all(|p| p.requires_grad()));
    assert!(model
        .named_buffers()
        .iter()
        .all(|(_, b)| !b.requires_grad()));
    let x = Tensor::randn(&[2, 1, 4, 4], DType::F32, device).unwrap();
    assert_eq!(model.forward(&x).unwrap().shape(), &[2, 3]);
}

fn train_eval_propagates(device: &Device) {
    let model = nested(device);
    assert!(model.is_training());
    model.eval();
    assert!(!model.is_training());
    // In eval mode the output is deterministic (no dropout, running statistics).
    let x = Tensor::randn(&[2, 1, 4, 4], DType::F32, device).unwrap();
    let a = values(&model.forward(&x).unwrap());
    let b = values(&model.forward(&x).unwrap());
    assert_eq!(a, b);
    let tracked = model.named_buffers()[2].1.item_f64().unwrap();
    assert_eq!(tracked, 0.0, "eval must not update BatchNorm buffers");
    model.train();
    assert!(model.is_training());
    model.forward(&x).unwrap();
    assert_eq!(model.named_buffers()[2].1.item_f64().unwrap(), 1.0);
}

fn dropout_behaviour(device: &Device) {
    anygrad_core::manual_seed(3);
    let dropout = Dropout::new(0.25).unwrap();
    let x = Tensor::ones(&[4000], DType::F32, device).unwrap();
    let y = values(&dropout.forward(&x).unwrap());
    let zeros = y.iter().filter(|&&v| v == 0.0).count() as f64 / y.len() as f64;
    assert!((zeros - 0.25).abs() < 0.03, "dropped fraction {zeros}");
    assert!(
        y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6),
        "kept values are scaled by 1/(1-p)"
    );
    dropout.eval();
    assert_eq!(values(&dropout.forward(&x).unwrap()), vec![1.0; 4000]);
    assert!(Dropout::new(1.5).is_err());
    // Gradient flows only through kept elements, scaled.
    dropout.train();
    let x = Tensor::ones(&[100], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let y = dropout.forward(&x).unwrap();
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), values(&y));
}

fn batchnorm_running_stats_and_momentum(device: &Device) {
    let bn = BatchNorm1d::new_1d(2, device).unwrap().momentum(None);
    let x1 = anygrad_testing::tensor(&[1.0, 10.0, 3.0, 20.0], &[2, 2], device);
    let x2 = anygrad_testing::tensor(&[5.0, 0.0, 7.0, 0.0], &[2, 2], device);
    bn.forward(&x1).unwrap();
    bn.forward(&x2).unwrap();
    // Cumulative average: mean of the batch means and of the unbiased batch variances.
    assert_close(
        &values(&bn.running_mean.tensor()),
        &[4.0, 7.5],
        1e-5,
        1e-5,
        "running mean",
    );
    assert_close(
        &values(&bn.running_var.tensor()),
        &[2.0, 25.0],
        1e-5,
        1e-5,
        "running var",
    );
    assert_eq!(bn.num_batches_tracked.tensor().item_f64().unwrap(), 2.0);
    // Momentum 0.1 (the default; updated by the coefficients' kernel):
    // running = 0.9·running + 0.1·stat, the variance's stat unbiased.
    let bn = BatchNorm1d::new_1d(2, device).unwrap();
    bn.forward(&x1).unwrap();
    bn.forward(&x2).unwrap();
    assert_close(
        &values(&bn.running_mean.tensor()),
        &[0.78, 1.35],
        1e-5,
        1e-5,
        "running mean, momentum 0.1",
    );
    assert_close(
        &values(&bn.running_var.tensor()),
        &[1.19, 5.31],
        1e-5,
        1e-5,
        "running var, momentum 0.1",
    );
    assert_eq!(bn.num_batches_tracked.tensor().item_f64().unwrap(), 2.0);
    // One value per channel cannot be normalized in training.
    assert!(bn
        .forward(&anygrad_testing::tensor(&[1.0, 2.0], &[1, 2], device))
        .is_err());
    assert!(bn
        .forward(&anygrad_testing::tensor(&[1.0, 2.0, 3.0], &[1, 3], device))
        .is_err());
}

/// `batch_norm` (the function) computes what the module does with the same tensors: the
/// output and the running statistics in training, the output in eval (also under `no_grad`,
/// where the fold is kept, and after the statistics change in place).
fn functional_batch_norm_matches_the_module(device: &Device) {
    let bn = BatchNorm2d::new_2d(3, device).unwrap();
    let data: Vec<f32> = (0..36).map(|i| ((i * 7) % 11) as f32 * 0.3 - 1.2).collect();
    let x = anygrad_testing::tensor(&data, &[2, 3, 3, 2], device);
    let (mean, var) = (
        Tensor::zeros(&[3], DType::F32, device).unwrap(),
        Tensor::ones(&[3], DType::F32, device).unwrap(),
    );
    let weight = anygrad_testing::tensor(&[1.5, -0.5, 2.0], &[3], device);
    let bias = anygrad_testing::tensor(&[0.1, 0.2, -0.3], &[3], device);
    bn.weight
        .as_ref()
        .unwrap()
        .tensor()
        .assign(&weight)
        .unwrap();
    bn.bias.as_ref().unwrap().tensor().assign(&bias).unwrap();
    let mut inputs = BatchNormInputs {
        running_mean: Some(&mean),
        running_var: Some(&var),
        weight: Some(&weight),
        bias: Some(&bias),
        training: true,
        momentum: 0.1,
        eps: 1e-5,
        fold_cache: None,
    };
    let trained = batch_norm(&x, &inputs).unwrap();
    assert_close(
        &values(&trained),
        &values(&bn.forward(&x).unwrap()),
        1e-5,
        1e-5,
        "training output",
    );
    for (mine, module, what) in [
        (&mean, bn.running_mean.tensor(), "running mean"),
        (&var, bn.running_var.tensor(), "running var"),
    ] {
        assert_close(&values(mine), &values(&module), 1e-6, 1e-6, what);
    }
    bn.set_training(false);
    inputs.training = false;
    let cache = FoldCache::new();
    inputs.fold_cache = Some(&cache);
    for round in 0..2 {
        let _guard = anygrad_core::no_grad();
        assert_close(
            &values(&batch_norm(&x, &inputs).unwrap()),
            &values(&bn.forward(&x).unwrap()),
            1e-5,
            1e-5,
            &format!("eval output, round {round}"),
        );
        // Both sides' statistics move the same way in place; the kept folds must follow.
        for stats in [&mean, &bn.running_mean.tensor()] {
            stats.assign(&stats.add_scalar(0.5).unwrap()).unwrap();
        }
    }
    let bad = Tensor::zeros(&[4], DType::F32, device).unwrap();
    let error = batch_norm(
        &x,
        &BatchNormInputs {
            running_mean: Some(&bad),
            ..inputs
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("batch_norm") && error.contains("running_mean"),
        "{error}"
    );
    let error = batch_norm(
        &x,
        &BatchNormInputs {
            running_mean: None,
            running_var: None,
            ..inputs
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("batch_norm") && error.contains("eval"),
        "{error}"
    );
}

fn to_device_moves_in_place(device: &Device) {
    let model = Linear::new(3, 2, true, device).unwrap();
    let handle = model.weight.clone();
    let before = values(&model.weight.tensor());
    model.to_device(&Device::Cpu).unwrap();
    assert!(model.weight.tensor().device().is_cpu());
    assert!(
        handle.tensor().device().is_cpu(),
        "clones of a Parameter share the slot"
    );
    assert!(model.weight.tensor().requires_grad());
    assert_eq!(values(&model.weight.tensor()), before);
    model.to_device(device).unwrap();
    assert_eq!(model.weight.tensor().device(), device);
    assert_eq!(values(&model.weight.tensor()), before);
}

fn default_init_bounds(device: &Device) {
    anygrad_core::manual_seed(11);
    let linear = Linear::new(100, 50, true, device).unwrap();
    let bound = 1.0 / 10.0;
    for (name, t) in linear.named_parameters() {
        let v = values(&t);
        assert!(
            v.iter().all(|x| x.abs() <= bound + 1e-6),
            "{name} within 1/sqrt(fan_in)"
        );
        assert!(
            v.iter().any(|x| x.abs() > bound * 0.8),
            "{name} spans the range"
        );
    }
    let conv = Conv2d::square(8, 16, 3, Conv2dOptions::default(), device).unwrap();
    let bound = 1.0 / (72f32).sqrt();
    assert!(values(&conv.weight.tensor())
        .iter()
        .all(|x| x.abs() <= bound + 1e-6));
    let w = Tensor::zeros(&[256, 128, 3, 3], DType::F32, device).unwrap();
    init::kaiming_normal_(&w, FanMode::FanOut, Nonlinearity::Relu).unwrap();
    let v = values(&w);
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    let std = (v.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / v.len() as f32).sqrt();
    let expected = (2.0f32 / (256.0 * 9.0)).sqrt();
    assert!(
        (std - expected).abs() / expected < 0.02,
        "kaiming std {std} vs {expected}"
    );
    init::zeros_(&w).unwrap();
    assert!(values(&w).iter().all(|&x| x == 0.0));
    let emb = Embedding::new(50, 40, device).unwrap();
    let v = values(&emb.weight.tensor());
    let var = v.iter().map(|x| x * x).sum::<f32>() / v.len() as f32;
    assert!(
        (var - 1.0).abs() < 0.1,
        "embedding ~ N(0, 1): variance {var}"
    );
}

fn bad_inputs_are_errors(device: &Device) {
    let linear = Linear::new(3, 2, true, device).unwrap();
    assert!(linear
        .forward(&Tensor::zeros(&[4, 5], DType::F32, device).unwrap())
        .is_err());
    let bn = BatchNorm2d::new_2d(3, device).unwrap();
    assert!(bn
        .forward(&Tensor::zeros(&[2, 4, 3, 3], DType::F32, device).unwrap())
        .is_err());
    let ln = LayerNorm::new(&[4], device).unwrap();
    assert!(ln
        .forward(&Tensor::zeros(&[2, 5], DType::F32, device).unwrap())
        .is_err());
    let emb = Embedding::new(5, 2, device).unwrap();
    assert!(emb
        .forward(&Tensor::zeros(&[3], DType::F32, device).unwrap())
        .is_err());
    assert!(Conv2d::square(3, 4, 3, Conv2dOptions::default().groups(2), device).is_err());
    let logits = Tensor::zeros(&[4, 3], DType::F32, device).unwrap();
    assert!(cross_entropy(&logits, &Tensor::zeros(&[5], DType::I32, device).unwrap()).is_err());
    assert!(cross_entropy(&logits, &Tensor::zeros(&[4], DType::Bool, device).unwrap()).is_err());
    assert!(AdaptiveAvgPool2d::new((0, 1))
        .forward(&Tensor::zeros(&[1, 1, 2, 2], DType::F32, device).unwrap())
        .is_err());
}

fn embedding_and_extra_activations(device: &Device) {
    let weight = anygrad_testing::tensor(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2], device);
    let emb = Embedding::from_tensor(weight);
    let ids = Tensor::from_vec(vec![2i32, 0, 2], &[3], device).unwrap();
    let out = emb.forward(&ids).unwrap();
    assert_eq!(values(&out), [4.0, 5.0, 0.0, 1.0, 4.0, 5.0]);
    out.sum_all().unwrap().backward().unwrap();
    assert_eq!(
        values(&emb.weight.grad().unwrap()),
        [1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    );
    let x = anygrad_testing::tensor(&[-2.0, 0.5], &[2], device);
    assert_close(
        &values(&LeakyReLU::default().forward(&x).unwrap()),
        &[-0.02, 0.5],
        1e-6,
        0.0,
        "leaky relu",
    );
    let approx = GELU {
        tanh_approximation: true,
    }
    .forward(&x)
    .unwrap();
    assert_close(
        &values(&approx),
        &[-0.0454023, 0.345714],
        1e-5,
        1e-5,
        "gelu tanh",
    );
    assert_eq!(values(&Identity.forward(&x).unwrap()), values(&x));
    let ls = LogSoftmax { dim: 0 }.forward(&x).unwrap();
    let sum: f32 = values(&ls).iter().map(|v| v.exp()).sum();
    assert!((sum - 1.0).abs() < 1e-6);
}

anygrad_testing::device_tests!(
    names_and_counts,
    train_eval_propagates,
    dropout_behaviour,
    batchnorm_running_stats_and_momentum,
    functional_batch_norm_matches_the_module,
    to_device_moves_in_place,
    default_init_bounds,
    bad_inputs_are_errors,
    embedding_and_extra_activations,
);
