//! `anygrad generate --model PATH --prompt TEXT [--max-tokens N] [--temperature T]
//! [--top-k K] [--top-p P] [--repetition-penalty R] [--seed S] [--device D] [--chat]
//! [--system TEXT] [--weights quantized|f32] [--json]`: text from a Llama-family language
//! model, a GGUF file (llama.cpp's format; block-quantized weights stay in their format on the
//! device unless `--weights f32`) or a Hugging Face folder (`config.json`,
//! `model.safetensors`, `tokenizer.json`).
//!
//! The text streams to stdout as tokens are chosen (greedy at the default temperature 0).
//! `--chat` wraps the prompt as a user message in the model's chat template (ChatML for a
//! model without one). With
//! `--json` nothing streams: one JSON object is printed at the end with `prompt_ids`,
//! `generated_ids`, `text`, `top_logits` (the 50 largest logits of the prompt's last
//! position as `[id, logit]` pairs), the prompt and generation speeds in tokens/s, the
//! bytes of the model's weights on the device and the device's peak memory (a GPU's).
//! `--prompt-ids 1,2,3` gives the prompt as token ids instead of text (for comparisons with
//! other implementations that must not depend on the tokenizer).

use std::io::Write;
use std::path::{Path, PathBuf};

use anygrad::models::gguf::GgufFile;
use anygrad::models::llama::{
    generate, ChatMessage, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, SamplingOptions,
    WeightStorage,
};
use anygrad::Device;
use clap::{Args, ValueEnum};

/// How many of the prompt's last-position logits `--json` reports.
const TOP_LOGITS: usize = 50;

/// The model, device and sampling arguments that `generate` and `chat` share.
#[derive(Args)]
pub struct SamplingArgs {
    /// The most tokens generated (a reply's, for `chat`).
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// 0 is greedy; higher samples more freely.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Sample among the K most likely tokens only.
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Sample among the most likely tokens whose probabilities sum to P.
    #[arg(long)]
    pub top_p: Option<f64>,
    /// Penalize tokens already present (Hugging Face's repetition_penalty; 1 is none).
    #[arg(long, default_value_t = 1.0)]
    pub repetition_penalty: f64,
    /// The sampling seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    pub device: String,
    /// How a GGUF file's quantized weights are kept: in their blocks on the device
    /// (`quantized`), or dequantized to f32 (`f32`).
    #[arg(long, value_enum, default_value_t = WeightsArg::Quantized)]
    pub weights: WeightsArg,
}

/// `--weights`.
#[derive(Clone, Copy, ValueEnum)]
pub enum WeightsArg {
    /// Block-quantized weights stay in their format on the device.
    Quantized,
    /// Every weight dequantized to f32.
    F32,
}

impl WeightsArg {
    /// The library's storage choice.
    pub fn storage(self) -> WeightStorage {
        match self {
            WeightsArg::Quantized => WeightStorage::Quantized,
            WeightsArg::F32 => WeightStorage::F32,
        }
    }
}

impl SamplingArgs {
    /// The device and the checked sampling options (refused before any model loads).
    pub fn resolve(&self) -> Result<(Device, SamplingOptions), String> {
        let device = Device::parse(&self.device).map_err(|e| e.to_string())?;
        let sampling = SamplingOptions {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            repetition_penalty: self.repetition_penalty,
            seed: self.seed,
        };
        sampling.validate().map_err(|e| e.to_string())?;
        Ok((device, sampling))
    }
}

/// The model and its tokenizer from a GGUF file (its weights kept as `storage` says) or a
/// Hugging Face folder.
pub fn load_model(
    path: &Path,
    device: &Device,
    storage: WeightStorage,
) -> Result<(LlamaForCausalLM, LlamaTokenizer), String> {
    if path.is_dir() {
        let model = LlamaForCausalLM::from_pretrained(path, device).map_err(|e| e.to_string())?;
        let tokenizer = LlamaTokenizer::from_pretrained(path).map_err(|e| e.to_string())?;
        Ok((model, tokenizer))
    } else {
        let file = GgufFile::open(path).map_err(|e| e.to_string())?;
        let model =
            LlamaForCausalLM::from_gguf_as(&file, device, storage).map_err(|e| e.to_string())?;
        let tokenizer = LlamaTokenizer::from_gguf(&file).map_err(|e| e.to_string())?;
        Ok((model, tokenizer))
    }
}

/// Prints generated text as it grows: each call decodes the tokens so far and writes what is
/// new, holding back a character split over tokens until it is whole.
#[derive(Default)]
pub struct TextStream {
    printed: usize,
}

impl TextStream {
    /// Write the text of `tokens` past what was printed before.
    pub fn update(
        &mut self,
        tokenizer: &LlamaTokenizer,
        tokens: &[u32],
        out: &mut dyn Write,
    ) -> anygrad::Result<()> {
        let text = tokenizer.decode(tokens, true)?;
        if text.len() > self.printed && !text.ends_with('\u{FFFD}') {
            if let Some(new) = text.get(self.printed..) {
                let _ = out.write_all(new.as_bytes());
                let _ = out.flush();
            }
            self.printed = text.len();
        }
        Ok(())
    }
}

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
    #[command(flatten)]
    sampling: SamplingArgs,
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
    // Bad options are refused before the model is loaded.
    let (device, sampling) = args.sampling.resolve()?;
    let (model, tokenizer) = load_model(&args.model, &device, args.sampling.weights.storage())?;
    anygrad::reset_peak_memory(&device);

    let prompt_ids = match (&args.prompt_ids, &args.prompt) {
        (Some(ids), _) => ids.clone(),
        (None, Some(prompt)) => {
            let text = if args.chat {
                if tokenizer.chat_template.is_none() {
                    eprintln!("--chat: the model has no chat template: using ChatML");
                }
                let template = tokenizer.chat_template_or_chatml();
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
        max_new_tokens: args.sampling.max_tokens,
        sampling,
        stop_tokens,
    };

    let mut stdout = std::io::stdout().lock();
    let mut generated: Vec<u32> = Vec::new();
    let mut text_stream = TextStream::default();
    let stream = !args.json;
    let mut on_token = |token: u32| -> anygrad::Result<()> {
        generated.push(token);
        if stream {
            text_stream.update(&tokenizer, &generated, &mut stdout)?;
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
    let model_bytes = model.weight_bytes();
    // Weights, cache and activations since the model loaded (a GPU's allocator).
    let peak_bytes = anygrad::memory_stats(&device).map(|stats| stats.peak_allocated_bytes);
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
            "weights": match args.sampling.weights {
                WeightsArg::Quantized => "quantized",
                WeightsArg::F32 => "f32",
            },
            "model_bytes": model_bytes,
            "peak_device_bytes": peak_bytes,
        });
        println!("{object}");
    } else {
        println!();
        eprintln!(
            "{} prompt tokens at {prompt_rate:.1} tokens/s, {} generated at {generated_rate:.1} tokens/s on {device}",
            prompt_ids.len(),
            output.generated_ids.len(),
        );
        let peak = peak_bytes.map_or(String::new(), |bytes| {
            format!(", device peak {:.1} MiB", bytes as f64 / (1 << 20) as f64)
        });
        eprintln!(
            "weights {:.1} MiB on the device{peak}",
            model_bytes as f64 / (1 << 20) as f64
        );
    }
    Ok(())
}
