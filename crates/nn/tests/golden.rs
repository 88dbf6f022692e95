//! Golden tests against PyTorch: layers (outputs, input and parameter gradients, BatchNorm's
//! updated buffers), losses, optimizer trajectories and LR schedules, from
//! `tests/golden/nn_layers.json` (written by `scripts/golden/generate_nn.py`).

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::assert_close;
use serde_json::Value;

const TOL: f32 = 1e-4;

fn golden() -> Value {
    serde_json::from_str(include_str!("golden/nn_layers.json")).expect("golden json")
}

fn shape_of(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect()
}

fn floats(v: &Value) -> Vec<f32> {
    v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect()
}

fn is_int(v: &Value) -> bool {
    v["data"]
        .as_array()
        .expect("data")
        .first()
        .is_some_and(|x| x.is_i64())
}

/// A tensor from a golden entry (I32 for integer data, F32 otherwise).
fn load(v: &Value, device: &Device) -> Tensor {
    if is_int(v) {
        let data: Vec<i32> = v["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|x| x.as_i64().expect("int") as i32)
            .collect();
        Tensor::from_vec(data, &shape_of(v), device).expect("tensor")
    } else {
        Tensor::from_vec(floats(v), &shape_of(v), device).expect("tensor")
    }
}

fn check(actual: &Tensor, expected: &Value, what: &str) {
    assert_eq!(
        actual.shape(),
        shape_of(expected).as_slice(),
        "{what}: shape"
    );
    assert_close(
        &actual.to_vec_f32().expect("readback"),
        &floats(expected),
        TOL,
        TOL,
        what,
    );
}

fn pair(v: &Value) -> (usize, usize) {
    (
        v[0].as_u64().expect("int") as usize,
        v[1].as_u64().expect("int") as usize,
    )
}

fn build_layer(config: &Value, device: &Device) -> Box<dyn Module> {
    let int = |key: &str| config[key].as_u64().expect(key) as usize;
    match config["type"].as_str().expect("type") {
        "linear" => Box::new(
            Linear::new(
                int("in"),
                int("out"),
                config["bias"].as_bool().expect("bias"),
                device,
            )
            .expect("linear"),
        ),
        "conv2d" => {
            let options = Conv2dOptions {
                stride: pair(&config["stride"]),
                padding: pair(&config["padding"]),
                dilation: pair(&config["dilation"]),
                groups: int("groups"),
                bias: config["bias"].as_bool().expect("bias"),
            };
            Box::new(
                Conv2d::new(
                    int("in"),
                    int("out"),
                    pair(&config["kernel"]),
                    options,
                    device,
                )
                .expect("conv"),
            )
        }
        "batchnorm2d" => Box::new(BatchNorm2d::new_2d(int("features"), device).expect("bn")),
        "batchnorm1d" => Box::new(BatchNorm1d::new_1d(int("features"), device).expect("bn")),
        "layernorm" => {
            let shape: Vec<usize> = config["shape"]
                .as_array()
                .expect("shape")
                .iter()
                .map(|d| d.as_u64().expect("dim") as usize)
                .collect();
            Box::new(LayerNorm::new(&shape, device).expect("ln"))
        }
        "embedding" => Box::new(Embedding::new(int("num"), int("dim"), device).expect("embedding")),
        "maxpool2d" => Box::new(MaxPool2d {
            kernel: pair(&config["kernel"]),
            stride: pair(&config["stride"]),
            padding: pair(&config["padding"]),
        }),
        "avgpool2d" => Box::new(AvgPool2d {
            kernel: pair(&config["kernel"]),
            stride: pair(&config["stride"]),
            padding: pair(&config["padding"]),
        }),
        "adaptive_avgpool2d" => Box::new(AdaptiveAvgPool2d::new(pair(&config["output"]))),
        "relu" => Box::new(ReLU),
        "gelu" => Box::new(GELU::default()),
        "silu" => Box::new(SiLU),
        "sigmoid" => Box::new(Sigmoid),
        "tanh" => Box::new(Tanh),
        "softmax" => Box::new(Softmax {
            dim: config["dim"].as_i64().expect("dim") as isize,
        }),
        "flatten" => Box::new(Flatten::default()),
        other => panic!("unknown layer type {other}"),
    }
}

fn golden_layers(device: &Device) {
    let g = golden();
    let cases = g["layers"].as_array().expect("layers");
    assert!(cases.len() >= 30, "expected the full layer list");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let layer = build_layer(&case["config"], device);
        let slots = layer.named_slots();
        // Every PyTorch parameter and buffer exists under the same name, and nothing else.
        let mut expected_names: Vec<String> = case["params"]
            .as_object()
            .expect("params")
            .keys()
            .cloned()
            .collect();
        expected_names.extend(
            case["buffers"]
                .as_object()
                .expect("buffers")
                .keys()
                .cloned(),
        );
        let mut names: Vec<String> = slots.iter().map(|(n, _, _)| n.clone()).collect();
        expected_names.sort();
        names.sort();
        assert_eq!(names, expected_names, "{name}: parameter and buffer names");
        for (slot_name, slot, _) in &slots {
            let source = case["params"]
                .get(slot_name)
                .or_else(|| case["buffers"].get(slot_name))
                .expect("value");
            let value = load(source, device)
                .to_dtype(slot.tensor().dtype())
                .expect("cast");
            slot.assign(&value.reshape(slot.shape()).expect("reshape"))
                .expect("assign");
        }
        layer.set_training(case["train"].as_bool().expect("train"));
        let input = load(&case["input"], device);
        let input = if input.dtype().is_float() {
            input.requires_grad_(true)
        } else {
            input
        };
        let output = layer
            .forward(&input)
            .unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
        check(&output, &case["output"], &format!("{name}: output"));
        let upstream = load(&case["upstream"], device);
        output
            .mul(&upstream)
            .expect("mul")
            .sum_all()
            .expect("sum")
            .backward()
            .expect("backward");
        if let Some(expected) = case.get("grad_input") {
            check(
                &input.grad().expect("input grad"),
                expected,
                &format!("{name}: input grad"),
            );
        }
        for (param_name, expected) in case["grad_params"].as_object().expect("grad_params") {
            let (_, slot, _) = slots
                .iter()
                .find(|(n, _, _)| n == param_name)
                .expect("param");
            check(
                &slot.grad().expect("param grad"),
                expected,
                &format!("{name}: grad of {param_name}"),
            );
        }
        for (buffer_name, expected) in case["buffers_after"].as_object().expect("buffers_after") {
            let (_, slot, _) = slots
                .iter()
                .find(|(n, _, _)| n == buffer_name)
                .expect("buffer");
            check(
                &slot.tensor(),
                expected,
                &format!("{name}: buffer {buffer_name} after forward"),
            );
        }
    }
}

fn reduction(options: &Value) -> Reduction {
    match options["reduction"].as_str().expect("reduction") {
        "mean" => Reduction::Mean,
        "sum" => Reduction::Sum,
        _ => Reduction::None,
    }
}

fn golden_losses(device: &Device) {
    let g = golden();
    for case in g["losses"].as_array().expect("losses") {
        let name = case["name"].as_str().expect("name");
        let options = &case["options"];
        let input = load(&case["input"], device).requires_grad_(true);
        let target = load(&case["target"], device);
        let output = match options["type"].as_str().expect("type") {
            "cross_entropy" => {
                let mut loss = CrossEntropyLoss::new().reduction(reduction(options));
                if let Some(smoothing) = options["label_smoothing"].as_f64() {
                    loss = loss.label_smoothing(smoothing);
                }
                if let Some(index) = options["ignore_index"].as_i64() {
                    loss = loss.ignore_index(index);
                }
                loss.forward(&input, &target)
            }
            "nll" => NllLoss::new()
                .reduction(reduction(options))
                .forward(&input, &target),
            "mse" => MseLoss::new()
                .reduction(reduction(options))
                .forward(&input, &target),
            "bce_with_logits" => {
                let mut loss = BceWithLogitsLoss::new().reduction(reduction(options));
                if let Some(weight) = case.get("pos_weight") {
                    loss = loss.pos_weight(load(weight, device));
                }
                loss.forward(&input, &target)
            }
            other => panic!("unknown loss {other}"),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&output, &case["output"], &format!("{name}: output"));
        let upstream = load(&case["upstream"], device);
        output
            .mul(&upstream)
            .expect("mul")
            .sum_all()
            .expect("sum")
            .backward()
            .expect("backward");
        check(
            &input.grad().expect("grad"),
            &case["grad_input"],
            &format!("{name}: input grad"),
        );
    }
}

fn build_optimizer(options: &Value, parameter: Parameter) -> Box<dyn Optimizer> {
    let f = |key: &str, default: f64| options[key].as_f64().unwrap_or(default);
    let params = vec![("p".to_string(), parameter)];
    match options["type"].as_str().expect("type") {
        "sgd" => {
            let config = SgdConfig::new(f("lr", 0.0))
                .momentum(f("momentum", 0.0))
                .dampening(f("dampening", 0.0))
                .weight_decay(f("weight_decay", 0.0))
                .nesterov(options["nesterov"].as_bool().unwrap_or(false));
            Box::new(Sgd::new(params, config).expect("sgd"))
        }
        kind => {
            let config = AdamConfig::new(f("lr", 1e-3))
                .betas(f("beta1", 0.9), f("beta2", 0.999))
                .eps(f("eps", 1e-8))
                .weight_decay(f("weight_decay", if kind == "adamw" { 0.01 } else { 0.0 }))
                .amsgrad(options["amsgrad"].as_bool().unwrap_or(false));
            if kind == "adamw" {
                Box::new(Adam::adamw(params, config).expect("adamw"))
            } else {
                Box::new(Adam::new(params, config).expect("adam"))
            }
        }
    }
}

fn golden_optimizers(device: &Device) {
    let g = golden();
    for case in g["optimizers"].as_array().expect("optimizers") {
        let name = case["name"].as_str().expect("name");
        let parameter = Parameter::new(load(&case["init"], device));
        let a = load(&case["a"], device);
        let center = load(&case["center"], device);
        // One optimizer for every step: its state must carry over.
        let mut optimizer = build_optimizer(&case["options"], parameter.clone());
        for (step, expected) in case["steps"].as_array().expect("steps").iter().enumerate() {
            optimizer.zero_grad();
            let p = parameter.tensor();
            let loss = p
                .sub(&center)
                .unwrap()
                .square()
                .unwrap()
                .mul(&a)
                .unwrap()
                .mul_scalar(0.5)
                .unwrap()
                .sum_all()
                .unwrap();
            loss.backward().expect("backward");
            optimizer.step().expect("step");
            check(
                &parameter.tensor(),
                expected,
                &format!("{name}: after step {}", step + 1),
            );
        }
    }
}

fn golden_schedulers(device: &Device) {
    let g = golden();
    for case in g["schedulers"].as_array().expect("schedulers") {
        let name = case["name"].as_str().expect("name");
        let options = &case["options"];
        let parameter =
            Parameter::new(Tensor::zeros(&[1], anygrad_core::DType::F32, device).expect("zeros"));
        let mut optimizer = Sgd::new(
            vec![("p".into(), parameter)],
            SgdConfig::new(case["base_lr"].as_f64().expect("lr")),
        )
        .expect("sgd");
        let mut scheduler: Box<dyn LrScheduler> = match options["type"].as_str().expect("type") {
            "step" => Box::new(StepLR::new(
                &optimizer,
                options["step_size"].as_u64().expect("step") as usize,
                options["gamma"].as_f64().expect("gamma"),
            )),
            _ => Box::new(CosineAnnealingLR::new(
                &optimizer,
                options["t_max"].as_u64().expect("t") as usize,
                options["eta_min"].as_f64().expect("eta"),
            )),
        };
        for (epoch, expected) in case["lrs"].as_array().expect("lrs").iter().enumerate() {
            let expected = expected.as_f64().expect("lr");
            let actual = optimizer.learning_rate();
            assert!(
                (actual - expected).abs() < 1e-9,
                "{name}: epoch {epoch}: lr {actual}, expected {expected}"
            );
            scheduler.step(&mut optimizer).expect("step");
        }
    }
}

anygrad_testing::device_tests!(
    golden_layers,
    golden_losses,
    golden_optimizers,
    golden_schedulers
);
