//! `LlamaTokenizer` from a GGUF SentencePiece vocabulary (`tokenizer.ggml.model` `llama`): a
//! small synthetic vocabulary written here (unknown and control tokens, the 256 byte tokens,
//! scored pieces, a user-defined token). The expected ids follow SentencePiece's BPE rule,
//! worked by hand: `▁` before the text and for every space, then repeatedly merge the
//! adjacent pair whose concatenation is the best-scoring piece; a character no piece covers
//! becomes its UTF-8 bytes' `<0xAB>` tokens. llama.cpp's tokenizer follows the same rule.
//!
//! With `ANYGRAD_LLAMA_SPM_VOCAB=PATH` (llama.cpp's `ggml-vocab-llama-spm.gguf`, Llama 2's
//! real vocabulary, beside its `.inp`/`.out` test files) every llama.cpp test text is checked
//! against the ids llama.cpp gives it.

mod gguf_support;

use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::LlamaTokenizer;
use anygrad_testing::{skip_unless_required, Requirement};
use gguf_support::{write_gguf, Value};

/// Scored pieces after the byte tokens: (piece, score).
const PIECES: [(&str, f32); 23] = [
    ("▁", -1.0),
    ("h", -2.0),
    ("e", -3.0),
    ("l", -4.0),
    ("o", -5.0),
    ("w", -6.0),
    ("r", -7.0),
    ("d", -8.0),
    ("a", -9.0),
    ("b", -10.0),
    ("c", -11.0),
    ("ll", -12.0),
    ("he", -13.0),
    ("llo", -14.0),
    ("hello", -15.0),
    ("▁hello", -16.0),
    ("▁w", -17.0),
    ("or", -18.0),
    ("▁wor", -19.0),
    ("ld", -20.0),
    ("▁world", -21.0),
    // `ab` comes first in the vocabulary but scores below `bc`: merges follow the scores.
    ("ab", -40.0),
    ("bc", -30.0),
];
/// The id of the first scored piece: `<unk>`, `<s>`, `</s>`, 256 byte tokens.
const FIRST_PIECE: u32 = 3 + 256;
/// The id of the user-defined token, after the pieces.
const TOOL: u32 = FIRST_PIECE + PIECES.len() as u32;

fn piece(text: &str) -> u32 {
    FIRST_PIECE
        + PIECES
            .iter()
            .position(|(p, _)| *p == text)
            .unwrap_or_else(|| panic!("no piece {text}")) as u32
}

fn byte(value: u8) -> u32 {
    3 + value as u32
}

/// The tokenizer of the synthetic vocabulary with `extra` metadata.
fn tokenizer(extra: Vec<(&str, Value)>) -> LlamaTokenizer {
    let mut tokens = vec!["<unk>".to_string(), "<s>".into(), "</s>".into()];
    let mut scores = vec![0.0f32; 3];
    let mut types = vec![2i32, 3, 3];
    for value in 0..=255u8 {
        tokens.push(format!("<0x{value:02X}>"));
        scores.push(0.0);
        types.push(6);
    }
    for (text, score) in PIECES {
        tokens.push(text.to_string());
        scores.push(score);
        types.push(1);
    }
    tokens.push("<tool>".into());
    scores.push(0.0);
    types.push(4);
    let mut metadata = vec![
        ("tokenizer.ggml.model", Value::Str("llama".into())),
        (
            "tokenizer.ggml.tokens",
            Value::Array(8, tokens.into_iter().map(Value::Str).collect()),
        ),
        (
            "tokenizer.ggml.scores",
            Value::Array(6, scores.into_iter().map(Value::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type",
            Value::Array(5, types.into_iter().map(Value::I32).collect()),
        ),
        ("tokenizer.ggml.bos_token_id", Value::U32(1)),
        ("tokenizer.ggml.eos_token_id", Value::U32(2)),
        ("tokenizer.ggml.unknown_token_id", Value::U32(0)),
    ];
    metadata.extend(extra);
    let file = GgufFile::parse(write_gguf(&metadata, &[], 32), "spm.gguf").expect("parse");
    LlamaTokenizer::from_gguf(&file).expect("tokenizer")
}

#[test]
fn words_in_the_vocabulary_merge_by_score() {
    let tokenizer = tokenizer(vec![]);
    assert_eq!(tokenizer.vocab_size(), TOOL as usize + 1);
    // `add_bos_token` defaults to true for SentencePiece vocabularies.
    assert!(tokenizer.add_bos_token && !tokenizer.add_eos_token);
    // ▁ h e l l o: ll (-12), he (-13), llo (-14), hello (-15), ▁hello (-16).
    assert_eq!(
        tokenizer.encode("hello world").expect("encode"),
        [1, piece("▁hello"), piece("▁world")]
    );
    // ▁ a b c: `bc` (-30) beats `ab` (-40) although `ab` comes first; `abc` is no piece.
    assert_eq!(
        tokenizer.encode("abc").expect("encode"),
        [1, piece("▁"), piece("a"), piece("bc")]
    );
    // Without the prefix the word starts bare.
    let bare = crate::tokenizer(vec![(
        "tokenizer.ggml.add_space_prefix",
        Value::Bool(false),
    )]);
    assert_eq!(bare.encode("hello").expect("encode"), [1, piece("hello")]);
    assert_eq!(
        bare.decode(&[piece("hello")], false).expect("decode"),
        "hello"
    );
}

#[test]
fn absent_characters_fall_back_to_bytes() {
    let tokenizer = tokenizer(vec![]);
    // `i` is no piece: its byte token 0x69.
    assert_eq!(
        tokenizer.encode("hi").expect("encode"),
        [1, piece("▁"), piece("h"), byte(0x69)]
    );
    // `é` is U+00E9, UTF-8 C3 A9.
    assert_eq!(
        tokenizer.encode("é").expect("encode"),
        [1, piece("▁"), byte(0xC3), byte(0xA9)]
    );
    // Byte tokens decode to raw bytes, fused into UTF-8.
    assert_eq!(
        tokenizer
            .decode(&[piece("▁hello"), byte(0xC3), byte(0xA9)], false)
            .expect("decode"),
        "helloé"
    );
}

#[test]
fn leading_spaces_and_special_tokens() {
    let tokenizer = tokenizer(vec![]);
    // Two spaces and the prefix: three `▁`, the last merged into `▁hello`.
    assert_eq!(
        tokenizer.encode("  hello").expect("encode"),
        [1, piece("▁"), piece("▁"), piece("▁hello")]
    );
    // Control tokens in the text stay whole; the text after one gets the prefix again, as in
    // llama.cpp and `transformers`' legacy Llama tokenizer.
    assert_eq!(
        tokenizer.encode("<s>hello</s>").expect("encode"),
        [1, 1, piece("▁hello"), 2]
    );
    // A user-defined token is whole too, and not skipped as special.
    let ids = tokenizer.encode("hello<tool>").expect("encode");
    assert_eq!(ids, [1, piece("▁hello"), TOOL]);
    assert_eq!(tokenizer.decode(&ids, true).expect("decode"), "hello<tool>");
    assert_eq!(
        tokenizer
            .decode(&[1, piece("▁hello"), 2], true)
            .expect("decode"),
        "hello"
    );
    // `add_eos_token` appends the EOS token.
    let framed = crate::tokenizer(vec![("tokenizer.ggml.add_eos_token", Value::Bool(true))]);
    assert_eq!(
        framed.encode("hello").expect("encode"),
        [1, piece("▁hello"), 2]
    );
}

#[test]
fn texts_round_trip() {
    let tokenizer = tokenizer(vec![]);
    for text in [
        "hello world",
        "  hello",
        "hi there",
        "é",
        "naïve café ☕",
        "line\nbreak\ttab",
        "world  hello ",
    ] {
        let ids = tokenizer.encode(text).expect("encode");
        assert_eq!(
            tokenizer.decode(&ids, true).expect("decode"),
            text,
            "{ids:?}"
        );
    }
}

/// llama.cpp's own SentencePiece tokenizer test (`tests/test-tokenizer-0.cpp`): the
/// vocabulary of Llama 2 (`models/ggml-vocab-llama-spm.gguf`, shipped in the
/// `llama-cpp-python` source distribution on PyPI under `vendor/llama.cpp/`) with 46 texts
/// (`.inp`, separated by `\n__ggml_vocab_test__\n`) and the ids llama.cpp gives them
/// (`.out`, one line each; no BOS, special tokens not parsed); each decodes back to its text.
#[test]
fn llama_cpp_vocabulary_test_cases() {
    let Some(path) = std::env::var_os("ANYGRAD_LLAMA_SPM_VOCAB") else {
        skip_unless_required(
            Requirement::Data,
            "llama_cpp_vocabulary_test_cases",
            "set ANYGRAD_LLAMA_SPM_VOCAB to llama.cpp's models/ggml-vocab-llama-spm.gguf",
        );
        return;
    };
    let path = std::path::PathBuf::from(path);
    let file = GgufFile::open(&path).expect("open");
    let tokenizer = LlamaTokenizer::from_gguf(&file).expect("tokenizer");
    let read = |extension: &str| {
        let mut name = path.clone().into_os_string();
        name.push(extension);
        std::fs::read_to_string(&name).unwrap_or_else(|e| panic!("{name:?}: {e}"))
    };
    let inputs = read(".inp");
    let outputs = read(".out");
    // The file ends with a separator: the empty remainder after it is no test (an empty text
    // between two separators is).
    let mut texts: Vec<&str> = inputs.split("\n__ggml_vocab_test__\n").collect();
    if texts.last() == Some(&"") {
        texts.pop();
    }
    let expected: Vec<Vec<u32>> = outputs
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|id| id.parse().expect("id"))
                .collect()
        })
        .collect();
    assert_eq!(texts.len(), expected.len(), "test counts");
    assert!(texts.len() >= 40, "{} texts", texts.len());
    let mut mismatches = Vec::new();
    for (text, expected) in texts.iter().zip(&expected) {
        let mut ids = tokenizer.encode(text).expect("encode");
        if tokenizer.add_bos_token && ids.first() == tokenizer.bos_token_id.as_ref() {
            ids.remove(0);
        }
        if &ids != expected {
            mismatches.push(format!("{text:?}: {ids:?}, llama.cpp {expected:?}"));
        }
        let decoded = tokenizer.decode(&ids, true).expect("decode");
        if decoded != *text {
            mismatches.push(format!("{text:?} decodes to {decoded:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        texts.len(),
        mismatches.join("\n")
    );
}
