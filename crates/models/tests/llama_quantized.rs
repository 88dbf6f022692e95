//! A Llama whose GGUF weights are block-quantized (every format the loader keeps: Q8_0
//! embeddings, Q4_K query and key rows — moved back to Hugging Face's order as whole
//! quantized rows — and Q6_K, Q4_0, Q5_K, Q4_1, Q5_0/Q5_1 elsewhere), loaded with its weights
//! kept quantized and loaded dequantized to f32, on every device: the same logits, the same
//! greedy tokens, far less memory, and LoRA adapters that train over the quantized base.

mod gguf_support;

use anygrad_core::{DType, Device, QuantFormat, Tensor};
use anygrad_models::gguf::{GgmlType, GgufFile};
use anygrad_models::llama::{
    generate, gguf_name, GenerationOptions, LlamaConfig, LlamaForCausalLM, LoraConfig,
    ProjectionWeight, SamplingOptions, TokenEmbedding, WeightStorage,
};
use anygrad_nn::Module;
use anygrad_testing::{assert_close, pseudo_random, random_quantized_blocks, values};
use gguf_support::{f32_tensor, llama_gguf_of_tensors, parameter_shapes, StoredTensor};

/// Two layers whose matrices have whole 256-value blocks along their rows.
fn config() -> LlamaConfig {
    LlamaConfig {
        vocab_size: 96,
        hidden_size: 256,
        intermediate_size: 512,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 64,
        ..gguf_support::tiny_config()
    }
}

/// The block format each matrix is stored in.
fn format_of(name: &str, layer: usize) -> QuantFormat {
    let part = name.rsplit('.').nth(1).unwrap_or("");
    match part {
        "embed_tokens" => QuantFormat::Q8_0,
        "q_proj" | "k_proj" => QuantFormat::Q4K,
        "v_proj" | "lm_head" => QuantFormat::Q6K,
        "o_proj" => QuantFormat::Q4_0,
        "gate_proj" => QuantFormat::Q5K,
        "up_proj" => QuantFormat::Q4_1,
        _ if layer == 0 => QuantFormat::Q5_0,
        _ => QuantFormat::Q5_1,
    }
}

/// GGML's type id of a block format.
fn type_id(format: QuantFormat) -> u32 {
    (0..40)
        .find(|&id| GgmlType::from_id(id).quant_format() == Some(format))
        .expect("a GGML id")
}

/// The quantized model's GGUF bytes: norms F32 near 1, matrices random blocks.
fn quantized_gguf(config: &LlamaConfig) -> Vec<u8> {
    let tensors: Vec<StoredTensor> = parameter_shapes(config)
        .into_iter()
        .enumerate()
        .map(|(index, (name, shape))| {
            let stored = gguf_name(&name).expect("gguf name");
            if shape.len() == 1 {
                let values: Vec<f32> = pseudo_random(shape[0], index as u64)
                    .iter()
                    .map(|v| 1.0 + 0.2 * v)
                    .collect();
                return f32_tensor(&stored, &shape, &values);
            }
            let layer = name
                .split('.')
                .nth(2)
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            let format = format_of(&name, layer);
            // The K formats multiply `d` by 6-bit sub-block scales: smaller `d` keeps their
            // weights as small as the others' (attention that does not saturate).
            let scale = if format.block_values() == 256 {
                0.001
            } else {
                0.02
            };
            let bytes =
                random_quantized_blocks(format, [shape[0], shape[1]], scale, 100 + index as u64);
            StoredTensor {
                name: stored,
                dims: vec![shape[1] as u64, shape[0] as u64],
                type_id: type_id(format),
                bytes,
            }
        })
        .collect();
    llama_gguf_of_tensors(config, &tensors)
}

/// Both loads of one file.
fn both_models(device: &Device) -> (LlamaForCausalLM, LlamaForCausalLM) {
    let config = config();
    let file = GgufFile::parse(quantized_gguf(&config), "quantized.gguf").expect("parse");
    let quantized =
        LlamaForCausalLM::from_gguf_as(&file, device, WeightStorage::Quantized).expect("load");
    let dense = LlamaForCausalLM::from_gguf_as(&file, device, WeightStorage::F32).expect("load");
    (quantized, dense)
}

/// Quantized and dequantized loads give the same logits (prompt and cached steps) and the same
/// greedy tokens, with every matrix of the quantized load kept in its format.
fn quantized_weights_give_the_dequantized_logits(device: &Device) {
    let (quantized, dense) = both_models(device);
    assert!(matches!(
        quantized.model.embed_tokens,
        TokenEmbedding::Quantized(_)
    ));
    assert!(matches!(
        quantized.model.layers[0].self_attn.q_proj.base,
        ProjectionWeight::Quantized(_)
    ));
    assert!(matches!(
        dense.model.layers[0].self_attn.q_proj.base,
        ProjectionWeight::Dense(_)
    ));
    // Only the norms stay parameters of the quantized load.
    assert_eq!(quantized.parameters().len(), 2 * 2 + 1);
    let ids = Tensor::from_vec(vec![1i32, 17, 5, 90, 33, 2], &[1, 6], device).unwrap();
    let expected = values(&dense.forward(&ids).unwrap());
    let largest = expected.iter().fold(0f32, |a, v| a.max(v.abs()));
    assert!(largest > 0.1, "logits of size {largest}");
    let logits = quantized.forward(&ids).unwrap();
    assert_eq!(logits.shape(), &[1, 6, 96]);
    assert_close(
        &values(&logits),
        &expected,
        2e-5 * largest,
        1e-4,
        "quantized logits",
    );
    let options = GenerationOptions {
        max_new_tokens: 6,
        sampling: SamplingOptions::default(),
        stop_tokens: Vec::new(),
    };
    let prompt = [1u32, 17, 5];
    let from_dense = generate(&dense, &prompt, &options, &mut |_| Ok(())).unwrap();
    let from_quantized = generate(&quantized, &prompt, &options, &mut |_| Ok(())).unwrap();
    assert_eq!(from_quantized.generated_ids, from_dense.generated_ids);
}

/// The quantized matrices take their blocks' bytes, a fraction of their f32 bytes.
fn quantized_weights_take_their_block_bytes(device: &Device) {
    let (quantized, dense) = both_models(device);
    let layer = &quantized.model.layers[0];
    let q_bytes = layer.self_attn.q_proj.base.storage_bytes();
    // Q4_K: 144 bytes a 256-value block, plus one word of padding.
    assert_eq!(q_bytes, 256 * 144 + 4);
    let dense_bytes = dense.model.layers[0].self_attn.q_proj.base.storage_bytes();
    assert_eq!(dense_bytes, 256 * 256 * 4);
    let embed = quantized.model.embed_tokens.storage_bytes();
    assert!(
        embed < 96 * 256 * 4 / 3,
        "Q8_0 embeddings take {embed} bytes"
    );
}

/// LoRA adapters train over a quantized base: the base gets no gradient, the adapters do.
fn lora_trains_over_a_quantized_base(device: &Device) {
    let (mut quantized, _) = both_models(device);
    quantized
        .add_lora(&LoraConfig::new(4, 8.0, &["q_proj", "up_proj"]))
        .unwrap();
    let trainable = quantized.lora_parameters();
    assert_eq!(trainable.len(), 2 * 2 * 2);
    // B starts at zero: give it values so that A's gradient is not zero too.
    for (name, slot) in &trainable {
        if name.ends_with("lora_B.weight") {
            let shape = slot.shape();
            let count = shape.iter().product();
            let values = Tensor::from_vec(pseudo_random(count, 7), &shape, device).unwrap();
            slot.assign(&values.mul_scalar(0.01).unwrap()).unwrap();
        }
    }
    let ids = Tensor::from_vec(vec![3i32, 8, 13, 21], &[1, 4], device).unwrap();
    let loss = quantized
        .forward_train(&ids, false)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
        .pow_scalar(2.0)
        .unwrap()
        .mean_all()
        .unwrap();
    loss.backward().unwrap();
    for (name, slot) in &trainable {
        let grad = slot
            .grad()
            .unwrap_or_else(|| panic!("{name} has no gradient"));
        let largest = values(&grad).iter().fold(0f32, |a, v| a.max(v.abs()));
        assert!(largest > 0.0, "{name}: zero gradient");
    }
}

anygrad_testing::device_tests!(
    quantized_weights_give_the_dequantized_logits,
    quantized_weights_take_their_block_bytes,
    lora_trains_over_a_quantized_base,
);
