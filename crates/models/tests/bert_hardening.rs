//! A BERT directory as a hostile user hands it over: a `config.json` whose sizes the weights
//! do not hold (a million layers, a huge vocabulary) is refused before anything is allocated,
//! with an error naming the field, its value and what the weights hold; FIFOs, devices and
//! oversized files in place of any file the encoder reads are errors, never a hang or an
//! attempt to read them whole; and `SentenceEncoder::encode` is inference (no graph kept, the
//! same embeddings whatever the batch size).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anygrad_core::{is_grad_enabled, Device, Result};
use anygrad_models::{BertConfig, BertModel, SentenceEncoder};
use anygrad_testing::memory::{peak_allocation, CountingAllocator};
use anygrad_testing::{assert_close, temp_dir, values};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The most heap a refused directory may take: the tiny model's files are about 100 KB.
const REFUSAL_HEAP_BYTES: usize = 4 << 20;

const SENTENCES: [&str; 5] = [
    "The cat sat on the mat.",
    "I like it!",
    "a very very very big red dog runs fast and plays",
    "Zebras? Not fun.",
    "",
];

fn tiny_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-bert")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A complete copy of the tiny sentence-transformers directory.
fn tiny_copy(test: &str) -> PathBuf {
    let dir = temp_dir(test).join("model");
    copy_tree(&tiny_dir(), &dir);
    dir
}

/// A copy of the tiny directory whose `config.json` has `field` set to `value`.
fn with_config_field(test: &str, field: &str, value: serde_json::Value) -> PathBuf {
    let dir = tiny_copy(test);
    let path = dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("config")).expect("JSON");
    config[field] = value;
    std::fs::write(&path, serde_json::to_string_pretty(&config).expect("JSON")).expect("write");
    dir
}

/// Run `load` on a thread and give its result, or fail after 60 s (a blocked open of a FIFO).
fn within_deadline<T: Send + 'static>(what: &str, load: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(load());
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return within 60 s (blocked?)"))
}

fn load_error(dir: &Path) -> String {
    match SentenceEncoder::from_dir(dir, &Device::Cpu) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(error) => error.to_string(),
    }
}

#[test]
fn config_sizes_the_weights_do_not_hold_are_refused_before_allocating() {
    // (field, value, what the tiny weights hold)
    let cases: [(&str, u64, &str); 9] = [
        ("num_hidden_layers", 1_000_000, "2"),
        ("num_hidden_layers", 1, "2"),
        ("num_hidden_layers", 3, "2"),
        ("vocab_size", 4_000_000_000, "100"),
        ("vocab_size", 99, "100"),
        ("hidden_size", 1 << 20, "32"),
        ("intermediate_size", 1 << 30, "64"),
        ("max_position_embeddings", 1 << 40, "16"),
        ("type_vocab_size", 1_000_000_000, "2"),
    ];
    for (index, (field, value, holds)) in cases.into_iter().enumerate() {
        let dir = with_config_field(&format!("bert-config-{index}"), field, value.into());
        let started = Instant::now();
        let (result, heap) = peak_allocation(|| BertModel::from_pretrained(&dir, &Device::Cpu));
        let message = match result {
            Ok(_) => panic!("{field} = {value} loaded"),
            Err(error) => error.to_string(),
        };
        for expected in [
            field,
            &value.to_string(),
            holds,
            "config.json",
            "model.safetensors",
        ] {
            assert!(
                message.contains(expected),
                "{field} = {value}: `{expected}` not in {message}"
            );
        }
        assert!(
            heap < REFUSAL_HEAP_BYTES,
            "{field} = {value}: {heap} bytes allocated before refusing"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{field} = {value}: refused only after {:?}",
            started.elapsed()
        );
        // The sentence encoder and the CLI load through the same path.
        let message = load_error(&dir);
        assert!(message.contains(field), "{message}");
    }
}

#[test]
fn a_configuration_too_large_to_count_is_refused_by_the_constructor() -> Result<()> {
    let tiny = BertConfig::from_file(tiny_dir().join("config.json"))?;
    let model = BertModel::new(&tiny, &Device::Cpu)?;
    let counted: usize = anygrad_nn::Module::state_dict(&model)
        .iter()
        .map(|(_, tensor)| tensor.numel())
        .sum();
    assert_eq!(tiny.parameter_count(), Some(counted));
    for (field, config) in [
        (
            "num_hidden_layers",
            BertConfig {
                num_hidden_layers: usize::MAX / 2,
                ..tiny.clone()
            },
        ),
        (
            "hidden_size",
            BertConfig {
                hidden_size: 1 << 40,
                num_attention_heads: 1,
                ..tiny.clone()
            },
        ),
    ] {
        let (result, heap) = peak_allocation(|| BertModel::new(&config, &Device::Cpu));
        let message = result.err().expect("refused").to_string();
        assert!(
            message.contains("do not fit") && message.contains(field),
            "{message}"
        );
        assert!(heap < REFUSAL_HEAP_BYTES, "{field}: {heap} bytes allocated");
    }
    Ok(())
}

#[test]
fn attention_heads_must_divide_the_hidden_size() {
    for (value, expected) in [(0u64, "must be positive"), (5, "not a multiple")] {
        let dir = with_config_field(
            &format!("bert-heads-{value}"),
            "num_attention_heads",
            value.into(),
        );
        let message = load_error(&dir);
        assert!(
            message.contains("num_attention_heads") && message.contains(expected),
            "{message}"
        );
    }
}

#[test]
fn weights_without_the_tensors_the_config_sizes_come_from_are_refused() {
    // A valid safetensors file holding one unrelated tensor: nothing to check the sizes by.
    let dir = tiny_copy("bert-unrelated-weights");
    let header = br#"{"other":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 4]);
    std::fs::write(dir.join("model.safetensors"), bytes).expect("write");
    let message = load_error(&dir);
    assert!(
        message.contains("vocab_size") && message.contains("embeddings.word_embeddings.weight"),
        "{message}"
    );
}

#[test]
fn a_header_claiming_more_than_the_file_holds_is_refused() {
    // Word embeddings of 4e9 rows whose bytes the file does not have, with a config to match.
    let dir = with_config_field("bert-huge-header", "vocab_size", 4_000_000_000u64.into());
    let header = br#"{"embeddings.word_embeddings.weight":{"dtype":"F32","shape":[4000000000,32],"data_offsets":[0,512000000000]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    std::fs::write(dir.join("model.safetensors"), bytes).expect("write");
    let (result, heap) = peak_allocation(|| BertModel::from_pretrained(&dir, &Device::Cpu));
    let message = result.err().expect("refused").to_string();
    assert!(
        message.contains("model.safetensors") && message.contains("does not fit"),
        "{message}"
    );
    assert!(heap < REFUSAL_HEAP_BYTES, "{heap} bytes allocated");
    // A header length beyond the file.
    let mut bytes = (1u64 << 40).to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{}");
    std::fs::write(dir.join("model.safetensors"), bytes).expect("write");
    let message = load_error(&dir);
    assert!(
        message.contains("model.safetensors") && message.contains("header"),
        "{message}"
    );
}

#[cfg(unix)]
fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn fifos_in_place_of_any_file_are_refused_without_blocking() {
    let files = [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
        "tokenizer_config.json",
    ];
    for (index, file) in files.into_iter().enumerate() {
        let dir = tiny_copy(&format!("bert-fifo-{index}"));
        let path = dir.join(file);
        std::fs::remove_file(&path).expect("remove");
        make_fifo(&path);
        let message = within_deadline(file, move || load_error(&dir));
        assert!(
            message.contains("not a regular file") && message.contains(file),
            "{file}: {message}"
        );
    }
}

#[cfg(unix)]
#[test]
fn devices_and_directories_in_place_of_files_are_refused() {
    let dir = tiny_copy("bert-device");
    let tokenizer = dir.join("tokenizer.json");
    std::fs::remove_file(&tokenizer).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &tokenizer).expect("symlink");
    let message = within_deadline("/dev/zero tokenizer", move || load_error(&dir));
    assert!(
        message.contains("not a regular file") && message.contains("tokenizer.json"),
        "{message}"
    );
    let dir = tiny_copy("bert-directory");
    let config = dir.join("config.json");
    std::fs::remove_file(&config).expect("remove");
    std::fs::create_dir(&config).expect("directory");
    let message = load_error(&dir);
    assert!(
        message.contains("a directory") && message.contains("config.json"),
        "{message}"
    );
}

#[test]
fn oversized_files_are_refused_before_they_are_read() {
    // Sparse files: their size is what counts, and nothing of them may be read.
    let cases: [(&str, u64); 4] = [
        ("config.json", 5 << 20),
        ("modules.json", 5 << 20),
        ("tokenizer.json", 65 << 20),
        ("model.safetensors", 65 << 30),
    ];
    for (index, (file, size)) in cases.into_iter().enumerate() {
        let dir = tiny_copy(&format!("bert-oversized-{index}"));
        let path = dir.join(file);
        let handle = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        handle.set_len(size).expect("grow the file (sparse)");
        drop(handle);
        let (message, heap) = peak_allocation(|| load_error(&dir));
        assert!(
            message.contains("larger than") && message.contains(file),
            "{file}: {message}"
        );
        assert!(heap < REFUSAL_HEAP_BYTES, "{file}: {heap} bytes allocated");
    }
    // A configuration padded to just over its bound, as a real (not sparse) file.
    let dir = tiny_copy("bert-padded-config");
    let path = dir.join("config.json");
    let mut text = std::fs::read_to_string(&path).expect("config");
    text.push_str(&" ".repeat(4 << 20));
    std::fs::write(&path, text).expect("write");
    let message = load_error(&dir);
    assert!(message.contains("larger than"), "{message}");
}

#[test]
fn encode_keeps_no_graph() -> Result<()> {
    let encoder = SentenceEncoder::from_dir(tiny_dir(), &Device::Cpu)?;
    assert!(
        encoder
            .model
            .embeddings
            .word_embeddings
            .weight
            .tensor()
            .requires_grad(),
        "the parameters are trainable"
    );
    let embeddings = encoder.encode(&SENTENCES)?;
    assert!(
        !embeddings.requires_grad() && embeddings.is_leaf(),
        "encode recorded a graph"
    );
    let batch = encoder.tokenize(&SENTENCES)?;
    let pooled = encoder.encode_batch(&batch)?;
    assert!(
        !pooled.requires_grad() && pooled.is_leaf(),
        "encode_batch recorded a graph"
    );
    assert!(
        is_grad_enabled(),
        "gradient mode is restored after encoding"
    );
    Ok(())
}

#[test]
fn the_batch_size_does_not_change_the_embeddings() -> Result<()> {
    let encoder = SentenceEncoder::from_dir(tiny_dir(), &Device::Cpu)?;
    let whole = values(&encoder.encode(&SENTENCES)?);
    assert_eq!(whole.len(), SENTENCES.len() * 32);
    for batch_size in [1, 2, 32] {
        let batched = encoder.encode_in_batches(&SENTENCES, batch_size)?;
        assert_eq!(batched.shape(), &[SENTENCES.len(), 32]);
        assert_close(
            &values(&batched),
            &whole,
            1e-5,
            0.0,
            &format!("batch size {batch_size}"),
        );
    }
    let error = encoder
        .encode_in_batches(&SENTENCES, 0)
        .expect_err("batch size 0");
    assert!(error.to_string().contains("batch_size"), "{error}");
    Ok(())
}
