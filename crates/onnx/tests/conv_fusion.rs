//! Convolution chains fused at load (Conv with its BatchNormalization, residual Add and Relu
//! run as one `conv2d_fused` call): small models with the patterns are run fused and with
//! fusion switched off (`OnnxModel::set_fusion(false)`, which runs the chain's nodes one by
//! one as an unfused plan does); the outputs agree, the chains are the expected ones and ran
//! fused, what must not fuse does not, and gradients of a fine-tuned model reach every
//! initializer with the same values either way.

mod support;

use anygrad_core::{Device, Tensor};
use anygrad_onnx::proto::{DataType, ModelProto, NodeProto, TensorProto};
use anygrad_onnx::{OnnxModel, Value};
use anygrad_testing::{assert_close, pseudo_random, random_tensor, values};
use support::*;

/// A float initializer of `dims` with deterministic values in [-1, 1) for `seed`.
fn random_initializer(name: &str, dims: &[i64], seed: u64) -> TensorProto {
    let count = dims.iter().product::<i64>() as usize;
    float_tensor(name, dims, &pseudo_random(count, seed))
}

/// A batch norm's five inputs' initializers (`name`, `name_scale` ... `name_var`) for
/// `channels` channels; the variances are positive.
fn batch_norm_initializers(name: &str, channels: i64, seed: u64) -> Vec<TensorProto> {
    let c = channels as usize;
    let variance: Vec<f32> = pseudo_random(c, seed + 3)
        .iter()
        .map(|v| v.abs() + 0.5)
        .collect();
    vec![
        random_initializer(&format!("{name}_scale"), &[channels], seed),
        random_initializer(&format!("{name}_bias"), &[channels], seed + 1),
        random_initializer(&format!("{name}_mean"), &[channels], seed + 2),
        float_tensor(&format!("{name}_var"), &[channels], &variance),
    ]
}

/// A BatchNormalization node `name` of `input` whose parameters are
/// [`batch_norm_initializers`] of the same name.
fn batch_norm(name: &str, input: &str, output: &str) -> NodeProto {
    let inputs = [
        input.to_string(),
        format!("{name}_scale"),
        format!("{name}_bias"),
        format!("{name}_mean"),
        format!("{name}_var"),
    ];
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    node(
        name,
        "BatchNormalization",
        &inputs,
        &[output],
        vec![float_attr("epsilon", 1e-3)],
    )
}

/// A Conv node with `pads` (begin then end), `strides` and a square kernel of `kernel`.
fn conv(
    name: &str,
    inputs: &[&str],
    output: &str,
    kernel: i64,
    pads: &[i64],
    strides: &[i64],
) -> NodeProto {
    node(
        name,
        "Conv",
        inputs,
        &[output],
        vec![
            ints_attr("kernel_shape", &[kernel, kernel]),
            ints_attr("pads", pads),
            ints_attr("strides", strides),
        ],
    )
}

/// The model loaded twice on `device`: fused (the default) and with fusion switched off.
fn fused_and_unfused(m: &ModelProto, device: &Device) -> (OnnxModel, OnnxModel) {
    let fused = OnnxModel::from_bytes(&bytes(m), device).expect("model loads");
    let mut unfused = OnnxModel::from_bytes(&bytes(m), device).expect("model loads");
    unfused.set_fusion(false);
    (fused, unfused)
}

/// The float outputs of a run on `x`.
fn outputs(model: &OnnxModel, x: &Tensor) -> Vec<(String, Tensor)> {
    model
        .run(&[("x", Value::Tensor(x.clone()))])
        .expect("runs")
        .into_iter()
        .map(|(name, value)| match value {
            Value::Tensor(t) => (name, t),
            Value::Int64(_) => panic!("`{name}`: a float output expected"),
        })
        .collect()
}

/// Every output of the fused model equals the unfused one's within float rounding; the
/// largest difference is printed.
fn assert_same_outputs(fused: &OnnxModel, unfused: &OnnxModel, x: &Tensor, what: &str) {
    let (a, b) = (outputs(fused, x), outputs(unfused, x));
    assert_eq!(a.len(), b.len());
    for ((name, fused_y), (_, unfused_y)) in a.iter().zip(&b) {
        assert_eq!(fused_y.shape(), unfused_y.shape(), "{what}: `{name}` shape");
        let (f, u) = (values(fused_y), values(unfused_y));
        let largest = f
            .iter()
            .zip(&u)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        eprintln!(
            "{what} on {}: `{name}` {:?}, largest |fused - unfused| = {largest:e}",
            x.device().description(),
            fused_y.shape()
        );
        assert_close(&f, &u, 1e-4, 1e-4, &format!("{what}: `{name}`"));
    }
}

/// The chains' operator lists and how often each ran fused.
fn chains(model: &OnnxModel) -> Vec<(String, usize)> {
    model
        .fused_chains()
        .into_iter()
        .map(|c| (c.operators, c.fused_runs))
        .collect()
}

/// Two ResNet-style blocks with batch norms folded into the convolutions' biases, as
/// `torch.onnx.export` writes them: Conv→Relu, Conv→Add(chain, downsample)→Relu, and an
/// identity shortcut with the chain as the Add's second operand.
fn residual_blocks() -> ModelProto {
    model(
        vec![
            conv(
                "c1",
                &["x", "w1", "b1"],
                "c1_out",
                3,
                &[1, 1, 1, 1],
                &[2, 2],
            ),
            node("relu1", "Relu", &["c1_out"], &["r1"], vec![]),
            conv(
                "c2",
                &["r1", "w2", "b2"],
                "c2_out",
                3,
                &[1, 1, 1, 1],
                &[1, 1],
            ),
            conv("down", &["x", "wd", "bd"], "d", 1, &[0, 0, 0, 0], &[2, 2]),
            node("add2", "Add", &["c2_out", "d"], &["a2"], vec![]),
            node("relu2", "Relu", &["a2"], &["y1"], vec![]),
            conv(
                "c3",
                &["y1", "w3", "b3"],
                "c3_out",
                3,
                &[1, 1, 1, 1],
                &[1, 1],
            ),
            node("add3", "Add", &["y1", "c3_out"], &["a3"], vec![]),
            node("relu3", "Relu", &["a3"], &["y"], vec![]),
        ],
        vec![
            random_initializer("w1", &[6, 4, 3, 3], 1),
            random_initializer("b1", &[6], 2),
            random_initializer("w2", &[6, 6, 3, 3], 3),
            random_initializer("b2", &[6], 4),
            random_initializer("wd", &[6, 4, 1, 1], 5),
            random_initializer("bd", &[6], 6),
            random_initializer("w3", &[6, 6, 3, 3], 7),
            random_initializer("b3", &[6], 8),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::S("batch"), D::N(4), D::N(8), D::N(8)],
        )],
        vec![value_info(
            "y",
            DataType::Float,
            &[D::S("batch"), D::N(6), D::N(4), D::N(4)],
        )],
        17,
    )
}

fn residual_blocks_fuse(device: &Device) {
    let (fused, unfused) = fused_and_unfused(&residual_blocks(), device);
    let planned: Vec<String> = chains(&fused).into_iter().map(|(ops, _)| ops).collect();
    // The downsample convolution is a chain of one (its bias in the store).
    assert_eq!(
        planned,
        ["Conv+Relu", "Conv", "Conv+Add+Relu", "Conv+Add+Relu"]
    );
    assert_eq!(
        fused.fused_chains()[1].nodes,
        ["\"down\" (Conv)".to_string()]
    );
    assert_eq!(
        fused.fused_chains()[2].nodes,
        [
            "\"c2\" (Conv)".to_string(),
            "\"add2\" (Add)".to_string(),
            "\"relu2\" (Relu)".to_string()
        ]
    );
    // The operator counts still list every node.
    let counts = fused.operator_counts();
    assert_eq!(
        (counts["Conv"], counts["Add"], counts["Relu"]),
        (4, 2, 3),
        "{counts:?}"
    );
    let x = random_tensor(&[2, 4, 8, 8], 11, device);
    assert_same_outputs(&fused, &unfused, &x, "residual blocks");
    assert!(chains(&fused).iter().all(|(_, runs)| *runs == 1));
    assert!(chains(&unfused).iter().all(|(_, runs)| *runs == 0));
    // Another batch size through the symbolic dim.
    let x = random_tensor(&[3, 4, 8, 8], 12, device);
    assert_same_outputs(&fused, &unfused, &x, "residual blocks, batch 3");
}

/// Batch norms kept as nodes: Conv (no bias, asymmetric pads)→BN→Relu,
/// Conv→BN→Add→Relu whose result is also a graph output, and Conv→BN ending the graph.
fn batch_norm_blocks() -> ModelProto {
    let mut initializers = vec![
        random_initializer("w1", &[4, 3, 2, 2], 21),
        random_initializer("w2", &[4, 4, 3, 3], 22),
        random_initializer("b2", &[4], 23),
        random_initializer("w3", &[5, 4, 1, 1], 24),
        random_initializer("b3", &[5], 25),
    ];
    initializers.extend(batch_norm_initializers("bn1", 4, 31));
    initializers.extend(batch_norm_initializers("bn2", 4, 41));
    initializers.extend(batch_norm_initializers("bn3", 5, 51));
    model(
        vec![
            conv("c1", &["x", "w1"], "c1_out", 2, &[0, 1, 1, 0], &[1, 1]),
            batch_norm("bn1", "c1_out", "n1"),
            node("relu1", "Relu", &["n1"], &["r1"], vec![]),
            conv(
                "c2",
                &["r1", "w2", "b2"],
                "c2_out",
                3,
                &[1, 1, 1, 1],
                &[1, 1],
            ),
            batch_norm("bn2", "c2_out", "n2"),
            node("add2", "Add", &["n2", "r1"], &["a2"], vec![]),
            node("relu2", "Relu", &["a2"], &["y"], vec![]),
            conv(
                "c3",
                &["y", "w3", "b3"],
                "c3_out",
                1,
                &[0, 0, 0, 0],
                &[1, 1],
            ),
            batch_norm("bn3", "c3_out", "z"),
        ],
        initializers,
        vec![value_info(
            "x",
            DataType::Float,
            &[D::N(2), D::N(3), D::N(6), D::N(6)],
        )],
        vec![
            value_info("y", DataType::Float, &[D::N(2), D::N(4), D::N(6), D::N(6)]),
            value_info("z", DataType::Float, &[D::N(2), D::N(5), D::N(6), D::N(6)]),
        ],
        15,
    )
}

fn batch_norm_blocks_fuse(device: &Device) {
    let (fused, unfused) = fused_and_unfused(&batch_norm_blocks(), device);
    assert_eq!(
        chains(&fused),
        [
            ("Conv+BatchNormalization+Relu".to_string(), 0),
            ("Conv+BatchNormalization+Add+Relu".to_string(), 0),
            ("Conv+BatchNormalization".to_string(), 0),
        ]
    );
    let x = random_tensor(&[2, 3, 6, 6], 61, device);
    assert_same_outputs(&fused, &unfused, &x, "batch norm blocks");
    assert!(chains(&fused).iter().all(|(_, runs)| *runs == 1));
    // Inference keeps each batch norm's fold; changing a parameter in place (an optimizer
    // step, `load_safetensors`) makes the next run fold again.
    let _inference = anygrad_core::no_grad();
    assert_same_outputs(&fused, &unfused, &x, "batch norm blocks, no_grad");
    for model in [&fused, &unfused] {
        for (name, parameter) in model.parameters() {
            if name == "bn2_scale" || name == "b2" {
                let changed = parameter.mul_scalar(-1.5).expect("changed");
                parameter.assign(&changed).expect("assign");
            }
        }
    }
    assert_same_outputs(
        &fused,
        &unfused,
        &x,
        "batch norm blocks, parameters changed",
    );
    assert!(chains(&fused).iter().all(|(_, runs)| *runs == 3));
}

/// What must not fuse: a convolution output read twice, one that is a graph output, and a
/// training-mode batch norm (the Conv stays a chain of one); chains whose operands only tell
/// at run time that they do not qualify (a residual that broadcasts, a 1-D convolution,
/// several groups without a batch norm) run node by node.
fn what_does_not_fuse(device: &Device) {
    let x_info = || value_info("x", DataType::Float, &[D::N(1), D::N(2), D::N(5), D::N(5)]);
    let output = |name: &str, channels: i64, size: i64| {
        value_info(
            name,
            DataType::Float,
            &[D::N(1), D::N(channels), D::N(size), D::N(size)],
        )
    };
    let weights = || {
        vec![
            random_initializer("w", &[3, 2, 3, 3], 71),
            random_initializer("b", &[3], 72),
        ]
    };
    let x = random_tensor(&[1, 2, 5, 5], 73, device);

    // Read twice: by Relu and by Add.
    let twice = model(
        vec![
            conv("c", &["x", "w", "b"], "c_out", 3, &[1, 1, 1, 1], &[1, 1]),
            node("relu", "Relu", &["c_out"], &["r"], vec![]),
            node("add", "Add", &["c_out", "r"], &["y"], vec![]),
        ],
        weights(),
        vec![x_info()],
        vec![output("y", 3, 5)],
        17,
    );
    let (fused, unfused) = fused_and_unfused(&twice, device);
    assert_same_outputs(&fused, &unfused, &x, "conv read twice");
    assert_eq!(chains(&fused), [("Conv".to_string(), 1)]);

    // A graph output.
    let kept = model(
        vec![
            conv("c", &["x", "w", "b"], "c_out", 3, &[1, 1, 1, 1], &[1, 1]),
            node("relu", "Relu", &["c_out"], &["y"], vec![]),
        ],
        weights(),
        vec![x_info()],
        vec![output("c_out", 3, 5), output("y", 3, 5)],
        17,
    );
    let (fused, unfused) = fused_and_unfused(&kept, device);
    assert_same_outputs(&fused, &unfused, &x, "conv output kept");
    assert_eq!(chains(&fused), [("Conv".to_string(), 1)]);

    // A training-mode batch norm (three outputs): the Conv stays alone.
    let mut initializers = weights();
    initializers.extend(batch_norm_initializers("bn", 3, 74));
    let mut training = batch_norm("bn", "c_out", "y");
    training
        .output
        .extend(["running_mean".into(), "running_var".into()]);
    training.attribute.push(int_attr("training_mode", 1));
    let trained = model(
        vec![
            conv("c", &["x", "w", "b"], "c_out", 3, &[1, 1, 1, 1], &[1, 1]),
            training,
        ],
        initializers,
        vec![x_info()],
        vec![output("y", 3, 5)],
        15,
    );
    let (fused, unfused) = fused_and_unfused(&trained, device);
    assert_same_outputs(&fused, &unfused, &x, "training-mode batch norm");
    assert_eq!(chains(&fused), [("Conv".to_string(), 1)]);

    // A residual [1, 3, 1, 1] that broadcasts: planned, but run node by node.
    let mut initializers = weights();
    initializers.push(random_initializer("shift", &[1, 3, 1, 1], 75));
    let broadcast = model(
        vec![
            conv("c", &["x", "w", "b"], "c_out", 3, &[1, 1, 1, 1], &[1, 1]),
            node("add", "Add", &["shift", "c_out"], &["a"], vec![]),
            node("relu", "Relu", &["a"], &["y"], vec![]),
        ],
        initializers,
        vec![x_info()],
        vec![output("y", 3, 5)],
        17,
    );
    let (fused, unfused) = fused_and_unfused(&broadcast, device);
    assert_same_outputs(&fused, &unfused, &x, "broadcast residual");
    assert_eq!(chains(&fused), [("Conv+Add+Relu".to_string(), 0)]);

    // A 1-D convolution: planned, but run node by node (only 2-D convolutions fuse).
    let one_d = model(
        vec![
            node(
                "c",
                "Conv",
                &["x", "w", "b"],
                &["c_out"],
                vec![ints_attr("pads", &[1, 1])],
            ),
            node("relu", "Relu", &["c_out"], &["y"], vec![]),
        ],
        vec![
            random_initializer("w", &[3, 2, 3], 76),
            random_initializer("b", &[3], 77),
        ],
        vec![value_info(
            "x",
            DataType::Float,
            &[D::N(1), D::N(2), D::N(7)],
        )],
        vec![value_info(
            "y",
            DataType::Float,
            &[D::N(1), D::N(3), D::N(7)],
        )],
        17,
    );
    let (fused, unfused) = fused_and_unfused(&one_d, device);
    let x = random_tensor(&[1, 2, 7], 78, device);
    assert_same_outputs(&fused, &unfused, &x, "1-D convolution");
    assert_eq!(chains(&fused), [("Conv+Relu".to_string(), 0)]);

    // Two groups without a batch norm: planned, but run node by node (the one-pass
    // primitive takes one group); with a batch norm the fold runs fused.
    let grouped = |with_batch_norm: bool| {
        let mut nodes = vec![node(
            "c",
            "Conv",
            &["x", "w", "b"],
            &["c_out"],
            vec![ints_attr("pads", &[1, 1, 1, 1]), int_attr("group", 2)],
        )];
        let mut initializers = vec![
            random_initializer("w", &[4, 1, 3, 3], 79),
            random_initializer("b", &[4], 80),
        ];
        let mut relu_input = "c_out";
        if with_batch_norm {
            nodes.push(batch_norm("bn", "c_out", "n"));
            initializers.extend(batch_norm_initializers("bn", 4, 81));
            relu_input = "n";
        }
        nodes.push(node("relu", "Relu", &[relu_input], &["y"], vec![]));
        model(
            nodes,
            initializers,
            vec![x_info()],
            vec![output("y", 4, 5)],
            15,
        )
    };
    let x = random_tensor(&[1, 2, 5, 5], 82, device);
    let (fused, unfused) = fused_and_unfused(&grouped(false), device);
    assert_same_outputs(&fused, &unfused, &x, "grouped convolution");
    assert_eq!(chains(&fused), [("Conv+Relu".to_string(), 0)]);
    let (fused, unfused) = fused_and_unfused(&grouped(true), device);
    assert_same_outputs(&fused, &unfused, &x, "grouped convolution, batch norm");
    assert_eq!(
        chains(&fused),
        [("Conv+BatchNormalization+Relu".to_string(), 1)]
    );
}

/// Under f16 autocast the chains still fuse (the convolution casts its f32 weights, as the
/// unfused Conv does) and agree with the separate ops within f16 rounding (the fused epilogue
/// rounds once, the separate ops after each step).
fn autocast_chains_fuse(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_chains_fuse") {
        return;
    }
    for (what, m, x_shape) in [
        ("residual blocks", residual_blocks(), [2, 4, 8, 8]),
        ("batch norm blocks", batch_norm_blocks(), [2, 3, 6, 6]),
    ] {
        let (fused, unfused) = fused_and_unfused(&m, device);
        let x = random_tensor(&x_shape, 91, device);
        let _inference = anygrad_core::no_grad();
        let _autocast = anygrad_core::autocast(anygrad_core::DType::F16, device).expect("autocast");
        let (a, b) = (outputs(&fused, &x), outputs(&unfused, &x));
        for ((name, fused_y), (_, unfused_y)) in a.iter().zip(&b) {
            let (f, u) = (values(fused_y), values(unfused_y));
            let largest = f
                .iter()
                .zip(&u)
                .map(|(p, q)| (p - q).abs())
                .fold(0.0f32, f32::max);
            let magnitude = u.iter().map(|v| v.abs()).fold(0.0f32, f32::max);
            eprintln!(
                "{what} under f16 autocast on {}: `{name}` {}, largest |fused - unfused| = \
                 {largest:e} (largest |unfused| {magnitude})",
                device.description(),
                fused_y.dtype()
            );
            assert_close(&f, &u, 2e-2, 2e-2, &format!("{what} (autocast): `{name}`"));
        }
        assert!(
            fused.fused_chains().iter().all(|c| c.fused_runs == 1),
            "{what}: {:?}",
            fused.fused_chains()
        );
    }
}

/// A chain inside an If branch, reading the enclosing graph's input and weights: planned in
/// the branch, its intermediate value not mistaken for a name of the enclosing scope.
fn chains_in_a_subgraph(device: &Device) {
    use anygrad_onnx::proto::{AttributeProto, AttributeType, GraphProto};
    let shape = || [D::N(1), D::N(3), D::N(5), D::N(5)];
    let branch = |name: &str, nodes: Vec<NodeProto>| AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(Box::new(GraphProto {
            name: name.into(),
            node: nodes,
            output: vec![value_info("out", DataType::Float, &shape())],
            ..Default::default()
        })),
        ..Default::default()
    };
    let m = model(
        vec![
            node(
                "positive",
                "Greater",
                &["s", "zero"],
                &["condition"],
                vec![],
            ),
            node(
                "choose",
                "If",
                &["condition"],
                &["y"],
                vec![
                    branch(
                        "then_branch",
                        vec![
                            conv("c", &["x", "w", "b"], "c_out", 3, &[1, 1, 1, 1], &[1, 1]),
                            node("add", "Add", &["c_out", "x"], &["a"], vec![]),
                            node("relu", "Relu", &["a"], &["out"], vec![]),
                        ],
                    ),
                    branch(
                        "else_branch",
                        vec![node("neg", "Neg", &["x"], &["out"], vec![])],
                    ),
                ],
            ),
        ],
        vec![
            random_initializer("w", &[3, 3, 3, 3], 101),
            random_initializer("b", &[3], 102),
            float_tensor("zero", &[], &[0.0]),
        ],
        vec![
            value_info("x", DataType::Float, &shape()),
            value_info("s", DataType::Float, &[]),
        ],
        vec![value_info("y", DataType::Float, &shape())],
        17,
    );
    let (fused, unfused) = fused_and_unfused(&m, device);
    let x = random_tensor(&[1, 3, 5, 5], 103, device);
    let run = |model: &OnnxModel, s: f32| {
        let out = model
            .run(&[
                ("x", Value::Tensor(x.clone())),
                (
                    "s",
                    Value::Tensor(Tensor::from_slice(&[s], &[], device).expect("s")),
                ),
            ])
            .expect("runs");
        match &out[0].1 {
            Value::Tensor(t) => values(t),
            Value::Int64(_) => panic!("a float output expected"),
        }
    };
    assert_close(&run(&fused, 1.0), &run(&unfused, 1.0), 1e-5, 1e-5, "then");
    assert_close(&run(&fused, -1.0), &run(&unfused, -1.0), 0.0, 0.0, "else");
    assert_eq!(chains(&fused), [("Conv+Add+Relu".to_string(), 1)]);
}

/// The loss of a run on `x`: the mean of the squared outputs.
fn loss(model: &OnnxModel, x: &Tensor) -> Tensor {
    let mut total: Option<Tensor> = None;
    for (_, y) in outputs(model, x) {
        let term = y.square().and_then(|s| s.mean_all()).expect("loss term");
        total = Some(match total {
            Some(t) => t.add(&term).expect("sum"),
            None => term,
        });
    }
    total.expect("an output")
}

/// Fine-tuning through fused chains: with the initializers requiring gradients the chains
/// compute through differentiable ops; every initializer gets the gradient the unfused model
/// gives it.
fn gradients_reach_the_initializers(device: &Device) {
    for (what, m) in [
        ("residual blocks", residual_blocks()),
        ("batch norm blocks", batch_norm_blocks()),
    ] {
        let (fused, unfused) = fused_and_unfused(&m, device);
        let x_shape = if what == "residual blocks" {
            [2, 4, 8, 8]
        } else {
            [2, 3, 6, 6]
        };
        let x = random_tensor(&x_shape, 81, device);
        let (fused_parameters, unfused_parameters) = (fused.parameters(), unfused.parameters());
        let (fused_loss, unfused_loss) = (loss(&fused, &x), loss(&unfused, &x));
        assert!(fused.fused_chains().iter().all(|c| c.fused_runs == 1));
        assert_close(
            &values(&fused_loss),
            &values(&unfused_loss),
            1e-5,
            1e-5,
            &format!("{what}: loss"),
        );
        fused_loss.backward().expect("backward (fused)");
        unfused_loss.backward().expect("backward (unfused)");
        for ((name, p), (_, q)) in fused_parameters.iter().zip(&unfused_parameters) {
            let fused_grad = p
                .grad()
                .unwrap_or_else(|| panic!("{what}: no gradient reached `{name}` (fused)"));
            let unfused_grad = q
                .grad()
                .unwrap_or_else(|| panic!("{what}: no gradient reached `{name}` (unfused)"));
            let (g, h) = (values(&fused_grad), values(&unfused_grad));
            assert!(
                g.iter().any(|v| v.abs() > 1e-7),
                "{what}: zero gradient for `{name}`"
            );
            let largest = g
                .iter()
                .zip(&h)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            eprintln!(
                "{what} on {}: gradient of `{name}`, largest |fused - unfused| = {largest:e}",
                device.description()
            );
            assert_close(&g, &h, 1e-4, 1e-3, &format!("{what}: gradient of `{name}`"));
        }
    }
}

anygrad_testing::device_tests!(
    residual_blocks_fuse,
    batch_norm_blocks_fuse,
    what_does_not_fuse,
    gradients_reach_the_initializers,
    autocast_chains_fuse,
    chains_in_a_subgraph,
);
