//! Bad files and bad calls: each is an error naming what it concerns (the node's name and
//! op_type, the tensor, the input), never a panic, and external data never leaves the model's
//! folder.

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::{DataLocation, DataType, StringStringEntryProto};
use anygrad_onnx::{OnnxModel, Value};
use support::*;

fn relu_model() -> anygrad_onnx::proto::ModelProto {
    model(
        vec![node("act", "Relu", &["x"], &["y"], vec![])],
        vec![],
        vec![value_info("x", DataType::Float, &[D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    )
}

fn error_of(result: anygrad_onnx::Result<OnnxModel>) -> String {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn truncated_bytes_are_a_decode_error() {
    let encoded = bytes(&relu_model());
    for cut in [1, encoded.len() / 2, encoded.len() - 1] {
        let message = error_of(OnnxModel::from_bytes(&encoded[..cut], &Device::Cpu));
        assert!(message.contains("malformed ONNX protobuf"), "{message}");
    }
    let garbage = [0xffu8; 64];
    assert!(OnnxModel::from_bytes(&garbage, &Device::Cpu).is_err());
}

#[test]
fn a_cycle_names_its_nodes() {
    let m = model(
        vec![
            node("first", "Add", &["x", "b"], &["a"], vec![]),
            node("second", "Relu", &["a"], &["b"], vec![]),
        ],
        vec![],
        vec![value_info("x", DataType::Float, &[D::N(2)])],
        vec![value_info("b", DataType::Float, &[D::N(2)])],
        13,
    );
    let message = error_of(OnnxModel::from_bytes(&bytes(&m), &Device::Cpu));
    assert!(message.contains("cycle"), "{message}");
    assert!(
        message.contains("\"first\" (Add)") && message.contains("\"second\" (Relu)"),
        "{message}"
    );
}

#[test]
fn an_input_nothing_produces_names_the_node() {
    let m = model(
        vec![node("adder", "Add", &["x", "ghost"], &["y"], vec![])],
        vec![],
        vec![value_info("x", DataType::Float, &[D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    );
    let message = error_of(OnnxModel::from_bytes(&bytes(&m), &Device::Cpu));
    assert!(
        message.contains("\"adder\" (Add)") && message.contains("`ghost`"),
        "{message}"
    );
}

#[test]
fn a_missing_graph_input_at_run_time_is_named() {
    let model = OnnxModel::from_bytes(&bytes(&relu_model()), &Device::Cpu).expect("loads");
    let message = model.run(&[]).expect_err("no input").to_string();
    assert!(
        message.contains("`x`") && message.contains("\"act\" (Relu)"),
        "{message}"
    );
    let wrong =
        Value::Tensor(Tensor::zeros(&[3], anygrad_core::DType::F32, &Device::Cpu).expect("zeros"));
    let message = model
        .run(&[("x", wrong)])
        .expect_err("wrong dim")
        .to_string();
    assert!(
        message.contains("input `x`") && message.contains("dim 0 is 3"),
        "{message}"
    );
}

#[test]
fn an_absurd_shape_is_refused() {
    let mut huge = float_tensor("w", &[1 << 20, 1 << 20, 1 << 20], &[]);
    huge.raw_data = vec![0; 16];
    let m = model(
        vec![node("act", "Relu", &["w"], &["y"], vec![])],
        vec![huge],
        vec![],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    );
    let message = error_of(OnnxModel::from_bytes(&bytes(&m), &Device::Cpu));
    assert!(
        message.contains("tensor `w`") && message.contains("absurd"),
        "{message}"
    );
    let negative = float_tensor("w", &[-2], &[]);
    let m = model(vec![], vec![negative], vec![], vec![], 13);
    let message = error_of(OnnxModel::from_bytes(&bytes(&m), &Device::Cpu));
    assert!(message.contains("negative dim"), "{message}");
}

#[test]
fn wrong_data_lengths_are_refused() {
    let short = float_tensor("w", &[3], &[1.0, 2.0]);
    let m = model(vec![], vec![short], vec![], vec![], 13);
    let message = error_of(OnnxModel::from_bytes(&bytes(&m), &Device::Cpu));
    assert!(message.contains("tensor `w`"), "{message}");
}

#[test]
fn an_unsupported_operator_is_listed_and_refused_naming_the_node() {
    let m = model(
        vec![node("sampler", "GridSample", &["x"], &["y"], vec![])],
        vec![],
        vec![value_info("x", DataType::Float, &[D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    );
    let model = OnnxModel::from_bytes(&bytes(&m), &Device::Cpu).expect("loads for info");
    assert_eq!(model.unsupported_nodes().len(), 1);
    let x =
        Value::Tensor(Tensor::zeros(&[2], anygrad_core::DType::F32, &Device::Cpu).expect("zeros"));
    let message = model.run(&[("x", x)]).expect_err("unsupported").to_string();
    assert!(
        message.contains("\"sampler\" (GridSample)") && message.contains("unsupported"),
        "{message}"
    );
}

#[test]
fn a_node_error_names_the_node_and_its_operands() {
    let m = model(
        vec![node("mm", "MatMul", &["x", "w"], &["y"], vec![])],
        vec![float_tensor("w", &[3, 2], &[0.0; 6])],
        vec![value_info("x", DataType::Float, &[D::N(2), D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::N(2), D::N(2)])],
        13,
    );
    let model = OnnxModel::from_bytes(&bytes(&m), &Device::Cpu).expect("loads");
    let x = Value::Tensor(
        Tensor::zeros(&[2, 2], anygrad_core::DType::F32, &Device::Cpu).expect("zeros"),
    );
    let message = model
        .run(&[("x", x)])
        .expect_err("shape mismatch")
        .to_string();
    assert!(
        message.contains("\"mm\" (MatMul)") && message.contains("float32[3, 2]"),
        "{message}"
    );
}

fn external(
    location: &str,
    offset: Option<&str>,
    length: Option<&str>,
) -> anygrad_onnx::proto::TensorProto {
    let mut t = float_tensor("w", &[2], &[]);
    t.data_location = DataLocation::External as i32;
    t.external_data.push(StringStringEntryProto {
        key: "location".into(),
        value: location.into(),
    });
    if let Some(o) = offset {
        t.external_data.push(StringStringEntryProto {
            key: "offset".into(),
            value: o.into(),
        });
    }
    if let Some(l) = length {
        t.external_data.push(StringStringEntryProto {
            key: "length".into(),
            value: l.into(),
        });
    }
    t
}

fn external_model(tensor: anygrad_onnx::proto::TensorProto) -> Vec<u8> {
    bytes(&model(
        vec![node("act", "Relu", &["w"], &["y"], vec![])],
        vec![tensor],
        vec![],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    ))
}

#[test]
fn external_data_is_read_from_the_model_folder_only() {
    let root = std::env::temp_dir().join(format!("anygrad-onnx-external-{}", std::process::id()));
    let folder = root.join("model");
    std::fs::create_dir_all(&folder).expect("folder");
    let mut data = vec![0u8; 4];
    data.extend_from_slice(&1.5f32.to_le_bytes());
    data.extend_from_slice(&(-2.0f32).to_le_bytes());
    std::fs::write(folder.join("weights.bin"), &data).expect("weights");
    std::fs::write(root.join("secret.bin"), &data).expect("outside file");

    let path = folder.join("ok.onnx");
    std::fs::write(
        &path,
        external_model(external("weights.bin", Some("4"), Some("8"))),
    )
    .expect("model");
    let model = OnnxModel::load(&path, &Device::Cpu).expect("external data loads");
    let out = model.run(&[]).expect("runs");
    match &out[0].1 {
        Value::Tensor(t) => assert_eq!(t.to_vec_f32().expect("values"), vec![1.5, 0.0]),
        other => panic!("{}", other.describe()),
    }

    let escape = |location: &str, offset: Option<&str>, length: Option<&str>| {
        let path = folder.join("bad.onnx");
        std::fs::write(&path, external_model(external(location, offset, length))).expect("model");
        error_of(OnnxModel::load(&path, &Device::Cpu))
    };
    let message = escape("../secret.bin", None, None);
    assert!(
        message.contains("tensor `w`") && message.contains("inside the model's folder"),
        "{message}"
    );
    let absolute = root.join("secret.bin").display().to_string();
    let message = escape(&absolute, None, None);
    assert!(message.contains("relative path"), "{message}");
    #[cfg(unix)]
    {
        let _ = std::os::unix::fs::symlink(root.join("secret.bin"), folder.join("link.bin"));
        let message = escape("link.bin", None, None);
        assert!(message.contains("outside the model's folder"), "{message}");
    }
    let message = escape("weights.bin", Some("8"), Some("8"));
    assert!(message.contains("past the end"), "{message}");
    let message = escape("weights.bin", Some("99"), None);
    assert!(message.contains("past the end"), "{message}");
    // From bytes there is no folder to read from.
    let message = error_of(OnnxModel::from_bytes(
        &external_model(external("weights.bin", None, None)),
        &Device::Cpu,
    ));
    assert!(message.contains("external file"), "{message}");
    let _ = std::fs::remove_dir_all(&root);
}
