//! Small models built through the prost structs, encoded, loaded and run on the CPU and the
//! GPU, their outputs checked against values computed by hand (or with NumPy, as noted).

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::DataType;
use anygrad_onnx::{OnnxModel, Value};
use anygrad_testing::{assert_close, values};
use support::*;

fn load(model: &anygrad_onnx::proto::ModelProto, device: &Device) -> OnnxModel {
    OnnxModel::from_bytes(&bytes(model), device).expect("model loads")
}

fn tensor(values: &[f32], shape: &[usize], device: &Device) -> Value {
    Value::Tensor(Tensor::from_slice(values, shape, device).expect("tensor"))
}

fn output_tensor(outputs: &[(String, Value)], k: usize) -> Tensor {
    match &outputs[k].1 {
        Value::Tensor(t) => t.clone(),
        Value::Int64(v) => panic!("expected a tensor, got int64 {v:?}"),
    }
}

/// y = relu(x * w + b): MatMul, Add, Relu with initializers.
fn matmul_add_relu(device: &Device) {
    let m = model(
        vec![
            node("mm", "MatMul", &["x", "w"], &["xw"], vec![]),
            node("add", "Add", &["xw", "b"], &["z"], vec![]),
            node("relu", "Relu", &["z"], &["y"], vec![]),
        ],
        vec![
            float_tensor("w", &[2, 2], &[1.0, -1.0, 2.0, 0.5]),
            float_tensor("b", &[2], &[0.5, -4.0]),
        ],
        vec![value_info("x", DataType::Float, &[D::S("batch"), D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::S("batch"), D::N(2)])],
        13,
    );
    let model = load(&m, device);
    // x = [[1, 2], [3, -1]]: xw = [[5, 0], [1, -3.5]], + b = [[5.5, -4], [1.5, -7.5]].
    let out = model
        .run(&[("x", tensor(&[1.0, 2.0, 3.0, -1.0], &[2, 2], device))])
        .expect("runs");
    assert_close(
        &values(&output_tensor(&out, 0)),
        &[5.5, 0.0, 1.5, 0.0],
        1e-6,
        1e-6,
        "y",
    );
    // Another batch size through the symbolic dim.
    let out = model
        .run(&[(
            "x",
            tensor(&[1.0, 1.0, 0.0, 0.0, -1.0, 0.0], &[3, 2], device),
        )])
        .expect("runs with batch 3");
    assert_close(
        &values(&output_tensor(&out, 0)),
        &[3.5, 0.0, 0.5, 0.0, 0.0, 0.0],
        1e-6,
        1e-6,
        "y batch 3",
    );
}

/// Gemm with transB, alpha and beta.
fn gemm(device: &Device) {
    let m = model(
        vec![node(
            "g",
            "Gemm",
            &["a", "b", "c"],
            &["y"],
            vec![
                int_attr("transB", 1),
                float_attr("alpha", 2.0),
                float_attr("beta", 0.5),
            ],
        )],
        vec![
            float_tensor("b", &[3, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]),
            float_tensor("c", &[3], &[2.0, 4.0, 6.0]),
        ],
        vec![value_info("a", DataType::Float, &[D::N(1), D::N(2)])],
        vec![value_info("y", DataType::Float, &[D::N(1), D::N(3)])],
        13,
    );
    let out = load(&m, device)
        .run(&[("a", tensor(&[3.0, 5.0], &[1, 2], device))])
        .expect("runs");
    // a b^T = [3, 5, 8]; 2 * that + 0.5 * c = [7, 12, 19].
    assert_close(
        &values(&output_tensor(&out, 0)),
        &[7.0, 12.0, 19.0],
        1e-6,
        1e-6,
        "gemm",
    );
}

/// The shape subgraph of a flatten: Shape, Gather, Unsqueeze, Concat, Reshape, with the batch
/// symbolic and the int64 values exact on the host; the int64 shape is also an output.
fn shape_arithmetic(device: &Device) {
    let m = model(
        vec![
            node("shape", "Shape", &["x"], &["s"], vec![]),
            node(
                "batch",
                "Gather",
                &["s", "zero"],
                &["n"],
                vec![int_attr("axis", 0)],
            ),
            node("unsq", "Unsqueeze", &["n", "axes"], &["n1"], vec![]),
            node(
                "cat",
                "Concat",
                &["n1", "minus_one"],
                &["target"],
                vec![int_attr("axis", 0)],
            ),
            node("reshape", "Reshape", &["x", "target"], &["y"], vec![]),
        ],
        vec![
            int64_tensor("zero", &[], &[0]),
            int64_tensor("axes", &[1], &[0]),
            int64_tensor("minus_one", &[1], &[-1]),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::S("n"), D::N(2), D::N(2)],
        )],
        vec![
            value_info("y", DataType::Float, &[D::S("n"), D::N(4)]),
            value_info("target", DataType::Int64, &[D::N(2)]),
        ],
        13,
    );
    let model = load(&m, device);
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let out = model
        .run(&[("x", tensor(&x, &[3, 2, 2], device))])
        .expect("runs");
    let y = output_tensor(&out, 0);
    assert_eq!(y.shape(), &[3, 4]);
    assert_close(&values(&y), &x, 0.0, 0.0, "reshaped");
    match &out[1].1 {
        Value::Int64(v) => assert_eq!(v.data, vec![3, -1]),
        other => panic!("target should be int64, got {}", other.describe()),
    }
}

/// Conv with asymmetric pads and a bias, then MaxPool with ceil_mode; expected values
/// computed by hand.
fn conv_and_pool(device: &Device) {
    let m = model(
        vec![
            node(
                "conv",
                "Conv",
                &["x", "w", "b"],
                &["c"],
                vec![
                    ints_attr("pads", &[0, 1, 0, 0]),
                    ints_attr("kernel_shape", &[1, 2]),
                ],
            ),
            node(
                "pool",
                "MaxPool",
                &["c"],
                &["y"],
                vec![
                    ints_attr("kernel_shape", &[1, 2]),
                    ints_attr("strides", &[1, 2]),
                    int_attr("ceil_mode", 1),
                ],
            ),
        ],
        vec![
            float_tensor("w", &[1, 1, 1, 2], &[1.0, 10.0]),
            float_tensor("b", &[1], &[0.5]),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::N(1), D::N(1), D::N(1), D::N(3)],
        )],
        vec![value_info(
            "y",
            DataType::Float,
            &[D::N(1), D::N(1), D::N(1), D::N(2)],
        )],
        13,
    );
    // x = [1, 2, 3], padded left: [0, 1, 2, 3]; conv taps (1, 10): [10, 21, 32] + 0.5 =
    // [10.5, 21.5, 32.5]; max pool 2 stride 2 ceil: [21.5, 32.5].
    let out = load(&m, device)
        .run(&[("x", tensor(&[1.0, 2.0, 3.0], &[1, 1, 1, 3], device))])
        .expect("runs");
    assert_close(
        &values(&output_tensor(&out, 0)),
        &[21.5, 32.5],
        1e-5,
        1e-6,
        "conv+pool",
    );
}

/// Softmax before opset 13 flattens from the axis on; from 13 it is over one axis.
fn softmax_axis_semantics(device: &Device) {
    let x = [0.0f32, 1.0, 2.0, 3.0];
    let run = |opset: i64| {
        let m = model(
            vec![node(
                "sm",
                "Softmax",
                &["x"],
                &["y"],
                vec![int_attr("axis", 1)],
            )],
            vec![],
            vec![value_info(
                "x",
                DataType::Float,
                &[D::N(1), D::N(2), D::N(2)],
            )],
            vec![value_info(
                "y",
                DataType::Float,
                &[D::N(1), D::N(2), D::N(2)],
            )],
            opset,
        );
        let out = load(&m, device)
            .run(&[("x", tensor(&x, &[1, 2, 2], device))])
            .expect("runs");
        values(&output_tensor(&out, 0))
    };
    // opset 11: softmax over all 4 values.
    let total: f32 = x.iter().map(|v| v.exp()).sum();
    let flat: Vec<f32> = x.iter().map(|v| v.exp() / total).collect();
    assert_close(&run(11), &flat, 1e-6, 1e-5, "softmax opset 11");
    // opset 13: over axis 1 (pairs 0,2 and 1,3).
    let a = 1.0 / (1.0 + 2f32.exp());
    assert_close(
        &run(13),
        &[a, a, 1.0 - a, 1.0 - a],
        1e-6,
        1e-5,
        "softmax opset 13",
    );
}

/// A Constant node, Slice with INT64_MAX ends and a negative step, Cast to int64 output.
fn slice_and_cast(device: &Device) {
    let m = model(
        vec![
            node(
                "k",
                "Constant",
                &[],
                &["starts"],
                vec![tensor_attr("value", int64_tensor("", &[1], &[-1]))],
            ),
            node(
                "slice",
                "Slice",
                &["x", "starts", "ends", "axes", "steps"],
                &["s"],
                vec![],
            ),
            node(
                "cast",
                "Cast",
                &["s"],
                &["y"],
                vec![int_attr("to", DataType::Int64 as i64)],
            ),
        ],
        vec![
            int64_tensor("ends", &[1], &[i64::MIN]),
            int64_tensor("axes", &[1], &[0]),
            int64_tensor("steps", &[1], &[-2]),
        ],
        vec![value_info("x", DataType::Float, &[D::N(5)])],
        vec![value_info("y", DataType::Int64, &[D::N(3)])],
        13,
    );
    let out = load(&m, device)
        .run(&[("x", tensor(&[0.5, 1.5, 2.5, 3.5, -4.5], &[5], device))])
        .expect("runs");
    // Positions 4, 2, 0 = [-4.5, 2.5, 0.5], truncated toward zero.
    match &out[0].1 {
        Value::Int64(v) => assert_eq!(v.data, vec![-4, 2, 0]),
        other => panic!("expected int64, got {}", other.describe()),
    }
}

/// BatchNormalization (inference) and LayerNormalization; NumPy-checked values.
fn normalizations(device: &Device) {
    let m = model(
        vec![
            node(
                "bn",
                "BatchNormalization",
                &["x", "scale", "bias", "mean", "var"],
                &["b"],
                vec![],
            ),
            node(
                "ln",
                "LayerNormalization",
                &["b", "g", "h"],
                &["y"],
                vec![int_attr("axis", -1)],
            ),
        ],
        vec![
            float_tensor("scale", &[2], &[2.0, 1.0]),
            float_tensor("bias", &[2], &[0.0, 1.0]),
            float_tensor("mean", &[2], &[1.0, 0.0]),
            float_tensor("var", &[2], &[4.0, 1.0]),
            float_tensor("g", &[2], &[1.0, 1.0]),
            float_tensor("h", &[2], &[0.0, 0.0]),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::N(1), D::N(2), D::N(1), D::N(2)],
        )],
        vec![value_info(
            "y",
            DataType::Float,
            &[D::N(1), D::N(2), D::N(1), D::N(2)],
        )],
        17,
    );
    let out = load(&m, device)
        .run(&[("x", tensor(&[3.0, 5.0, 1.0, 2.0], &[1, 2, 1, 2], device))])
        .expect("runs");
    // bn (eps 1e-5): channel 0: (x - 1) / 2 * 2 = [2, 4]; channel 1: x + 1 = [2, 3].
    // ln over pairs: [-1, 1] each (to within eps).
    assert_close(
        &values(&output_tensor(&out, 0)),
        &[-1.0, 1.0, -1.0, 1.0],
        1e-3,
        1e-3,
        "norms",
    );
}

/// If with branches that read the enclosing graph's values (outer scope).
fn if_reads_the_enclosing_scope(device: &Device) {
    use anygrad_onnx::proto::{AttributeProto, AttributeType, GraphProto};
    let branch = |name: &str, op: &str| AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(Box::new(GraphProto {
            name: name.into(),
            node: vec![node(op, op, &["x", "x"], &["out"], vec![])],
            output: vec![value_info("out", DataType::Float, &[D::N(2)])],
            ..Default::default()
        })),
        ..Default::default()
    };
    let m = model(
        vec![
            node("positive", "Greater", &["s", "zero"], &["c"], vec![]),
            node(
                "choose",
                "If",
                &["c"],
                &["y"],
                vec![branch("then_branch", "Add"), branch("else_branch", "Mul")],
            ),
        ],
        vec![float_tensor("zero", &[], &[0.0])],
        vec![
            value_info("x", DataType::Float, &[D::N(2)]),
            value_info("s", DataType::Float, &[]),
        ],
        vec![value_info("y", DataType::Float, &[D::N(2)])],
        13,
    );
    let model = load(&m, device);
    let run = |s: f32| {
        let out = model
            .run(&[
                ("x", tensor(&[3.0, -2.0], &[2], device)),
                ("s", tensor(&[s], &[], device)),
            ])
            .expect("runs");
        values(&output_tensor(&out, 0))
    };
    assert_eq!(run(1.0), vec![6.0, -4.0]);
    assert_eq!(run(-1.0), vec![9.0, 4.0]);
}

anygrad_testing::device_tests!(
    if_reads_the_enclosing_scope,
    matmul_add_relu,
    gemm,
    shape_arithmetic,
    conv_and_pool,
    softmax_axis_semantics,
    slice_and_cast,
    normalizations,
);
