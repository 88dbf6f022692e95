//! The spatial layers of issue 15 against PyTorch on every device: `ConvTranspose2d`,
//! `Conv1d`, `interpolate`/`Upsample`, `AdaptiveMaxPool2d` (values, indices, gradients to the
//! first maximum with ties) and `GroupNorm`, outputs and the gradients of
//! `sum(output * upstream)` for every input and parameter, from
//! `tests/golden/spatial_layers.json` (written by `scripts/golden/generate_spatial_layers.py`).
//! Beside the goldens: `Dropout2d`'s channel structure and scaling, PyTorch's parameter names,
//! and bad input reported as errors.

use anygrad_core::{
    Conv1dParams, ConvTranspose2dParams, Device, Error, InterpolateMode, InterpolateSize, Tensor,
};
use anygrad_nn::*;
use anygrad_testing::assert_close;
use serde_json::Value;

const TOL: f32 = 1e-4;

fn golden_cases(op: &str) -> Vec<Value> {
    let all: Value =
        serde_json::from_str(include_str!("golden/spatial_layers.json")).expect("golden json");
    let cases: Vec<Value> = all["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["op"] == op)
        .cloned()
        .collect();
    assert!(!cases.is_empty(), "no golden cases for {op}");
    cases
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

fn pair(v: &Value) -> (usize, usize) {
    (
        v[0].as_u64().expect("int") as usize,
        v[1].as_u64().expect("int") as usize,
    )
}

/// The case's inputs on `device`, tracked.
fn inputs(case: &Value, device: &Device) -> Vec<Tensor> {
    case["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|v| {
            Tensor::from_vec(floats(v), &shape_of(v), device)
                .expect("tensor")
                .requires_grad_(true)
        })
        .collect()
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

/// Compare the output, then backpropagate `upstream` and compare each of `leaves`' gradients.
fn check_with_grads(case: &Value, output: &Tensor, leaves: &[Tensor], device: &Device) {
    let name = case["name"].as_str().expect("name");
    check(output, &case["output"], &format!("{name} output"));
    let upstream = Tensor::from_vec(
        floats(&case["upstream"]),
        &shape_of(&case["upstream"]),
        device,
    )
    .expect("upstream");
    output
        .mul(&upstream)
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    let grads = case["grads"].as_array().expect("grads");
    assert_eq!(grads.len(), leaves.len(), "{name}: gradient count");
    for (i, (leaf, expected)) in leaves.iter().zip(grads).enumerate() {
        let grad = leaf
            .grad()
            .unwrap_or_else(|| panic!("{name}: no gradient for input {i}"));
        check(&grad, expected, &format!("{name} gradient of input {i}"));
    }
}

/// The input followed by the layer's parameters (in PyTorch's order: weight, bias), whose
/// gradients the goldens hold.
fn parameter_leaves(input: &Tensor, layer: &dyn Module) -> Vec<Tensor> {
    let mut leaves = vec![input.clone()];
    leaves.extend(layer.parameters());
    leaves
}

fn conv_transpose2d_and_conv1d_match_pytorch(device: &Device) {
    for case in golden_cases("conv_transpose2d") {
        let config = &case["config"];
        let params = ConvTranspose2dParams {
            stride: pair(&config["stride"]),
            padding: pair(&config["padding"]),
            output_padding: pair(&config["output_padding"]),
            dilation: pair(&config["dilation"]),
            groups: config["groups"].as_u64().expect("groups") as usize,
        };
        let tensors = inputs(&case, device);
        let layer = ConvTranspose2d::from_tensors(
            tensors[1].clone(),
            Some(tensors[2].clone()),
            ConvTranspose2dOptions { params, bias: true },
        );
        let output = layer.forward(&tensors[0]).expect("forward");
        let leaves = parameter_leaves(&tensors[0], &layer);
        check_with_grads(&case, &output, &leaves, device);
    }
    for case in golden_cases("conv1d") {
        let config = &case["config"];
        let int = |key: &str| config[key].as_u64().expect(key) as usize;
        let params = Conv1dParams {
            stride: int("stride"),
            padding: int("padding"),
            dilation: int("dilation"),
            groups: int("groups"),
        };
        let tensors = inputs(&case, device);
        let layer = Conv1d::from_tensors(tensors[1].clone(), Some(tensors[2].clone()), params);
        let output = layer.forward(&tensors[0]).expect("forward");
        let leaves = parameter_leaves(&tensors[0], &layer);
        check_with_grads(&case, &output, &leaves, device);
    }
}

fn interpolate_matches_pytorch(device: &Device) {
    for case in golden_cases("interpolate") {
        let config = &case["config"];
        let mode = match config["mode"].as_str().expect("mode") {
            "nearest" => InterpolateMode::Nearest,
            _ => InterpolateMode::Bilinear {
                align_corners: config["align_corners"].as_bool().expect("align_corners"),
            },
        };
        let size = if config["size"].is_array() {
            let (h, w) = pair(&config["size"]);
            InterpolateSize::Size(h, w)
        } else {
            let scale = &config["scale"];
            InterpolateSize::Scale(
                scale[0].as_f64().expect("scale"),
                scale[1].as_f64().expect("scale"),
            )
        };
        let tensors = inputs(&case, device);
        let output = Upsample::new(size, mode)
            .forward(&tensors[0])
            .expect("interpolate");
        check_with_grads(&case, &output, &tensors, device);
    }
}

fn adaptive_max_pool2d_matches_pytorch(device: &Device) {
    for case in golden_cases("adaptive_max_pool2d") {
        let name = case["name"].as_str().expect("name");
        let pool = AdaptiveMaxPool2d::new(pair(&case["config"]["output_size"]));
        let tensors = inputs(&case, device);
        let (values, indices) = pool.forward_with_indices(&tensors[0]).expect("pool");
        let expected_indices: Vec<i32> = case["extra"][0]["data"]
            .as_array()
            .expect("indices")
            .iter()
            .map(|v| v.as_i64().expect("index") as i32)
            .collect();
        assert_eq!(
            indices.to_vec::<i32>().expect("indices"),
            expected_indices,
            "{name}: indices"
        );
        check_with_grads(&case, &values, &tensors, device);
    }
}

fn group_norm_matches_pytorch(device: &Device) {
    for case in golden_cases("group_norm") {
        let config = &case["config"];
        let groups = config["num_groups"].as_u64().expect("groups") as usize;
        let eps = config["eps"].as_f64().expect("eps");
        let tensors = inputs(&case, device);
        let channels = tensors[0].shape()[1];
        let affine = tensors.len() == 3;
        let mut layer =
            GroupNorm::with_affine(groups, channels, eps, affine, device).expect("GroupNorm");
        if affine {
            layer.weight = Some(Parameter::new(tensors[1].clone()));
            layer.bias = Some(Parameter::new(tensors[2].clone()));
        }
        let output = layer.forward(&tensors[0]).expect("forward");
        let leaves = parameter_leaves(&tensors[0], &layer);
        check_with_grads(&case, &output, &leaves, device);
    }
}

fn dropout2d_drops_whole_channels(device: &Device) {
    anygrad_core::manual_seed(7);
    let x = Tensor::ones(&[8, 16, 3, 4], anygrad_core::DType::F32, device)
        .expect("ones")
        .requires_grad_(true);
    let layer = Dropout2d::new(0.5).expect("Dropout2d");
    let y = layer.forward(&x).expect("forward");
    let values = y.to_vec_f32().expect("readback");
    let mut dropped = 0;
    for channel in values.chunks(12) {
        assert!(
            channel.iter().all(|&v| v == channel[0]),
            "a channel is dropped or kept whole"
        );
        assert!(
            channel[0] == 0.0 || channel[0] == 2.0,
            "kept channels scale by 2"
        );
        dropped += usize::from(channel[0] == 0.0);
    }
    assert!(
        (16..=112).contains(&dropped),
        "about half of 128 channels dropped, got {dropped}"
    );
    y.sum_all().and_then(|t| t.backward()).expect("backward");
    let grad = x.grad().expect("gradient").to_vec_f32().expect("readback");
    assert_eq!(grad, values, "the gradient of sum is the mask");
    layer.set_training(false);
    let eval = layer.forward(&x).expect("eval");
    assert_eq!(eval.to_vec_f32().expect("readback"), vec![1.0; 8 * 16 * 12]);
}

fn parameter_names_follow_pytorch(device: &Device) {
    let names = |m: &dyn Module| -> Vec<(String, Vec<usize>)> {
        m.named_parameters()
            .into_iter()
            .map(|(n, t)| (n, t.shape().to_vec()))
            .collect()
    };
    let transposed = ConvTranspose2d::new(
        4,
        6,
        (3, 2),
        ConvTranspose2dOptions::default().groups(2),
        device,
    )
    .expect("ConvTranspose2d");
    assert_eq!(
        names(&transposed),
        vec![
            ("weight".to_string(), vec![4, 3, 3, 2]),
            ("bias".to_string(), vec![6])
        ]
    );
    let conv1d = Conv1d::new(4, 6, 5, Conv1dParams::default(), false, device).expect("Conv1d");
    assert_eq!(names(&conv1d), vec![("weight".to_string(), vec![6, 4, 5])]);
    let norm = GroupNorm::new(2, 6, device).expect("GroupNorm");
    assert_eq!(
        names(&norm),
        vec![
            ("weight".to_string(), vec![6]),
            ("bias".to_string(), vec![6])
        ]
    );
    // PyTorch's bound: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = (out / groups) * kh * kw.
    let bound = 1.0 / ((3 * 3 * 2) as f32).sqrt();
    let weights = transposed.weight.tensor().to_vec_f32().expect("readback");
    assert!(weights.iter().all(|w| w.abs() <= bound));
}

fn bad_input_is_an_error(device: &Device) {
    let x = Tensor::zeros(&[1, 4, 5, 5], anygrad_core::DType::F32, device).expect("zeros");
    let w = Tensor::zeros(&[3, 2, 3, 3], anygrad_core::DType::F32, device).expect("zeros");
    let message = |r: anygrad_core::Result<Tensor>| match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("expected an error"),
    };
    assert!(
        message(x.conv_transpose2d(&w, None, ConvTranspose2dParams::default()))
            .contains("conv_transpose2d")
    );
    let outpad = ConvTranspose2dParams {
        output_padding: (1, 1),
        ..Default::default()
    };
    let w4 = Tensor::zeros(&[4, 2, 3, 3], anygrad_core::DType::F32, device).expect("zeros");
    assert!(message(x.conv_transpose2d(&w4, None, outpad)).contains("output_padding"));
    assert!(matches!(
        ConvTranspose2d::new(
            4,
            6,
            (3, 3),
            ConvTranspose2dOptions::default().groups(4),
            device
        ),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(
        message(x.interpolate(InterpolateSize::Size(0, 3), InterpolateMode::Nearest))
            .contains("interpolate")
    );
    assert!(
        message(x.interpolate(InterpolateSize::Scale(-1.0, 2.0), InterpolateMode::Nearest))
            .contains("interpolate")
    );
    assert!(x.adaptive_max_pool2d((0, 2)).is_err());
    assert!(message(x.group_norm(3, None, None, 1e-5)).contains("group_norm"));
    assert!(GroupNorm::new(3, 4, device).is_err());
    assert!(message(x.dropout2d(1.5, true)).contains("dropout2d"));
    let line = Tensor::zeros(&[1, 4, 5], anygrad_core::DType::F32, device).expect("zeros");
    let kernel = Tensor::zeros(&[2, 3, 3], anygrad_core::DType::F32, device).expect("zeros");
    assert!(message(line.conv1d(&kernel, None, Conv1dParams::default())).contains("conv1d"));
}

anygrad_testing::device_tests!(
    conv_transpose2d_and_conv1d_match_pytorch,
    interpolate_matches_pytorch,
    adaptive_max_pool2d_matches_pytorch,
    group_norm_matches_pytorch,
    dropout2d_drops_whole_channels,
    parameter_names_follow_pytorch,
    bad_input_is_an_error,
);
