//! BERT in training mode: dropout on the attention probabilities
//! (`attention_probs_dropout_prob`) applies in training only — eval stays deterministic and
//! equal to a model without it — and gradients flow through it; gradient checkpointing of
//! the encoder layers (`BertModel::set_gradient_checkpointing`) gives the plain gradients,
//! dropout masks included (the checkpoint replays the generator); and the built-in
//! all-MiniLM-L6-v2 architecture equals its `config.json`.

use std::sync::{Mutex, MutexGuard};

use anygrad_core::{Device, Tensor};
use anygrad_models::{BertConfig, BertModel};
use anygrad_nn::Module;
use anygrad_testing::{assert_close, values};

/// The tests seed and draw from the one global generator: run them one at a time, so that a
/// test running beside another does not take numbers from the middle of its sequence.
static GENERATOR_LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    GENERATOR_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

const TOKENS: usize = 12;
const BATCH: usize = 3;

/// A tiny BERT (2 layers, hidden 32, 4 heads) with the given dropout probabilities.
fn tiny_config(hidden_dropout: f64, attention_dropout: f64) -> BertConfig {
    let text = format!(
        r#"{{"vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 16,
            "hidden_dropout_prob": {hidden_dropout},
            "attention_probs_dropout_prob": {attention_dropout}}}"#
    );
    BertConfig::from_json(&text, "tiny config").expect("valid config")
}

/// A model whose weights depend only on `seed` (not on the dropout probabilities).
fn model(config: &BertConfig, seed: u64, device: &Device) -> BertModel {
    anygrad_core::manual_seed(seed);
    BertModel::new(config, device).expect("model")
}

fn inputs(device: &Device) -> (Tensor, Tensor) {
    anygrad_core::manual_seed(99);
    let ids = Tensor::randint(0, 50, &[BATCH, TOKENS], device).expect("ids");
    // The last sequence has three padding tokens.
    let mut mask = vec![1i32; BATCH * TOKENS];
    for value in &mut mask[BATCH * TOKENS - 3..] {
        *value = 0;
    }
    let mask = Tensor::from_vec(mask, &[BATCH, TOKENS], device).expect("mask");
    (ids, mask)
}

fn max_abs_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn attention_dropout_applies_in_training_only(device: &Device) {
    let _serial = serial();
    let (ids, mask) = inputs(device);
    // Only the attention probabilities have dropout, so any train/eval difference is theirs.
    let with_dropout = model(&tiny_config(0.0, 0.5), 5, device);
    let without = model(&tiny_config(0.0, 0.0), 5, device);
    let run = |m: &BertModel| values(&m.forward(&ids, Some(&mask), None).expect("forward"));
    with_dropout.eval();
    without.eval();
    // The autotuner times a shape's kernel candidates at its first call after a read-back and
    // may then switch kernels, which can change a matmul's last bits (on an H100 the second
    // forward differed from the first by 1e-7): one forward and read first, so that the
    // bitwise comparisons below see the settled choices.
    run(&with_dropout);
    let eval = run(&with_dropout);
    assert_eq!(eval, run(&with_dropout), "eval is deterministic");
    assert_eq!(
        eval,
        run(&without),
        "in eval mode attention_probs_dropout_prob changes nothing"
    );
    without.train();
    assert_close(
        &run(&without),
        &eval,
        1e-6,
        0.0,
        "training without any dropout equals eval",
    );
    with_dropout.train();
    let trained = run(&with_dropout);
    assert!(
        max_abs_difference(&trained, &eval) > 1e-2,
        "attention dropout 0.5 in training mode must change the output"
    );
    assert!(trained.iter().all(|v| v.is_finite()));
    assert_ne!(trained, run(&with_dropout), "a new mask on every forward");

    // Gradients flow through the dropped-out attention to the query projection.
    let hidden = with_dropout
        .forward(&ids, Some(&mask), None)
        .expect("forward");
    hidden
        .square()
        .expect("square")
        .mean_all()
        .expect("mean")
        .backward()
        .expect("backward");
    let query = &with_dropout.encoder.layer[0].attention.self_attention.query;
    let grad = values(&query.weight.tensor().grad().expect("query weight gradient"));
    assert!(grad.iter().all(|v| v.is_finite()));
    assert!(grad.iter().any(|v| v.abs() > 0.0), "a non-zero gradient");
}

/// Forward (training mode, dropouts on) and backward of `mean(hidden²)` from generator seed
/// 3; the gradient of every parameter, in `named_parameters` order.
fn gradients(model: &BertModel, ids: &Tensor, mask: &Tensor) -> Vec<Vec<f32>> {
    model.zero_grad();
    anygrad_core::manual_seed(3);
    let hidden = model.forward(ids, Some(mask), None).expect("forward");
    hidden
        .square()
        .expect("square")
        .mean_all()
        .expect("mean")
        .backward()
        .expect("backward");
    model
        .named_parameters()
        .iter()
        .map(|(name, tensor)| {
            values(
                &tensor
                    .grad()
                    .unwrap_or_else(|| panic!("{name} has no gradient")),
            )
        })
        .collect()
}

fn checkpointed_layers_give_the_plain_gradients(device: &Device) {
    let _serial = serial();
    let (ids, mask) = inputs(device);
    let model = model(&tiny_config(0.1, 0.1), 8, device);
    model.train();
    assert!(!model.gradient_checkpointing());
    let plain = gradients(&model, &ids, &mask);
    model.set_gradient_checkpointing(true);
    assert!(model.gradient_checkpointing());
    let checkpointed = gradients(&model, &ids, &mask);
    assert_eq!(plain.len(), checkpointed.len());
    let names = model.named_parameters();
    for ((expected, actual), (name, _)) in plain.iter().zip(&checkpointed).zip(&names) {
        assert_close(actual, expected, 1e-5, 1e-4, name);
    }
    // Inference is untouched by the flag.
    model.eval();
    let _no_graph = anygrad_core::no_grad();
    let checkpointed_eval = values(&model.forward(&ids, Some(&mask), None).expect("forward"));
    model.set_gradient_checkpointing(false);
    let plain_eval = values(&model.forward(&ids, Some(&mask), None).expect("forward"));
    assert_eq!(checkpointed_eval, plain_eval);
}

anygrad_testing::device_tests!(
    attention_dropout_applies_in_training_only,
    checkpointed_layers_give_the_plain_gradients,
);

#[test]
fn minilm_architecture_equals_its_config_json() {
    let _serial = serial();
    // The fields of all-MiniLM-L6-v2's config.json that the encoder reads.
    let text = r#"{"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02,
        "intermediate_size": 1536, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
        "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 6,
        "pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2,
        "vocab_size": 30522}"#;
    let parsed = BertConfig::from_json(text, "all-MiniLM-L6-v2 config.json").expect("parses");
    assert_eq!(BertConfig::all_minilm_l6_v2(), parsed);
    let model = BertModel::new(&parsed, &Device::Cpu).expect("model");
    let parameters: usize = model
        .named_parameters()
        .iter()
        .map(|(_, tensor)| tensor.numel())
        .sum();
    // 22.7M with Hugging Face's pooler (147,840), which sentence embeddings do not use.
    assert_eq!(parameters, 22_565_376);
    assert_eq!(model.config().head_dim(), 32);
}
