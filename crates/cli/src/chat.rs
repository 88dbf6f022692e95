//! `anygrad chat --model PATH [--system TEXT] [--max-tokens N] [--temperature T] [--top-k K]
//! [--top-p P] [--repetition-penalty R] [--seed S] [--device D]`: an interactive conversation
//! with a Llama-family chat model (a GGUF file or a Hugging Face folder). Each line read from
//! standard input is a user message; the whole conversation goes through the model's chat
//! template (ChatML for a model without one) and the reply streams to standard output. `/reset` forgets the conversation,
//! `/exit` (or the end of input) ends it. When the conversation outgrows the model's context,
//! its oldest turns are dropped (the system message stays).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anygrad::models::llama::{generate, ChatMessage, GenerationOptions};
use clap::Args;

use crate::generate::{load_model, SamplingArgs, TextStream};

/// Arguments of `anygrad chat`.
#[derive(Args)]
pub struct ChatArgs {
    /// A GGUF file, or a Hugging Face folder (config.json, model.safetensors, tokenizer.json).
    #[arg(long)]
    model: PathBuf,
    /// A system message (instead of the template's default).
    #[arg(long)]
    system: Option<String>,
    #[command(flatten)]
    sampling: SamplingArgs,
}

/// Run `anygrad chat`.
pub fn run(args: ChatArgs) -> Result<(), String> {
    let (device, sampling) = args.sampling.resolve()?;
    let (model, tokenizer) = load_model(&args.model, &device, args.sampling.weights.storage())?;
    if tokenizer.chat_template.is_none() {
        eprintln!("the model has no chat template: using ChatML");
    }
    let template = tokenizer.chat_template_or_chatml();
    let mut stop_tokens: Vec<u32> = model.config().eos_token_ids.clone();
    stop_tokens.extend(tokenizer.eos_token_id);
    stop_tokens.extend(tokenizer.token_to_id("<|im_end|>"));
    let options = GenerationOptions {
        max_new_tokens: args.sampling.max_tokens,
        sampling,
        stop_tokens: stop_tokens.clone(),
    };
    let context = model.config().context_length();
    let system = args
        .system
        .clone()
        .or_else(|| template.default_system_message());
    eprintln!("chatting on {device}; /reset forgets the conversation, /exit ends it");

    let mut turns: Vec<ChatMessage> = Vec::new();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut lines = stdin.lock().lines();
    loop {
        eprint!("> ");
        let Some(line) = lines.next() else { break };
        let line = line.map_err(|e| format!("chat: reading standard input: {e}"))?;
        let message = line.trim();
        match message {
            "" => continue,
            "/exit" | "/quit" => break,
            "/reset" => {
                turns.clear();
                eprintln!("(the conversation is forgotten)");
                continue;
            }
            _ => {}
        }
        turns.push(ChatMessage::new("user", message));
        // The conversation's tokens, without its oldest turns while they do not fit.
        let prompt_ids = loop {
            let mut messages: Vec<ChatMessage> = Vec::new();
            if let Some(system) = &system {
                messages.push(ChatMessage::new("system", system));
            }
            messages.extend(turns.iter().cloned());
            let text = template.apply(&messages, true).map_err(|e| e.to_string())?;
            let ids = tokenizer.encode(&text).map_err(|e| e.to_string())?;
            if ids.len() + options.max_new_tokens <= context || turns.len() <= 1 {
                break ids;
            }
            turns.drain(..turns.len().min(2));
        };
        let mut reply: Vec<u32> = Vec::new();
        let mut text_stream = TextStream::default();
        let mut on_token = |token: u32| -> anygrad::Result<()> {
            if !stop_tokens.contains(&token) {
                reply.push(token);
                text_stream.update(&tokenizer, &reply, &mut stdout)?;
            }
            Ok(())
        };
        generate(&model, &prompt_ids, &options, &mut on_token).map_err(|e| e.to_string())?;
        let _ = writeln!(stdout);
        let _ = stdout.flush();
        let answer = tokenizer.decode(&reply, true).map_err(|e| e.to_string())?;
        turns.push(ChatMessage::new("assistant", answer.trim()));
    }
    Ok(())
}
