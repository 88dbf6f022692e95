//! Golden tests of the losses added for issue 15's second part against PyTorch: `KlDivLoss`
//! (every reduction, `log_target`), class-weighted cross-entropy (with `ignore_index`, label
//! smoothing, spatial and probability targets) and `BceLoss` at predictions of exactly 0 and
//! 1, whose gradient must be PyTorch's finite one. Values and input gradients of
//! `(out * upstream).sum()` come from `tests/golden/losses.json`
//! (`scripts/golden/generate_losses.py`).

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::assert_close;
use serde_json::Value;

const TOL: f32 = 1e-4;

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

/// A tensor from a golden entry (I32 for integer data, F32 otherwise).
fn load(v: &Value, device: &Device) -> Tensor {
    let data = v["data"].as_array().expect("data");
    if data.first().is_some_and(|x| x.is_i64()) {
        let ints: Vec<i32> = data
            .iter()
            .map(|x| x.as_i64().expect("int") as i32)
            .collect();
        Tensor::from_vec(ints, &shape_of(v), device).expect("tensor")
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
    let got = actual.to_vec_f32().expect("readback");
    assert!(
        got.iter().all(|v| v.is_finite()),
        "{what}: not finite: {got:?}"
    );
    assert_close(&got, &floats(expected), TOL, TOL, what);
}

fn reduction(options: &Value) -> Reduction {
    match options["reduction"].as_str().expect("reduction") {
        "mean" => Reduction::Mean,
        "sum" => Reduction::Sum,
        _ => Reduction::None,
    }
}

fn kl_reduction(options: &Value) -> KlReduction {
    match options["reduction"].as_str().expect("reduction") {
        "mean" => KlReduction::Mean,
        "batchmean" => KlReduction::BatchMean,
        "sum" => KlReduction::Sum,
        _ => KlReduction::None,
    }
}

fn golden_losses(device: &Device) {
    let document: Value =
        serde_json::from_str(include_str!("golden/losses.json")).expect("golden json");
    for case in document["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let options = &case["options"];
        let input = load(&case["input"], device).requires_grad_(true);
        let target = load(&case["target"], device);
        let output = match options["type"].as_str().expect("type") {
            "kl_div" => KlDivLoss::new()
                .reduction(kl_reduction(options))
                .log_target(options["log_target"].as_bool().expect("log_target"))
                .forward(&input, &target),
            "cross_entropy" => {
                let mut loss = match case.get("weight") {
                    Some(weight) => CrossEntropyLoss::with_weight(load(weight, device)),
                    None => CrossEntropyLoss::new(),
                }
                .reduction(reduction(options));
                if let Some(smoothing) = options["label_smoothing"].as_f64() {
                    loss = loss.label_smoothing(smoothing);
                }
                if let Some(index) = options["ignore_index"].as_i64() {
                    loss = loss.ignore_index(index);
                }
                loss.forward(&input, &target)
            }
            "bce" => BceLoss::new()
                .reduction(reduction(options))
                .forward(&input, &target),
            other => panic!("unknown loss {other}"),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&output, &case["output"], &format!("{name}: output"));
        let upstream = load(&case["upstream"], device);
        output
            .mul(&upstream)
            .and_then(|t| t.sum_all())
            .and_then(|t| t.backward())
            .unwrap_or_else(|e| panic!("{name}: backward: {e}"));
        let grad = input
            .grad()
            .unwrap_or_else(|| panic!("{name}: no gradient"));
        check(
            &grad,
            &case["grad_input"],
            &format!("{name}: input gradient"),
        );
    }
}

fn loss_errors(device: &Device) {
    let logits = Tensor::zeros(&[2, 3], anygrad_core::DType::F32, device).unwrap();
    let labels = Tensor::from_vec(vec![0i32, 2], &[2], device).unwrap();
    let short = Tensor::ones(&[2], anygrad_core::DType::F32, device).unwrap();
    let message = CrossEntropyLoss::with_weight(short)
        .forward(&logits, &labels)
        .unwrap_err()
        .to_string();
    assert!(message.contains("cross_entropy"), "{message}");
    let other = Tensor::zeros(&[3, 2], anygrad_core::DType::F32, device).unwrap();
    assert!(KlDivLoss::new().forward(&logits, &other).is_err());
}

anygrad_testing::device_tests!(golden_losses, loss_errors);
