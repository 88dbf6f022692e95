//! A tiny random Llama (2 layers, hidden 16, 4 query heads over 2 key/value heads) on the CPU
//! and the GPU: the KV-cached decode (prefill, chunks, one token at a time) equals the full
//! recomputation; grouped-query attention equals multi-head attention with the key/value
//! heads repeated; RoPE equals a hand computation; the model written as a llama.cpp GGUF
//! (query/key rows permuted, llama.cpp names) loads back to the same logits; generation and
//! sampling behave. With `ANYGRAD_SMOLLM2_GGUF=PATH` (SmolLM2-135M-Instruct Q4_1), greedy
//! generation is compared with token ids recorded from `transformers`.

mod gguf_support;

use anygrad_core::{DType, Device, Tensor};
use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{
    apply_rotary, cos_sin, generate, permute_rows, unpermute_rows, GenerationOptions, LlamaConfig,
    LlamaForCausalLM, Sampler, SamplingOptions,
};
use anygrad_testing::{assert_close, device_tests, values};
use gguf_support::{llama_gguf, model_from, random_weights, tiny_config};

const TOKENS: [i32; 7] = [3, 17, 5, 39, 0, 22, 8];

fn ids(tokens: &[i32], device: &Device) -> Tensor {
    Tensor::from_vec(tokens.to_vec(), &[1, tokens.len()], device).expect("ids")
}

fn full_logits(model: &LlamaForCausalLM, device: &Device) -> Vec<f32> {
    values(&model.forward(&ids(&TOKENS, device)).expect("forward"))
}

fn kv_cache_decode_matches_full_recomputation(device: &Device) {
    let config = tiny_config();
    let model = model_from(&config, &random_weights(&config, 7), device).expect("model");
    let full = full_logits(&model, device);
    let vocab = config.vocab_size;
    // Prefill 3, a chunk of 2 (masked against the cache), then one token at a time.
    let mut cache = model.new_cache();
    let mut pieces = Vec::new();
    for range in [0..3, 3..5, 5..6, 6..7] {
        let logits = model
            .forward_with_cache(&ids(&TOKENS[range], device), &mut cache)
            .expect("cached forward");
        pieces.extend(values(&logits));
    }
    assert_eq!(cache.len(), TOKENS.len());
    assert_close(&pieces, &full, 1e-4, 1e-4, "cached vs full logits");
    // next_token_logits is the last row.
    let mut cache = model.new_cache();
    let last = model
        .next_token_logits(&ids(&TOKENS, device), &mut cache)
        .expect("next token");
    assert_eq!(last.shape(), &[1, vocab]);
    assert_close(
        &values(&last),
        &full[full.len() - vocab..],
        1e-4,
        1e-4,
        "last row",
    );
}

fn grouped_query_attention_equals_repeated_heads(device: &Device) {
    let config = tiny_config();
    let weights = random_weights(&config, 11);
    let grouped = model_from(&config, &weights, device).expect("grouped");
    // The same model with each key/value head repeated for its query heads.
    let group = config.num_attention_heads / config.num_key_value_heads;
    let rows = config.head_dim * config.hidden_size;
    let repeated: Vec<_> = weights
        .iter()
        .map(|(name, shape, values)| {
            if name.ends_with("k_proj.weight") || name.ends_with("v_proj.weight") {
                let mut out = Vec::new();
                for head in values.chunks(rows) {
                    for _ in 0..group {
                        out.extend_from_slice(head);
                    }
                }
                (name.clone(), vec![shape[0] * group, shape[1]], out)
            } else {
                (name.clone(), shape.clone(), values.clone())
            }
        })
        .collect();
    let multi_head = LlamaConfig {
        num_key_value_heads: config.num_attention_heads,
        ..config.clone()
    };
    let multi_head = model_from(&multi_head, &repeated, device).expect("multi-head");
    assert_close(
        &full_logits(&grouped, device),
        &full_logits(&multi_head, device),
        1e-4,
        1e-4,
        "GQA vs repeated heads",
    );
}

fn rope_matches_hand_computation(device: &Device) {
    let (head_dim, theta, start, count) = (6usize, 500.0f64, 3usize, 4usize);
    let x: Vec<f32> = (0..count * head_dim)
        .map(|i| (i as f32 * 0.37).sin())
        .collect();
    let (cos, sin) = cos_sin(head_dim, theta, start, count, device).expect("tables");
    let input = Tensor::from_vec(x.clone(), &[1, 1, count, head_dim], device).expect("x");
    let rotated = values(&apply_rotary(&input, &cos, &sin).expect("rope"));
    let half = head_dim / 2;
    let mut expected = vec![0f32; x.len()];
    for t in 0..count {
        let position = (start + t) as f64;
        for i in 0..half {
            let angle = position / theta.powf(2.0 * i as f64 / head_dim as f64);
            let (a, b) = (
                x[t * head_dim + i] as f64,
                x[t * head_dim + i + half] as f64,
            );
            expected[t * head_dim + i] = (a * angle.cos() - b * angle.sin()) as f32;
            expected[t * head_dim + i + half] = (b * angle.cos() + a * angle.sin()) as f32;
        }
    }
    assert_close(&rotated, &expected, 1e-5, 1e-5, "RoPE");
}

fn gguf_round_trip_gives_the_same_logits(device: &Device) {
    let config = tiny_config();
    let weights = random_weights(&config, 5);
    let direct = model_from(&config, &weights, device).expect("direct");
    let file = GgufFile::parse(llama_gguf(&config, &weights), "tiny.gguf").expect("parse");
    // The file stores the epsilon as f32.
    let stored = LlamaConfig {
        rms_norm_eps: config.rms_norm_eps as f32 as f64,
        ..config.clone()
    };
    assert_eq!(LlamaConfig::from_gguf(&file).expect("config"), stored);
    let loaded = LlamaForCausalLM::from_gguf(&file, device).expect("from_gguf");
    assert_close(
        &full_logits(&loaded, device),
        &full_logits(&direct, device),
        1e-5,
        1e-5,
        "GGUF-loaded vs direct",
    );
}

fn greedy_generation_follows_the_argmax(device: &Device) {
    let config = tiny_config();
    let model = model_from(&config, &random_weights(&config, 3), device).expect("model");
    let options = GenerationOptions {
        max_new_tokens: 5,
        sampling: SamplingOptions::default(),
        stop_tokens: vec![],
    };
    let prompt = [3u32, 17, 5];
    let mut streamed = Vec::new();
    let output = generate(&model, &prompt, &options, &mut |t| {
        streamed.push(t);
        Ok(())
    })
    .expect("generate");
    assert_eq!(output.generated_ids, streamed);
    assert_eq!(output.generated_ids.len(), 5);
    // Each generated token is the argmax of a full recomputation over everything before it.
    let mut sequence: Vec<i32> = prompt.iter().map(|&t| t as i32).collect();
    for &token in &output.generated_ids {
        let logits = values(&model.forward(&ids(&sequence, device)).expect("forward"));
        let last = &logits[logits.len() - config.vocab_size..];
        let best = (0..last.len())
            .max_by(|&a, &b| last[a].total_cmp(&last[b]).then(b.cmp(&a)))
            .expect("logits");
        assert_eq!(token as usize, best);
        sequence.push(token as i32);
    }
}

device_tests!(
    kv_cache_decode_matches_full_recomputation,
    grouped_query_attention_equals_repeated_heads,
    rope_matches_hand_computation,
    gguf_round_trip_gives_the_same_logits,
    greedy_generation_follows_the_argmax,
);

#[test]
fn permutation_matches_llama_cpp_converter() {
    // llama.cpp's converter: w.reshape(heads, 2, d/2, cols).swapaxes(1, 2).reshape(w.shape):
    // for one head of size 4 the stored rows are HF rows 0, 2, 1, 3.
    let rows: Vec<f32> = (0..8).map(|r| r as f32).collect(); // 2 heads x 4 rows x 1 column
    let stored = permute_rows(&rows, 2, 4, 1).expect("permute");
    assert_eq!(stored, [0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]);
    assert_eq!(unpermute_rows(&stored, 2, 4, 1).expect("unpermute"), rows);
    assert!(permute_rows(&rows, 2, 4, 2).is_err());
    assert!(unpermute_rows(&rows, 1, 7, 1).is_err());
}

#[test]
fn sampling_options() {
    let logits = [0.5f32, 3.0, -1.0, 2.9];
    let mut greedy = Sampler::new(SamplingOptions::default()).expect("sampler");
    assert_eq!(greedy.sample(&logits, &[]).expect("sample"), 1);
    // The repetition penalty divides the positive logit of a seen token.
    let mut penalized = Sampler::new(SamplingOptions {
        repetition_penalty: 1.5,
        ..SamplingOptions::default()
    })
    .expect("sampler");
    assert_eq!(penalized.sample(&logits, &[1]).expect("sample"), 3);
    // top_k 1 is greedy at any temperature; the same seed draws the same tokens.
    let top_one = SamplingOptions {
        temperature: 5.0,
        top_k: Some(1),
        ..SamplingOptions::default()
    };
    let mut sampler = Sampler::new(top_one).expect("sampler");
    assert!((0..20).all(|_| sampler.sample(&logits, &[]).ok() == Some(1)));
    let hot = SamplingOptions {
        temperature: 1.0,
        top_p: Some(0.9),
        seed: 42,
        ..SamplingOptions::default()
    };
    let draw = |options: &SamplingOptions| -> Vec<u32> {
        let mut sampler = Sampler::new(options.clone()).expect("sampler");
        (0..50)
            .map(|_| sampler.sample(&logits, &[]).expect("sample"))
            .collect()
    };
    let first = draw(&hot);
    assert_eq!(first, draw(&hot));
    // top_p 0.9 keeps tokens 1 and 3 only (together about 0.93 of the mass).
    assert!(first.iter().all(|&t| t == 1 || t == 3), "{first:?}");
    assert!(first.contains(&1) && first.contains(&3));
    for bad in [
        SamplingOptions {
            temperature: -1.0,
            ..SamplingOptions::default()
        },
        SamplingOptions {
            top_k: Some(0),
            ..SamplingOptions::default()
        },
        SamplingOptions {
            top_p: Some(1.5),
            ..SamplingOptions::default()
        },
        SamplingOptions {
            repetition_penalty: 0.0,
            ..SamplingOptions::default()
        },
    ] {
        assert!(Sampler::new(bad).is_err());
    }
}

#[test]
fn bad_inputs_are_errors() {
    let device = Device::Cpu;
    let config = tiny_config();
    let model = model_from(&config, &random_weights(&config, 1), &device).expect("model");
    let out_of_vocabulary = ids(&[1, 40], &device);
    assert!(model.forward(&out_of_vocabulary).is_err());
    let options = GenerationOptions {
        max_new_tokens: 1,
        sampling: SamplingOptions::default(),
        stop_tokens: vec![],
    };
    assert!(generate(&model, &[], &options, &mut |_| Ok(())).is_err());
    let too_long = vec![1u32; config.max_position_embeddings + 1];
    assert!(generate(&model, &too_long, &options, &mut |_| Ok(())).is_err());
    // A weight of the wrong shape in a GGUF file.
    let mut weights = random_weights(&config, 1);
    if let Some(entry) = weights
        .iter_mut()
        .find(|(n, _, _)| n == "model.norm.weight")
    {
        entry.1 = vec![config.hidden_size + 1];
        entry.2.push(1.0);
    }
    let file = GgufFile::parse(llama_gguf(&config, &weights), "wrong.gguf").expect("parse");
    let error = LlamaForCausalLM::from_gguf(&file, &device)
        .err()
        .expect("wrong shape accepted");
    assert!(error.to_string().contains("output_norm.weight"), "{error}");
    // A block count far beyond the tensors: the first missing layer is named, nothing is
    // reserved for ten million layers.
    let weights = random_weights(&config, 1);
    let absurd = LlamaConfig {
        num_hidden_layers: 10_000_000,
        ..config.clone()
    };
    let file = GgufFile::parse(llama_gguf(&absurd, &weights), "absurd.gguf").expect("parse");
    let error = LlamaForCausalLM::from_gguf(&file, &device)
        .err()
        .expect("absurd block count accepted");
    assert!(error.to_string().contains("blk.2.attn_q.weight"), "{error}");
}

#[test]
fn hugging_face_folder_loads_with_tied_embeddings() {
    let device = Device::Cpu;
    let config = LlamaConfig {
        tie_word_embeddings: true,
        ..tiny_config()
    };
    // Checkpoints are often half precision: the matrices are stored as f16 (exactly the
    // rounded values below), converted to f32 on load.
    let weights: Vec<_> = random_weights(&config, 9)
        .into_iter()
        .map(|(name, shape, values)| {
            let rounded = Tensor::from_vec(values, &shape, &device)
                .and_then(|t| t.to_dtype(DType::F16))
                .and_then(|t| t.to_vec_f32())
                .expect("round to f16");
            (name, shape, rounded)
        })
        .collect();
    let direct = model_from(&config, &weights, &device).expect("direct");
    let dir = anygrad_testing::temp_dir("llama_hf_folder");
    let json = serde_json::json!({
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "max_position_embeddings": config.max_position_embeddings,
        "rope_theta": config.rope_theta,
        "rms_norm_eps": config.rms_norm_eps,
        "tie_word_embeddings": true,
        "hidden_act": "silu",
        "rope_scaling": null,
        "bos_token_id": 1,
        "eos_token_id": [2, 3],
    });
    std::fs::write(dir.join("config.json"), json.to_string()).expect("config");
    let tensors: Vec<(String, Tensor)> = weights
        .iter()
        .map(|(name, shape, values)| {
            let t = Tensor::from_vec(values.clone(), shape, &device).expect("tensor");
            let t = if name.ends_with("norm.weight") {
                t
            } else {
                t.to_dtype(DType::F16).expect("f16")
            };
            (name.clone(), t)
        })
        .collect();
    anygrad_nn::save_tensors(&tensors, &Default::default(), dir.join("model.safetensors"))
        .expect("save");
    let loaded = LlamaForCausalLM::from_pretrained(&dir, &device).expect("from_pretrained");
    assert_eq!(loaded.config().eos_token_ids, [2, 3]);
    assert!(loaded.lm_head.is_none());
    assert_close(
        &full_logits(&loaded, &device),
        &full_logits(&direct, &device),
        1e-5,
        1e-5,
        "HF folder (f16 weights) vs direct",
    );
    // An extra tensor is refused, naming it.
    let mut extra = tensors.clone();
    extra.push((
        "model.layers.0.unknown.weight".into(),
        Tensor::zeros(&[2], DType::F32, &device).expect("zeros"),
    ));
    anygrad_nn::save_tensors(&extra, &Default::default(), dir.join("model.safetensors"))
        .expect("save");
    let error = LlamaForCausalLM::from_pretrained(&dir, &device)
        .err()
        .expect("extra tensor accepted");
    assert!(error.to_string().contains("unknown.weight"), "{error}");
}
