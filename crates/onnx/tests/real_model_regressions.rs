//! Regressions found by running real models against onnxruntime
//! (`scripts/onnx/compare_with_onnxruntime.py`, docs/ONNX.md "Real models"): each test
//! rebuilds, in a few nodes, the part of the model that went wrong, on the CPU and the GPU.

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::DataType;
use anygrad_onnx::{OnnxModel, Value};
use anygrad_testing::values;
use support::*;

fn load(model: &anygrad_onnx::proto::ModelProto, device: &Device) -> OnnxModel {
    OnnxModel::from_bytes(&bytes(model), device).expect("model loads")
}

fn tensor(values: &[f32], shape: &[usize], device: &Device) -> Value {
    Value::Tensor(Tensor::from_slice(values, shape, device).expect("tensor"))
}

fn only_tensor(outputs: &[(String, Value)]) -> Tensor {
    match &outputs[0].1 {
        Value::Tensor(t) => t.clone(),
        Value::Int64(v) => panic!("expected a tensor, got int64 {v:?}"),
    }
}

/// PaddleOCR's classifier declares its input `[-1, 3, ?, ?]`: Paddle2ONNX writes `?` for
/// every free dim, which is no name binding the height to the width (a 48x192 crop was
/// refused). A real symbolic name still binds, and the message says which dim bound it.
fn question_mark_dims_are_free(device: &Device) {
    let m = model(
        vec![node("relu", "Relu", &["x"], &["y"], vec![])],
        vec![],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::N(-1), D::N(3), D::S("?"), D::S("?")],
        )],
        vec![value_info(
            "y",
            DataType::Float,
            &[D::N(-1), D::N(2), D::S("?"), D::S("?")],
        )],
        12,
    );
    let model = load(&m, device);
    let input: Vec<f32> = (0..30).map(|i| i as f32 - 15.0).collect();
    let out = model
        .run(&[("x", tensor(&input, &[1, 3, 2, 5], device))])
        .expect("a 2x5 input runs under [-1, 3, ?, ?]");
    let expected: Vec<f32> = input.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(values(&only_tensor(&out)), expected);

    let bound = model_with_input(&[D::S("n"), D::N(3), D::S("n")]);
    let error = load(&bound, device)
        .run(&[("x", tensor(&[0.0; 6], &[2, 3, 1], device))])
        .expect_err("a named dim still binds");
    let message = error.to_string();
    assert!(
        message.contains("dim 2 (`n`) is 1, but dim 0 of this input set `n` to 2"),
        "{message}"
    );
}

/// A Relu model whose input declares `dims`.
fn model_with_input(dims: &[D]) -> anygrad_onnx::proto::ModelProto {
    model(
        vec![node("relu", "Relu", &["x"], &["y"], vec![])],
        vec![],
        vec![value_info("x", DataType::Float, dims)],
        vec![],
        13,
    )
}

/// PaddleOCR's recognizer ends in a Softmax over 6625 classes. The CPU's one-pass row
/// softmax added the exponentials up in f32, dropping every term below half a unit in the
/// last place of the running sum. Here one logit is 0 and 6624 are -17.5 (e^-17.5 =
/// 2.5e-8, below 2^-24): the sum is 1.000166, so the largest probability is 0.999834, where
/// the dropped terms gave 1.0 (a 1.7e-4 error). Opset 12 (flattened axes, as the
/// recognizer's) and 13 (one axis).
fn softmax_over_many_classes_keeps_the_small_terms(device: &Device) {
    let classes = 6625;
    let mut logits = vec![-17.5f32; 2 * classes];
    logits[0] = 0.0;
    logits[classes + 3] = 2.0;
    logits[classes + 4] = 1.0;
    let expected = |row: &[f32]| -> Vec<f64> {
        let top = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let exponentials: Vec<f64> = row.iter().map(|&v| (v as f64 - top).exp()).collect();
        let total: f64 = exponentials.iter().sum();
        exponentials.iter().map(|e| e / total).collect()
    };
    for (opset, axis) in [(12, 2), (13, -1)] {
        let m = model(
            vec![node(
                "softmax",
                "Softmax",
                &["x"],
                &["y"],
                vec![int_attr("axis", axis)],
            )],
            vec![],
            vec![value_info(
                "x",
                DataType::Float,
                &[D::N(1), D::N(2), D::N(classes as i64)],
            )],
            vec![value_info(
                "y",
                DataType::Float,
                &[D::N(1), D::N(2), D::N(classes as i64)],
            )],
            opset,
        );
        let out = load(&m, device)
            .run(&[("x", tensor(&logits, &[1, 2, classes], device))])
            .expect("runs");
        let got = values(&only_tensor(&out));
        for row in 0..2 {
            let span = row * classes..(row + 1) * classes;
            let wanted = expected(&logits[span.clone()]);
            let largest = wanted.iter().copied().fold(0.0, f64::max);
            let worst = got[span]
                .iter()
                .zip(&wanted)
                .map(|(&g, &w)| (g as f64 - w).abs())
                .fold(0.0, f64::max);
            assert!(
                worst / largest < 2e-6,
                "opset {opset}, row {row}: largest difference {worst:e} relative to {largest}"
            );
        }
    }
}

anygrad_testing::device_tests!(
    question_mark_dims_are_free,
    softmax_over_many_classes_keeps_the_small_terms,
);
