//! Test support for the GGUF tests: a minimal GGUF v3 writer (metadata of every value type,
//! tensors of any stored bytes, alignment) and a tiny random Llama's weights written as a
//! llama.cpp-style GGUF (query/key rows permuted, llama.cpp names, `llama.*` metadata).

#![allow(dead_code)]

use anygrad_core::{Device, Result, Tensor};
use anygrad_models::llama::{permute_rows, LlamaConfig, LlamaForCausalLM, RopeScaling, Weight};
use anygrad_testing::pseudo_random;

/// A metadata value to write.
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    /// Element type tag and elements.
    Array(u32, Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Value {
    pub fn tag(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::Str(_) => 8,
            Value::Array(..) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Value::U8(v) => out.push(*v),
            Value::I8(v) => out.push(*v as u8),
            Value::U16(v) => out.extend(v.to_le_bytes()),
            Value::I16(v) => out.extend(v.to_le_bytes()),
            Value::U32(v) => out.extend(v.to_le_bytes()),
            Value::I32(v) => out.extend(v.to_le_bytes()),
            Value::F32(v) => out.extend(v.to_le_bytes()),
            Value::Bool(v) => out.push(*v as u8),
            Value::Str(s) => write_string(out, s),
            Value::Array(tag, values) => {
                out.extend(tag.to_le_bytes());
                out.extend((values.len() as u64).to_le_bytes());
                for v in values {
                    v.write(out);
                }
            }
            Value::U64(v) => out.extend(v.to_le_bytes()),
            Value::I64(v) => out.extend(v.to_le_bytes()),
            Value::F64(v) => out.extend(v.to_le_bytes()),
        }
    }
}

pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A tensor to write: name, GGML dims (innermost first), type id, stored bytes.
pub struct StoredTensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub type_id: u32,
    pub bytes: Vec<u8>,
}

/// A GGUF v3 file of `metadata` and `tensors`, data aligned to `alignment`.
pub fn write_gguf(
    metadata: &[(&str, Value)],
    tensors: &[StoredTensor],
    alignment: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(b"GGUF");
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend((metadata.len() as u64).to_le_bytes());
    for (key, value) in metadata {
        write_string(&mut out, key);
        out.extend(value.tag().to_le_bytes());
        value.write(&mut out);
    }
    let mut offset = 0usize;
    let mut offsets = Vec::new();
    for tensor in tensors {
        write_string(&mut out, &tensor.name);
        out.extend((tensor.dims.len() as u32).to_le_bytes());
        for d in &tensor.dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(tensor.type_id.to_le_bytes());
        out.extend((offset as u64).to_le_bytes());
        offsets.push(offset);
        offset = (offset + tensor.bytes.len()).div_ceil(alignment) * alignment;
    }
    let data_start = out.len().div_ceil(alignment) * alignment;
    out.resize(data_start, 0);
    for (tensor, offset) in tensors.iter().zip(offsets) {
        out.resize(data_start + offset, 0);
        out.extend(&tensor.bytes);
    }
    out
}

/// f32 values as F32 tensor bytes.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// An f32 tensor of a row-major `shape`.
pub fn f32_tensor(name: &str, shape: &[usize], values: &[f32]) -> StoredTensor {
    StoredTensor {
        name: name.to_string(),
        dims: shape.iter().rev().map(|&d| d as u64).collect(),
        type_id: 0,
        bytes: f32_bytes(values),
    }
}

/// A tiny Llama configuration: 2 layers, hidden 16, 4 query heads over 2 key/value heads.
pub fn tiny_config() -> LlamaConfig {
    LlamaConfig {
        vocab_size: 40,
        hidden_size: 16,
        intermediate_size: 24,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 4,
        max_position_embeddings: 64,
        rope_theta: 10000.0,
        rope_scaling: RopeScaling::None,
        rotary_dim: 4,
        rms_norm_eps: 1e-5,
        tie_word_embeddings: false,
        bos_token_id: Some(1),
        eos_token_ids: vec![2],
    }
}

/// The parameter names and shapes of a Llama configuration, in build order.
pub fn parameter_shapes(config: &LlamaConfig) -> Vec<(String, Vec<usize>)> {
    let c = config;
    let (h, d) = (c.hidden_size, c.head_dim);
    let mut out = Vec::new();
    for i in 0..c.num_hidden_layers {
        let p = format!("model.layers.{i}");
        out.push((
            format!("{p}.self_attn.q_proj.weight"),
            vec![c.num_attention_heads * d, h],
        ));
        out.push((
            format!("{p}.self_attn.k_proj.weight"),
            vec![c.num_key_value_heads * d, h],
        ));
        out.push((
            format!("{p}.self_attn.v_proj.weight"),
            vec![c.num_key_value_heads * d, h],
        ));
        out.push((
            format!("{p}.self_attn.o_proj.weight"),
            vec![h, c.num_attention_heads * d],
        ));
        out.push((
            format!("{p}.mlp.gate_proj.weight"),
            vec![c.intermediate_size, h],
        ));
        out.push((
            format!("{p}.mlp.up_proj.weight"),
            vec![c.intermediate_size, h],
        ));
        out.push((
            format!("{p}.mlp.down_proj.weight"),
            vec![h, c.intermediate_size],
        ));
        out.push((format!("{p}.input_layernorm.weight"), vec![h]));
        out.push((format!("{p}.post_attention_layernorm.weight"), vec![h]));
    }
    out.push(("model.norm.weight".into(), vec![h]));
    out.push(("model.embed_tokens.weight".into(), vec![c.vocab_size, h]));
    if !c.tie_word_embeddings {
        out.push(("lm_head.weight".into(), vec![c.vocab_size, h]));
    }
    out
}

/// Deterministic weights of a configuration: name → values (norm weights near 1).
pub fn random_weights(config: &LlamaConfig, seed: u64) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    parameter_shapes(config)
        .into_iter()
        .enumerate()
        .map(|(index, (name, shape))| {
            let count = shape.iter().product();
            let mut values = pseudo_random(count, seed + index as u64 * 101);
            if name.ends_with("norm.weight") {
                values.iter_mut().for_each(|v| *v = 1.0 + 0.25 * *v);
            } else {
                values.iter_mut().for_each(|v| *v *= 0.5);
            }
            (name, shape, values)
        })
        .collect()
}

/// The model of `weights` on `device`.
pub fn model_from(
    config: &LlamaConfig,
    weights: &[(String, Vec<usize>, Vec<f32>)],
    device: &Device,
) -> Result<LlamaForCausalLM> {
    let mut fetch = |name: &str, shape: &[usize]| -> Result<Weight> {
        let (_, stored_shape, values) = weights
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no weight {name}"));
        assert_eq!(stored_shape.as_slice(), shape, "{name}");
        Ok(Weight::Dense(Tensor::from_vec(
            values.clone(),
            shape,
            device,
        )?))
    };
    LlamaForCausalLM::from_weights(config, &mut fetch)
}

/// `weights` as a llama.cpp-style GGUF: llama.cpp names, query/key rows permuted for
/// interleaved RoPE, `llama.*` metadata, F32 tensors.
pub fn llama_gguf(config: &LlamaConfig, weights: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let c = config;
    let tensors: Vec<StoredTensor> = weights
        .iter()
        .map(|(name, shape, values)| {
            let stored = anygrad_models::llama::gguf_name(name).expect("gguf name");
            let values = if name.ends_with("q_proj.weight") {
                permute_rows(values, c.num_attention_heads, c.head_dim, shape[1]).expect("permute")
            } else if name.ends_with("k_proj.weight") {
                permute_rows(values, c.num_key_value_heads, c.head_dim, shape[1]).expect("permute")
            } else {
                values.clone()
            };
            f32_tensor(&stored, shape, &values)
        })
        .collect();
    llama_gguf_of_tensors(config, &tensors)
}

/// A llama.cpp-style GGUF of `config`'s `llama.*` metadata and the stored `tensors`.
pub fn llama_gguf_of_tensors(config: &LlamaConfig, tensors: &[StoredTensor]) -> Vec<u8> {
    let c = config;
    let metadata = vec![
        ("general.architecture", Value::Str("llama".into())),
        ("general.alignment", Value::U32(64)),
        (
            "llama.context_length",
            Value::U32(c.max_position_embeddings as u32),
        ),
        ("llama.embedding_length", Value::U32(c.hidden_size as u32)),
        ("llama.block_count", Value::U32(c.num_hidden_layers as u32)),
        (
            "llama.feed_forward_length",
            Value::U32(c.intermediate_size as u32),
        ),
        (
            "llama.attention.head_count",
            Value::U32(c.num_attention_heads as u32),
        ),
        (
            "llama.attention.head_count_kv",
            Value::U32(c.num_key_value_heads as u32),
        ),
        ("llama.rope.freq_base", Value::F32(c.rope_theta as f32)),
        (
            "llama.attention.layer_norm_rms_epsilon",
            Value::F32(c.rms_norm_eps as f32),
        ),
        ("llama.vocab_size", Value::U32(c.vocab_size as u32)),
        ("tokenizer.ggml.bos_token_id", Value::U32(1)),
        ("tokenizer.ggml.eos_token_id", Value::U32(2)),
    ];
    write_gguf(&metadata, tensors, 64)
}
