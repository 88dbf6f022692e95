//! Golden tests of the transformer pieces against PyTorch (`tests/golden/transformer.json`,
//! written by `scripts/golden/generate_transformer.py`): tanh GELU, RMSNorm, Embedding with
//! `padding_idx` (forward and gradients), and MultiheadAttention, TransformerEncoderLayer and
//! TransformerDecoderLayer in eval mode with PyTorch's weights loaded by name (outputs; the
//! attention weights too). Every test runs on the CPU and the GPU.

use anygrad_core::{DType, Device, Tensor};
use anygrad_nn::{
    DecoderMasks, Embedding, Module, MultiheadAttention, RMSNorm, TransformerActivation,
    TransformerDecoderLayer, TransformerEncoderLayer, TransformerLayerConfig,
};
use anygrad_testing::{assert_close, values};
use serde_json::Value;

const GOLDEN: &str = include_str!("golden/transformer.json");
const TOLERANCE: f32 = 1e-4;

fn golden() -> Value {
    serde_json::from_str(GOLDEN).expect("golden JSON")
}

fn load(record: &Value, device: &Device) -> Tensor {
    let shape: Vec<usize> = record["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data = record["data"].as_array().expect("data");
    match record["dtype"].as_str().expect("dtype") {
        "bool" => {
            let data: Vec<bool> = data.iter().map(|v| v.as_bool().expect("bool")).collect();
            Tensor::from_vec(data, &shape, device).expect("bool tensor")
        }
        "int32" => {
            let data: Vec<i32> = data
                .iter()
                .map(|v| v.as_i64().expect("int") as i32)
                .collect();
            Tensor::from_vec(data, &shape, device).expect("int tensor")
        }
        _ => {
            let data: Vec<f32> = data
                .iter()
                .map(|v| v.as_f64().map(|x| x as f32).unwrap_or(f32::NEG_INFINITY))
                .collect();
            Tensor::from_vec(data, &shape, device).expect("float tensor")
        }
    }
}

fn expected(record: &Value) -> Vec<f32> {
    values(&load(record, &Device::Cpu))
}

fn optional(record: &Value, device: &Device) -> Option<Tensor> {
    (!record.is_null()).then(|| load(record, device))
}

/// Copies every tensor of the golden state dict into the module, by PyTorch's names, and checks
/// that the module has no tensor the file lacks.
fn load_state<M: Module>(module: &M, state: &Value, device: &Device) {
    let state = state.as_object().expect("state dict");
    let ours = module.state_dict();
    assert_eq!(ours.len(), state.len(), "state dict sizes differ");
    for (name, tensor) in ours {
        let record = state
            .get(&name)
            .unwrap_or_else(|| panic!("PyTorch's state dict has no {name}"));
        tensor
            .assign(&load(record, device))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

fn gelu_tanh(device: &Device) {
    let case = &golden()["gelu_tanh"];
    let x = load(&case["x"], device).requires_grad_(true);
    let y = x.gelu_tanh().expect("gelu_tanh");
    assert_close(
        &values(&y),
        &expected(&case["y"]),
        TOLERANCE,
        TOLERANCE,
        "gelu_tanh",
    );
    y.mul(&load(&case["w"], device))
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    let grad = x.grad().expect("grad");
    assert_close(
        &values(&grad),
        &expected(&case["grad_x"]),
        TOLERANCE,
        TOLERANCE,
        "grad",
    );
    let module = anygrad_nn::GELU {
        tanh_approximation: true,
    };
    let again = module.forward(&x.detach()).expect("module");
    assert_close(
        &values(&again),
        &expected(&case["y"]),
        TOLERANCE,
        TOLERANCE,
        "module",
    );
}

fn rms_norm(device: &Device) {
    let case = &golden()["rms_norm"];
    let norm = RMSNorm::new(&[4], device).expect("RMSNorm");
    load_state(&norm, &case["state"], device);
    let x = load(&case["x"], device).requires_grad_(true);
    let y = norm.forward(&x).expect("forward");
    assert_close(
        &values(&y),
        &expected(&case["y"]),
        TOLERANCE,
        TOLERANCE,
        "output",
    );
    y.mul(&load(&case["w"], device))
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    assert_close(
        &values(&x.grad().expect("x grad")),
        &expected(&case["grad_x"]),
        TOLERANCE,
        TOLERANCE,
        "grad x",
    );
    let weight = norm.weight.as_ref().expect("affine");
    assert_close(
        &values(&weight.grad().expect("weight grad")),
        &expected(&case["grad_weight"]),
        TOLERANCE,
        TOLERANCE,
        "grad weight",
    );
}

fn embedding_padding_idx(device: &Device) {
    let case = &golden()["embedding_padding"];
    let embedding = Embedding::with_padding_idx(6, 3, 2, device).expect("embedding");
    let initial = values(&embedding.weight.tensor());
    assert_eq!(
        &initial[6..9],
        &[0.0, 0.0, 0.0],
        "the padding row starts at zero"
    );
    load_state(&embedding, &case["state"], device);
    let y = embedding
        .forward(&load(&case["ids"], device))
        .expect("forward");
    assert_close(
        &values(&y),
        &expected(&case["y"]),
        TOLERANCE,
        TOLERANCE,
        "output",
    );
    y.mul(&load(&case["w"], device))
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .expect("backward");
    assert_close(
        &values(&embedding.weight.grad().expect("grad")),
        &expected(&case["grad_weight"]),
        TOLERANCE,
        TOLERANCE,
        "grad weight (padding row zero)",
    );
    assert!(Embedding::with_padding_idx(6, 3, 6, device).is_err());
}

fn multihead_attention(device: &Device) {
    let case = &golden()["multihead_attention"];
    let attention = MultiheadAttention::new(8, 2, 0.0, true, false, device).expect("mha");
    load_state(&attention, &case["state"], device);
    attention.eval();
    let query = load(&case["query"], device);
    let key = load(&case["key"], device);
    let (y, weights) = attention
        .forward_attention(
            &query,
            &key,
            &key,
            optional(&case["key_padding_mask"], device).as_ref(),
            optional(&case["attn_mask"], device).as_ref(),
            true,
        )
        .expect("forward");
    assert_close(
        &values(&y),
        &expected(&case["y"]),
        TOLERANCE,
        TOLERANCE,
        "output",
    );
    assert_close(
        &values(&weights.expect("weights")),
        &expected(&case["weights"]),
        TOLERANCE,
        TOLERANCE,
        "weights",
    );
}

fn config(case: &Value) -> TransformerLayerConfig {
    TransformerLayerConfig {
        dim_feedforward: 16,
        activation: if case["gelu"].as_bool().expect("gelu") {
            TransformerActivation::Gelu
        } else {
            TransformerActivation::Relu
        },
        batch_first: case["batch_first"].as_bool().expect("batch_first"),
        norm_first: case["norm_first"].as_bool().expect("norm_first"),
        ..TransformerLayerConfig::new(8, 2)
    }
}

fn transformer_layers(device: &Device) {
    for case in golden()["layers"].as_array().expect("layers") {
        let name = case["name"].as_str().expect("name");
        let y = if case["kind"] == "encoder" {
            let layer = TransformerEncoderLayer::new(config(case), device).expect("encoder");
            load_state(&layer, &case["state"], device);
            layer.eval();
            layer.forward_with_mask(
                &load(&case["src"], device),
                optional(&case["src_mask"], device).as_ref(),
                optional(&case["src_key_padding_mask"], device).as_ref(),
            )
        } else {
            let layer = TransformerDecoderLayer::new(config(case), device).expect("decoder");
            load_state(&layer, &case["state"], device);
            layer.eval();
            let tgt_mask = optional(&case["tgt_mask"], device);
            let memory_padding = optional(&case["memory_key_padding_mask"], device);
            layer.forward_with_memory(
                &load(&case["tgt"], device),
                &load(&case["memory"], device),
                DecoderMasks {
                    tgt_mask: tgt_mask.as_ref(),
                    memory_key_padding_mask: memory_padding.as_ref(),
                    ..DecoderMasks::default()
                },
            )
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(
            &values(&y),
            &expected(&case["y"]),
            TOLERANCE,
            TOLERANCE,
            name,
        );
    }
}

anygrad_testing::device_tests!(
    gelu_tanh,
    rms_norm,
    embedding_padding_idx,
    multihead_attention,
    transformer_layers
);

#[test]
fn bad_attention_inputs_are_errors() {
    let device = Device::Cpu;
    assert!(MultiheadAttention::new(8, 3, 0.0, true, false, &device).is_err());
    let attention = MultiheadAttention::new(8, 2, 0.0, true, true, &device).expect("mha");
    let x = Tensor::randn(&[2, 5, 8], DType::F32, &device).expect("x");
    let wrong = Tensor::randn(&[2, 5, 6], DType::F32, &device).expect("wrong");
    let error = attention
        .forward_attention(&x, &wrong, &wrong, None, None, false)
        .expect_err("mismatched embed");
    assert!(error.to_string().contains("MultiheadAttention"), "{error}");
    let padding = Tensor::zeros(&[2, 4], DType::Bool, &device).expect("padding");
    assert!(attention
        .forward_attention(&x, &x, &x, Some(&padding), None, false)
        .is_err());
    let decoder =
        TransformerDecoderLayer::new(TransformerLayerConfig::new(8, 2), &device).expect("decoder");
    assert!(decoder.forward(&x).is_err());
}
