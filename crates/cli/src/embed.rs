//! `anygrad embed --model DIR [--device D] [--json] [--f16] SENTENCE...`: sentence embeddings
//! from a sentence-transformers directory (all-MiniLM-L6-v2 and other BERT encoders), one per
//! sentence: a line of numbers each, or with `--json` one JSON array of arrays.

use std::path::PathBuf;

use anygrad::models::SentenceEncoder;
use anygrad::{DType, Device};
use clap::Args;

/// Arguments of `anygrad embed`.
#[derive(Args)]
pub struct EmbedArgs {
    /// The model directory (config.json, model.safetensors, tokenizer.json, 1_Pooling/...).
    #[arg(long)]
    model: PathBuf,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// Print one JSON array of arrays instead of one line per sentence.
    #[arg(long)]
    json: bool,
    /// Run under f16 autocast (matmuls in f16; the output stays f32).
    #[arg(long)]
    f16: bool,
    /// The sentences to embed.
    #[arg(required = true)]
    sentences: Vec<String>,
}

/// Run `anygrad embed`.
pub fn run(args: EmbedArgs) -> Result<(), String> {
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    let encoder = SentenceEncoder::from_dir(&args.model, &device).map_err(|e| e.to_string())?;
    let sentences: Vec<&str> = args.sentences.iter().map(String::as_str).collect();
    let _autocast = if args.f16 {
        Some(anygrad::autocast(DType::F16, &device).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let embeddings = encoder.encode(&sentences).map_err(|e| e.to_string())?;
    let width = embeddings.shape()[1];
    let values = embeddings.to_vec_f32().map_err(|e| e.to_string())?;
    let rows: Vec<&[f32]> = values.chunks(width.max(1)).collect();
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&rows).map_err(|e| e.to_string())?
        );
    } else {
        for row in rows {
            let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
            println!("{}", line.join(" "));
        }
    }
    Ok(())
}
