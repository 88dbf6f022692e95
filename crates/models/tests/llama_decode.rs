//! Batch-1 decoding of a Llama: the kernels one decode token dispatches on the GPU, per layer
//! and by name (counted with `kernel_dispatches`, printed for the record and bounded so that a
//! change adding kernels fails), on a tiny random model and, with `ANYGRAD_SMOLLM2_GGUF=PATH`,
//! on SmolLM2-135M-Instruct; and the KV cache's buffers written in place: whatever their
//! starting capacity (grown by doubling or sized up front), a cloned cache, and gradients
//! through a cache, the logits and gradients equal the full recomputation's.

mod gguf_support;

use anygrad_core::{kernel_dispatches, no_grad, Device, KernelDispatches, Tensor};
use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{KvCache, LlamaConfig, LlamaForCausalLM};
use anygrad_nn::Module;
use anygrad_testing::{device_tests, skip_unless_required, values, Requirement};
use gguf_support::{model_from, random_weights, tiny_config};

const PROMPT: [i32; 5] = [3, 17, 5, 39, 0];

fn ids(tokens: &[i32], device: &Device) -> Tensor {
    Tensor::from_vec(tokens.to_vec(), &[1, tokens.len()], device).expect("ids")
}

/// The tiny configuration with `layers` layers and a head size the fused kernels cover.
fn decode_config(layers: usize) -> LlamaConfig {
    LlamaConfig {
        num_hidden_layers: layers,
        head_dim: 8,
        rotary_dim: 8,
        ..tiny_config()
    }
}

/// The kernels of one decode token (the third after the prompt) of `model` on `device`, and
/// its logits read back.
fn decode_token_kernels(model: &LlamaForCausalLM, device: &Device) -> KernelDispatches {
    let _no_grad = no_grad();
    let mut cache = model.new_cache();
    model
        .next_token_logits(&ids(&PROMPT, device), &mut cache)
        .expect("prefill");
    for token in [7, 9] {
        values(
            &model
                .next_token_logits(&ids(&[token], device), &mut cache)
                .expect("decode"),
        );
    }
    device.synchronize().expect("synchronize");
    let before = kernel_dispatches(device).expect("a GPU counts kernels");
    values(
        &model
            .next_token_logits(&ids(&[11], device), &mut cache)
            .expect("decode"),
    );
    kernel_dispatches(device)
        .expect("a GPU counts kernels")
        .since(&before)
}

fn print_kernels(title: &str, kernels: &KernelDispatches) {
    println!("{title}: {} kernels", kernels.total());
    for (name, count) in &kernels.by_kernel {
        println!("  {count:4}  {name}");
    }
}

/// The kernels a decode token dispatches per layer: the difference between a 3-layer and a
/// 1-layer model, halved.
fn decode_kernels_per_layer(device: &Device) {
    let count = |layers: usize| {
        let config = decode_config(layers);
        let model = model_from(&config, &random_weights(&config, 5), device).expect("model");
        decode_token_kernels(&model, device)
    };
    let (one, three) = (count(1), count(3));
    let per_layer = three.since(&one);
    print_kernels("tiny model, one decode token, 1 layer", &one);
    print_kernels("tiny model, one decode token, 2 more layers", &per_layer);
    let per_layer_total = per_layer.total() / 2;
    println!("kernels per layer per decode token: {per_layer_total}");
    assert!(
        per_layer_total <= DECODE_KERNELS_PER_LAYER,
        "a decode token dispatches {per_layer_total} kernels per layer, more than {DECODE_KERNELS_PER_LAYER}"
    );
}

/// The most kernels a decode token may dispatch per layer (measured on lavapipe).
const DECODE_KERNELS_PER_LAYER: u64 = 18;

/// SmolLM2-135M's kernels per decode token, when the GGUF file is named (printed only: the
/// tiny model's bound covers the same code).
fn smollm2_decode_kernels(device: &Device) {
    let Some(path) = std::env::var_os("ANYGRAD_SMOLLM2_GGUF") else {
        skip_unless_required(
            Requirement::Data,
            "smollm2_decode_kernels",
            "ANYGRAD_SMOLLM2_GGUF does not name SmolLM2-135M-Instruct.Q4_1.gguf",
        );
        return;
    };
    let file = GgufFile::open(path).expect("open the GGUF file");
    let model = LlamaForCausalLM::from_gguf(&file, device).expect("model");
    let kernels = decode_token_kernels(&model, device);
    print_kernels("SmolLM2-135M, one decode token", &kernels);
}

const TOKENS: [i32; 9] = [3, 17, 5, 39, 0, 22, 8, 31, 12];

/// `actual` within 1e-4 of `expected`, relative to `expected`'s largest magnitude.
fn assert_within(actual: &[f32], expected: &[f32], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    let largest = expected.iter().fold(0f32, |a, v| a.max(v.abs()));
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() <= 1e-4 * largest,
            "{what}: element {index}: {a} against {e} (largest {largest})"
        );
    }
}

/// The logits of `TOKENS` fed to `cache` in a prefill of 3, a chunk of 2 and then one token
/// at a time.
fn cached_logits(model: &LlamaForCausalLM, cache: &mut KvCache, device: &Device) -> Vec<f32> {
    let mut logits = Vec::new();
    for range in [0..3, 3..5, 5..6, 6..7, 7..8, 8..9] {
        logits.extend(values(
            &model
                .forward_with_cache(&ids(&TOKENS[range], device), cache)
                .expect("cached forward"),
        ));
    }
    logits
}

/// A cache that grows from the prompt's size, one that grows from 2 tokens (doubling twice
/// more), one sized for every token up front, and a cleared one reused: each gives the full
/// recomputation's logits, and the greedy tokens agree.
fn buffered_cache_matches_full_recomputation(device: &Device) {
    let _no_grad = no_grad();
    let config = decode_config(2);
    let model = model_from(&config, &random_weights(&config, 7), device).expect("model");
    let full = values(&model.forward(&ids(&TOKENS, device)).expect("forward"));
    let vocab = config.vocab_size;
    let greedy = |logits: &[f32]| -> Vec<usize> {
        logits
            .chunks(vocab)
            .map(|row| {
                (0..vocab)
                    .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                    .unwrap_or(0)
            })
            .collect()
    };
    for capacity in [0, 2, TOKENS.len()] {
        let mut cache = KvCache::with_capacity(config.num_hidden_layers, capacity);
        let logits = cached_logits(&model, &mut cache, device);
        assert_eq!(cache.len(), TOKENS.len());
        assert!(cache.capacity() >= TOKENS.len(), "capacity {capacity}");
        assert_within(&logits, &full, &format!("capacity {capacity}"));
        assert_eq!(greedy(&logits), greedy(&full), "capacity {capacity}");
        cache.clear();
        assert!(cache.is_empty());
        let again = cached_logits(&model, &mut cache, device);
        assert_within(&again, &full, &format!("capacity {capacity}, cleared"));
    }
    let mut sized = model.new_cache_with_capacity(TOKENS.len());
    cached_logits(&model, &mut sized, device);
    assert_eq!(sized.capacity(), TOKENS.len(), "a sized cache never grows");
}

/// A clone taken mid-sequence and the original each continue with tokens of their own: both
/// match their full recomputations (the clone never sees the original's writes).
fn cloned_cache_continues_independently(device: &Device) {
    let _no_grad = no_grad();
    let config = decode_config(2);
    let model = model_from(&config, &random_weights(&config, 9), device).expect("model");
    let mut original = model.new_cache_with_capacity(16);
    model
        .forward_with_cache(&ids(&TOKENS[..4], device), &mut original)
        .expect("prefill");
    let mut copy = original.clone();
    let continue_with = |cache: &mut KvCache, tokens: &[i32]| -> Vec<f32> {
        let mut logits = Vec::new();
        for &token in tokens {
            logits = values(
                &model
                    .forward_with_cache(&ids(&[token], device), cache)
                    .expect("decode"),
            );
        }
        logits
    };
    let original_last = continue_with(&mut original, &[1, 2, 3]);
    let copy_last = continue_with(&mut copy, &[30, 31]);
    let last_row = |tokens: &[i32]| -> Vec<f32> {
        let mut sequence = TOKENS[..4].to_vec();
        sequence.extend_from_slice(tokens);
        let logits = model
            .forward(&ids(&sequence, device))
            .expect("forward")
            .narrow(1, sequence.len() - 1, 1)
            .expect("last row");
        values(&logits)
    };
    assert_within(&original_last, &last_row(&[1, 2, 3]), "original");
    assert_within(&copy_last, &last_row(&[30, 31]), "clone");
}

/// With gradients on, a forward over a cache (prefill of 3, then 6 tokens) gives every
/// parameter the gradient of the full forward over the same rows.
fn gradients_through_the_cache_match_the_full_forward(device: &Device) {
    let config = decode_config(2);
    let model = model_from(&config, &random_weights(&config, 13), device).expect("model");
    let parameters = model.parameters();
    for parameter in &parameters {
        parameter.requires_grad_(true);
    }
    let gradients = || -> Vec<Vec<f32>> {
        parameters
            .iter()
            .map(|parameter| {
                let gradient = parameter.grad().expect("a gradient");
                parameter.zero_grad();
                values(&gradient)
            })
            .collect()
    };
    let full = model.forward(&ids(&TOKENS, device)).expect("forward");
    full.narrow(1, 3, TOKENS.len() - 3)
        .expect("rows")
        .sum_all()
        .expect("sum")
        .backward()
        .expect("backward");
    let expected = gradients();
    let mut cache = model.new_cache_with_capacity(16);
    model
        .forward_with_cache(&ids(&TOKENS[..3], device), &mut cache)
        .expect("prefill");
    model
        .forward_with_cache(&ids(&TOKENS[3..], device), &mut cache)
        .expect("chunk")
        .sum_all()
        .expect("sum")
        .backward()
        .expect("backward");
    for (index, (actual, expected)) in gradients().iter().zip(&expected).enumerate() {
        assert_within(actual, expected, &format!("parameter {index}"));
    }
}

device_tests!(
    buffered_cache_matches_full_recomputation,
    cloned_cache_continues_independently,
    gradients_through_the_cache_match_the_full_forward;
    gpu_only: decode_kernels_per_layer, smollm2_decode_kernels
);
