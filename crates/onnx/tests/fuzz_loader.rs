//! Seeded mutations of a small valid model (bit flips, truncations, extreme length fields):
//! loading, and running what loads, gives `Ok` or a clean error, never a panic.

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::DataType;
use anygrad_onnx::{OnnxModel, Value};
use support::*;

fn valid_model() -> Vec<u8> {
    let weights: Vec<f32> = (0..18).map(|i| i as f32 / 10.0 - 0.8).collect();
    bytes(&model(
        vec![
            node(
                "conv",
                "Conv",
                &["x", "w"],
                &["c"],
                vec![
                    ints_attr("pads", &[1, 1, 1, 1]),
                    ints_attr("strides", &[2, 2]),
                ],
            ),
            node("act", "Relu", &["c"], &["r"], vec![]),
            node("flat", "Reshape", &["r", "shape"], &["f"], vec![]),
            node(
                "slice",
                "Slice",
                &["f", "starts", "ends", "axes"],
                &["s"],
                vec![],
            ),
            node(
                "soft",
                "Softmax",
                &["s"],
                &["y"],
                vec![int_attr("axis", -1)],
            ),
        ],
        vec![
            float_tensor("w", &[2, 1, 3, 3], &weights),
            int64_tensor("shape", &[2], &[0, -1]),
            int64_tensor("starts", &[1], &[1]),
            int64_tensor("ends", &[1], &[i64::MAX]),
            int64_tensor("axes", &[1], &[1]),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::S("n"), D::N(1), D::N(4), D::N(4)],
        )],
        vec![value_info("y", DataType::Float, &[D::S("n"), D::S("k")])],
        13,
    ))
}

#[test]
fn mutated_models_load_and_run_without_panicking() {
    let valid = valid_model();
    let x: Vec<f32> = (0..16).map(|i| i as f32 / 8.0).collect();
    let input = Value::Tensor(Tensor::from_slice(&x, &[1, 1, 4, 4], &Device::Cpu).expect("x"));
    // The valid model runs.
    let model = OnnxModel::from_bytes(&valid, &Device::Cpu).expect("valid model loads");
    let out = model
        .run(&[("x", input.clone())])
        .expect("valid model runs");
    assert_eq!(out[0].1.shape(), &[1, 7]);
    anygrad_testing::fuzz::fuzz("onnx model", &valid, 0x0bb5, 400, |bytes| {
        if let Ok(model) = OnnxModel::from_bytes(bytes, &Device::Cpu) {
            let _ = model.run(&[("x", input.clone())]);
        }
    });
}
