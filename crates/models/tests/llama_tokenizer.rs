//! `LlamaTokenizer` from a tiny byte-level BPE, written both as GGUF metadata
//! (`tokenizer.ggml.*`) and as a Hugging Face `tokenizer.json` + `tokenizer_config.json`:
//! merges applied, control tokens kept whole, BOS added when asked, digits split one by one
//! for `pre` `smollm`, decoding back to the text, and the ChatML template.

mod gguf_support;

use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{ChatMessage, LlamaTokenizer};
use gguf_support::{write_gguf, Value};

/// The vocabulary: three control tokens, then byte-level symbols and merges (`Ġ` is a space).
const TOKENS: [&str; 12] = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "a",
    "b",
    "Ġ",
    "1",
    "2",
    "ab",
    "Ġa",
    "Ġab",
    "12",
];
const MERGES: [&str; 4] = ["a b", "Ġ a", "Ġ ab", "1 2"];
const TEMPLATE: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nBe brief.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

fn gguf_tokenizer(pre: &str, add_bos: bool) -> LlamaTokenizer {
    let strings =
        |items: &[&str]| Value::Array(8, items.iter().map(|s| Value::Str(s.to_string())).collect());
    let types = Value::Array(
        5,
        (0..TOKENS.len())
            .map(|i| Value::I32(if i < 3 { 3 } else { 1 }))
            .collect(),
    );
    let metadata = vec![
        ("tokenizer.ggml.model", Value::Str("gpt2".into())),
        ("tokenizer.ggml.pre", Value::Str(pre.into())),
        ("tokenizer.ggml.tokens", strings(&TOKENS)),
        ("tokenizer.ggml.merges", strings(&MERGES)),
        ("tokenizer.ggml.token_type", types),
        ("tokenizer.ggml.bos_token_id", Value::U32(1)),
        ("tokenizer.ggml.eos_token_id", Value::U32(2)),
        ("tokenizer.ggml.add_bos_token", Value::Bool(add_bos)),
        ("tokenizer.chat_template", Value::Str(TEMPLATE.into())),
    ];
    let file = GgufFile::parse(write_gguf(&metadata, &[], 32), "tokenizer.gguf").expect("parse");
    LlamaTokenizer::from_gguf(&file).expect("tokenizer")
}

#[test]
fn gguf_byte_level_bpe_encodes_and_decodes() {
    let tokenizer = gguf_tokenizer("smollm", false);
    assert_eq!(tokenizer.vocab_size(), TOKENS.len());
    assert_eq!(
        (tokenizer.bos_token_id, tokenizer.eos_token_id),
        (Some(1), Some(2))
    );
    // "ab ab a": merges give `ab`, `Ġab`, `Ġa`.
    assert_eq!(tokenizer.encode("ab ab a").expect("encode"), [8, 10, 9]);
    // Control tokens stay whole; digits split one by one (`12` is never merged for smollm).
    assert_eq!(
        tokenizer
            .encode("<|im_start|>a12<|im_end|>")
            .expect("encode"),
        [1, 3, 6, 7, 2]
    );
    assert_eq!(
        tokenizer.decode(&[8, 10, 9], false).expect("decode"),
        "ab ab a"
    );
    assert_eq!(tokenizer.decode(&[1, 8, 2], true).expect("decode"), "ab");
    // Without the digit splitting the merge `1 2` applies.
    let plain = gguf_tokenizer("default", true);
    assert_eq!(
        plain.encode("12").expect("encode"),
        [1, 11],
        "BOS first, then `12`"
    );
}

#[test]
fn chat_template_formats_chatml_with_its_default_system_message() {
    let tokenizer = gguf_tokenizer("smollm", false);
    let template = tokenizer.chat_template.as_ref().expect("template");
    assert!(template.is_chatml());
    let prompt = template
        .apply(&[ChatMessage::new("user", "ab")], true)
        .expect("apply");
    assert_eq!(
        prompt,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n"
    );
    let with_system = template
        .apply(
            &[
                ChatMessage::new("system", "S"),
                ChatMessage::new("user", "U"),
            ],
            false,
        )
        .expect("apply");
    assert_eq!(
        with_system,
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
    );
    // The template is rendered with the tokenizer's special tokens.
    assert_eq!(
        (template.bos_token.as_str(), template.eos_token.as_str()),
        ("<|im_start|>", "<|im_end|>")
    );
    let other = anygrad_models::llama::ChatTemplate::new(
        "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",
    )
    .with_special_tokens(Some("<s>"), None);
    assert_eq!(
        other
            .apply(&[ChatMessage::new("user", "x")], true)
            .expect("apply"),
        "<s>x"
    );
    let broken = anygrad_models::llama::ChatTemplate::new("{% if %}");
    assert!(broken
        .apply(&[ChatMessage::new("user", "x")], true)
        .is_err());
}

#[test]
fn hugging_face_tokenizer_json_loads_with_its_config() {
    let dir = anygrad_testing::temp_dir("llama_tokenizer_json");
    let vocab: serde_json::Map<String, serde_json::Value> = TOKENS
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), serde_json::json!(i)))
        .collect();
    let added: Vec<serde_json::Value> = (0..3)
        .map(|i| {
            serde_json::json!({"id": i, "content": TOKENS[i], "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let byte_level = serde_json::json!({"type": "ByteLevel", "add_prefix_space": false,
        "trim_offsets": true, "use_regex": true});
    let document = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": byte_level, "post_processor": null,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null, "fuse_unk": false,
            "byte_fallback": false, "vocab": vocab, "merges": MERGES},
    });
    std::fs::write(dir.join("tokenizer.json"), document.to_string()).expect("write");
    let config = serde_json::json!({"bos_token": "<|im_start|>", "eos_token": {"content": "<|im_end|>"},
        "add_bos_token": false, "chat_template": TEMPLATE});
    std::fs::write(dir.join("tokenizer_config.json"), config.to_string()).expect("write");
    let tokenizer = LlamaTokenizer::from_pretrained(&dir).expect("tokenizer");
    assert_eq!(
        (tokenizer.bos_token_id, tokenizer.eos_token_id),
        (Some(1), Some(2))
    );
    assert_eq!(tokenizer.encode("ab ab a").expect("encode"), [8, 10, 9]);
    assert!(tokenizer.chat_template.is_some());
    // A broken tokenizer.json is an error naming the file.
    std::fs::write(dir.join("tokenizer.json"), "{").expect("write");
    let error = LlamaTokenizer::from_pretrained(&dir)
        .err()
        .expect("broken accepted");
    assert!(error.to_string().contains("tokenizer.json"), "{error}");
}

#[test]
fn unsupported_tokenizer_models_are_refused() {
    let metadata = vec![("tokenizer.ggml.model", Value::Str("rwkv".into()))];
    let file = GgufFile::parse(write_gguf(&metadata, &[], 32), "rwkv.gguf").expect("parse");
    let error = LlamaTokenizer::from_gguf(&file)
        .err()
        .expect("rwkv accepted");
    let message = error.to_string();
    assert!(
        message.contains("`rwkv` is not supported") && message.contains("rwkv.gguf"),
        "{message}"
    );
}
