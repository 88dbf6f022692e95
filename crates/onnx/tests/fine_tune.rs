//! Fine-tuning through an imported model: gradients reach the initializers, one SGD step
//! lowers the loss, and the changed weights are written to safetensors.

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::DataType;
use anygrad_onnx::{OnnxModel, Value};
use support::*;

fn loss_of(model: &OnnxModel, x: &Tensor, target: &Tensor) -> Tensor {
    let out = model.run(&[("x", Value::Tensor(x.clone()))]).expect("runs");
    let Value::Tensor(y) = &out[0].1 else {
        panic!("float output expected")
    };
    y.sub(target)
        .and_then(|d| d.square())
        .and_then(|s| s.mean_all())
        .expect("loss")
}

fn gradient_step_lowers_the_loss(device: &Device) {
    let m = model(
        vec![
            node(
                "gemm",
                "Gemm",
                &["x", "w", "b"],
                &["h"],
                vec![int_attr("transB", 1)],
            ),
            node("act", "Tanh", &["h"], &["y"], vec![]),
        ],
        vec![
            float_tensor("w", &[2, 3], &[0.1, -0.2, 0.3, 0.0, 0.5, -0.1]),
            float_tensor("b", &[2], &[0.0, 0.1]),
        ],
        vec![value_info("x", DataType::Float, &[D::S("batch"), D::N(3)])],
        vec![value_info("y", DataType::Float, &[D::S("batch"), D::N(2)])],
        13,
    );
    let model = OnnxModel::from_bytes(&bytes(&m), device).expect("loads");
    let parameters = model.parameters();
    let names: Vec<&str> = parameters.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["w", "b"]);
    let x = Tensor::from_slice(&[1.0f32, 2.0, -1.0, 0.5, 0.0, 1.0], &[2, 3], device).expect("x");
    let target = Tensor::from_slice(&[0.5f32, -0.5, 0.0, 0.25], &[2, 2], device).expect("target");
    let before = loss_of(&model, &x, &target);
    before.backward().expect("backward");
    let lr = 0.5;
    for (name, p) in &parameters {
        let grad = p
            .grad()
            .unwrap_or_else(|| panic!("no gradient reached `{name}`"));
        let g = grad.to_vec_f32().expect("grad");
        assert!(g.iter().any(|v| v.abs() > 1e-6), "zero gradient for {name}");
        let _guard = anygrad_core::no_grad();
        let stepped = p.sub(&grad.mul_scalar(lr).expect("scaled")).expect("step");
        p.assign(&stepped).expect("assign");
        p.zero_grad();
    }
    let after = loss_of(&model, &x, &target);
    let (b, a) = (
        before.item_f64().expect("before"),
        after.item_f64().expect("after"),
    );
    assert!(a < b, "loss went from {b} to {a}");

    let path = std::env::temp_dir().join(format!(
        "anygrad-onnx-weights-{}-{}.safetensors",
        std::process::id(),
        device.is_gpu()
    ));
    model.save_safetensors(&path).expect("saved");
    let written = std::fs::read(&path).expect("read back");
    let _ = std::fs::remove_file(&path);
    let file = safetensors::SafeTensors::deserialize(&written).expect("valid safetensors");
    let w = file.tensor("w").expect("w saved");
    assert_eq!(w.shape(), &[2, 3]);
    let first = f32::from_le_bytes(w.data()[..4].try_into().expect("4 bytes"));
    assert!((first - 0.1).abs() > 1e-6, "the saved w is the stepped one");
}

anygrad_testing::device_tests!(gradient_step_lowers_the_loss);
