//! `anygrad generate --model PATH --prompt TEXT [--max-tokens N] [--temperature T]
//! [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--device D] [--chat]
//! [--system TEXT] [--json]`: text from a Llama-family language model, a GGUF file
//! (llama.cpp's format; quantized weights are dequantized to f32) or a Hugging Face folder
//! (`config.json`, `model.safetensors`, `tokenizer.json`).
//!
//! The text streams to stdout as tokens are chosen (greedy at the default temperature 0).
//! `--chat` wraps the prompt as a user message in the model's chat template (ChatML). With
//! `--json` nothing streams: one JSON object is printed at the end with `prompt_ids`,
//! `generated_ids`, `text`, `top_logits` (the 50 largest logits of the prompt's last
//! position as `[id, logit]` pairs) and the prompt and generation speeds in tokens/s.
//! `--prompt-ids 1,2,3` gives the prompt as token ids instead of text (for comparisons with
//! other implementations that must not depend on the tokenizer).

use std::io::Write;
use std::path::PathBuf;

use anygrad::models::gguf::GgufFile;
use anygrad::models::llama::{
    generate, ChatMessage, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, SamplingOptions,
};
use anygrad::Device;
use clap::Args;

/// How many of the prompt's last-position logits `--json` reports.
const TOP_LOGITS: usize = 50;

/// Arguments of `anygrad generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// A GGUF file, or a Hugging Face folder (config.json, model.safetensors, tokenizer.json).
    #[arg(long)]
    model: PathBuf,
    /// The prompt text.
    #[arg(long, required_unless_present = "prompt_ids")]
    prompt: Option<String>,
    /// The prompt as comma-separated token ids instead of text.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["prompt", "chat"])]
    prompt_ids: Option<Vec<u32>>,
    /// The most tokens generated.
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    /// 0 is greedy; higher samples more freely.
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    /// Sample among the K most likely tokens only.
    #[arg(long)]
    top_k: Option<usize>,
    /// Sample among the most likely tokens whose probabilities sum to P.
    #[arg(long)]
    top_p: Option<f64>,
    /// Penalize tokens already present (Hugging Face's repetition_penalty; 1 is none).
    #[arg(long, default_value_t = 1.0)]
    repetition_penalty: f64,
    /// The sampling seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// Apply the model's chat template to the prompt (as a user message).
    #[arg(long)]
    chat: bool,
    /// With --chat: a system message (instead of the template's default).
    #[arg(long, requires = "chat")]
    system: Option<String>,
    /// Print one JSON object at the end instead of streaming the text.
    #[arg(long)]
    json: bool,
}

/// Run `anygrad generate`.
pub fn run(args: GenerateArgs) -> Result<(), String> {
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    let sampling = SamplingOptions {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        repetition_penalty: args.repetition_penalty,
        seed: args.seed,
    };
    // Refuse bad options before the model is loaded.
    sampling.validate().map_err(|e| e.to_string())?;
    let (model, tokenizer) = if args.model.is_dir() {
        let model =
            LlamaForCausalLM::from_pretrained(&args.model, &device).map_err(|e| e.to_string())?;
        let tokenizer = LlamaTokenizer::from_pretrained(&args.model).map_err(|e| e.to_string())?;
        (model, tokenizer)
    } else {
        let file = GgufFile::open(&args.model).map_err(|e| e.to_string())?;
        let model = LlamaForCausalLM::from_gguf(&file, &device).map_err(|e| e.to_string())?;
        let tokenizer = LlamaTokenizer::from_gguf(&file).map_err(|e| e.to_string())?;
        (model, tokenizer)
    };

    let prompt_ids = match (&args.prompt_ids, &args.prompt) {
        (Some(ids), _) => ids.clone(),
        (None, Some(prompt)) => {
            let text = if args.chat {
                let template = tokenizer
                    .chat_template
                    .as_ref()
                    .ok_or("--chat: the model has no chat template")?;
                let mut messages = Vec::new();
                if let Some(system) = &args.system {
                    messages.push(ChatMessage::new("system", system));
                }
                messages.push(ChatMessage::new("user", prompt));
                template.apply(&messages, true).map_err(|e| e.to_string())?
            } else {
                prompt.clone()
            };
            tokenizer.encode(&text).map_err(|e| e.to_string())?
        }
        (None, None) => return Err("give --prompt or --prompt-ids".into()),
    };

    let mut stop_tokens: Vec<u32> = model.config().eos_token_ids.clone();
    stop_tokens.extend(tokenizer.eos_token_id);
    if args.chat {
        stop_tokens.extend(tokenizer.token_to_id("<|im_end|>"));
    }
    let options = GenerationOptions {
        max_new_tokens: args.max_tokens,
        sampling,
        stop_tokens,
    };

    let mut stdout = std::io::stdout().lock();
    let mut generated: Vec<u32> = Vec::new();
    let mut printed = 0usize;
    let stream = !args.json;
    let mut on_token = |token: u32| -> anygrad::Result<()> {
        generated.push(token);
        if !stream {
            return Ok(());
        }
        let text = tokenizer.decode(&generated, true)?;
        // Wait for the rest of a character split over tokens.
        if text.len() > printed && !text.ends_with('\u{FFFD}') {
            if let Some(new) = text.get(printed..) {
                let _ = stdout.write_all(new.as_bytes());
                let _ = stdout.flush();
            }
            printed = text.len();
        }
        Ok(())
    };
    let output =
        generate(&model, &prompt_ids, &options, &mut on_token).map_err(|e| e.to_string())?;
    let text = tokenizer
        .decode(&output.generated_ids, true)
        .map_err(|e| e.to_string())?;
    let prompt_rate = prompt_ids.len() as f64 / output.prompt_seconds.max(1e-9);
    let generated_rate = if output.generated_ids.len() > 1 {
        (output.generated_ids.len() - 1) as f64 / output.generation_seconds.max(1e-9)
    } else {
        0.0
    };
    if args.json {
        let mut order: Vec<usize> = (0..output.prompt_logits.len()).collect();
        order.sort_by(|&a, &b| output.prompt_logits[b].total_cmp(&output.prompt_logits[a]));
        let top: Vec<serde_json::Value> = order
            .iter()
            .take(TOP_LOGITS)
            .map(|&i| serde_json::json!([i, output.prompt_logits[i]]))
            .collect();
        let object = serde_json::json!({
            "prompt_ids": prompt_ids,
            "generated_ids": output.generated_ids,
            "text": text,
            "top_logits": top,
            "prompt_tokens_per_second": prompt_rate,
            "generated_tokens_per_second": generated_rate,
            "device": device.to_string(),
        });
        println!("{object}");
    } else {
        println!();
        eprintln!(
            "{} prompt tokens at {prompt_rate:.1} tokens/s, {} generated at {generated_rate:.1} tokens/s on {device}",
            prompt_ids.len(),
            output.generated_ids.len(),
        );
    }
    Ok(())
}
