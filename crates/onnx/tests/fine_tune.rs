//! Fine-tuning through an imported model: gradients reach the initializers, one SGD step
//! lowers the loss, the changed weights are written to safetensors, and a fresh copy of the
//! model loads them back (`load_safetensors`) to give the same outputs.

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

/// `y = tanh(x @ w^T + b)` with `w` [2, 3] and `b` [2], batch symbolic: the file's bytes.
fn gemm_tanh_model() -> Vec<u8> {
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
    bytes(&m)
}

/// The model's output for `x` as host values.
fn output_of(model: &OnnxModel, x: &Tensor) -> Vec<f32> {
    let _guard = anygrad_core::no_grad();
    let out = model.run(&[("x", Value::Tensor(x.clone()))]).expect("runs");
    let Value::Tensor(y) = &out[0].1 else {
        panic!("float output expected")
    };
    y.to_vec_f32().expect("output")
}

/// A temporary file name unique to this process, test and device.
fn temp_path(test: &str, device: &Device) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "anygrad-onnx-{test}-{}-{}.safetensors",
        std::process::id(),
        device.is_gpu()
    ))
}

fn gradient_step_lowers_the_loss(device: &Device) {
    let model = OnnxModel::from_bytes(&gemm_tanh_model(), device).expect("loads");
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

    let path = temp_path("weights", device);
    model.save_safetensors(&path).expect("saved");
    let written = std::fs::read(&path).expect("read back");
    let _ = std::fs::remove_file(&path);
    let file = safetensors::SafeTensors::deserialize(&written).expect("valid safetensors");
    let w = file.tensor("w").expect("w saved");
    assert_eq!(w.shape(), &[2, 3]);
    let first = f32::from_le_bytes(w.data()[..4].try_into().expect("4 bytes"));
    assert!((first - 0.1).abs() > 1e-6, "the saved w is the stepped one");
}

/// Saved weights load back into a fresh copy of the model (same outputs as the changed
/// model), and a file that does not match (a missing or mis-shaped tensor, an unknown one)
/// is refused with every problem named, leaving the model unchanged.
fn saved_weights_load_into_a_fresh_model(device: &Device) {
    let tuned = OnnxModel::from_bytes(&gemm_tanh_model(), device).expect("loads");
    for (_, p) in tuned.parameters() {
        let _guard = anygrad_core::no_grad();
        p.assign(
            &p.mul_scalar(-2.0)
                .expect("scaled")
                .add_scalar(0.25)
                .expect("shifted"),
        )
        .expect("assign");
    }
    let x = Tensor::from_slice(&[1.0f32, 2.0, -1.0, 0.5, 0.0, 1.0], &[2, 3], device).expect("x");
    let expected = output_of(&tuned, &x);
    let path = temp_path("reload", device);
    tuned.save_safetensors(&path).expect("saved");

    let fresh = OnnxModel::from_bytes(&gemm_tanh_model(), device).expect("loads");
    let original = output_of(&fresh, &x);
    assert!(
        original
            .iter()
            .zip(&expected)
            .any(|(a, b)| (a - b).abs() > 1e-3),
        "the changed model should differ from the file's"
    );
    let handles = fresh.parameters();
    fresh.load_safetensors(&path).expect("loads the weights");
    let _ = std::fs::remove_file(&path);
    assert_eq!(output_of(&fresh, &x), expected);
    // Tensors taken before the load see the loaded values (they were written in place).
    let w = handles[0].1.to_vec_f32().expect("w");
    assert!((w[0] - (0.1 * -2.0 + 0.25)).abs() < 1e-6, "w[0] = {}", w[0]);

    // A file with `w` mis-shaped, `b` missing and an unknown tensor: refused, nothing changed.
    let bad = temp_path("bad", device);
    let w_bytes: Vec<u8> = [1.0f32; 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let extra_bytes: Vec<u8> = [0.0f32; 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    let views = vec![
        (
            "w".to_string(),
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![3], &w_bytes)
                .expect("view"),
        ),
        (
            "extra".to_string(),
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2], &extra_bytes)
                .expect("view"),
        ),
    ];
    std::fs::write(
        &bad,
        safetensors::serialize(views, None).expect("serialized"),
    )
    .expect("write");
    let before = output_of(&fresh, &x);
    let error = fresh
        .load_safetensors(&bad)
        .expect_err("refused")
        .to_string();
    let _ = std::fs::remove_file(&bad);
    for part in ["missing tensors: b", "`w` has shape [3]", "extra"] {
        assert!(error.contains(part), "`{part}` not in: {error}");
    }
    assert_eq!(
        output_of(&fresh, &x),
        before,
        "a refused file changes nothing"
    );
}

anygrad_testing::device_tests!(
    gradient_step_lowers_the_loss,
    saved_weights_load_into_a_fresh_model
);
