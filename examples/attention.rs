//! A small transformer encoder learns to sort digit sequences: each input is 8 random digits,
//! each output position must predict the digit at that position of the sorted sequence.
//! Token and position embeddings, two pre-norm `TransformerEncoderLayer`s (whose attention is
//! `scaled_dot_product_attention`), a linear head, AdamW and cross-entropy per position. It
//! prints the loss and the per-digit and whole-sequence accuracy on held-out sequences.
//!
//! Run: `cargo run --release -p anygrad --example attention` (add `ANYGRAD_DEVICE=cpu` to
//! force the CPU; `-- --steps N` trains N steps instead of 400, as CI's smoke run does).

use anygrad::nn::{
    cross_entropy, AdamConfig, AdamW, Embedding, Linear, Module, Optimizer,
    TransformerEncoderLayer, TransformerLayerConfig,
};
use anygrad::prelude::*;

const LENGTH: usize = 8;
const DIGITS: usize = 10;
const WIDTH: usize = 64;
const BATCH: usize = 128;
const STEPS: usize = 400;

/// The training steps: `--steps N` (N > 0), else [`STEPS`].
fn steps() -> Result<usize> {
    let usage = "usage: attention [--steps N] (N > 0, 400 by default)";
    let mut args = std::env::args().skip(1);
    let mut steps = STEPS;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--steps" => {
                steps = args
                    .next()
                    .and_then(|value| value.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .ok_or_else(|| Error::invalid("attention", usage))?;
            }
            other => {
                return Err(Error::invalid(
                    "attention",
                    format!("unknown argument {other:?}; {usage}"),
                ))
            }
        }
    }
    Ok(steps)
}

#[derive(Module)]
#[module(crate = "anygrad::nn")]
struct Sorter {
    tokens: Embedding,
    positions: Embedding,
    layers: Vec<TransformerEncoderLayer>,
    head: Linear,
}

impl Sorter {
    fn new(device: &Device) -> Result<Sorter> {
        let config = TransformerLayerConfig {
            dim_feedforward: 2 * WIDTH,
            dropout: 0.0,
            batch_first: true,
            norm_first: true,
            ..TransformerLayerConfig::new(WIDTH, 4)
        };
        Ok(Sorter {
            tokens: Embedding::new(DIGITS, WIDTH, device)?,
            positions: Embedding::new(LENGTH, WIDTH, device)?,
            layers: vec![
                TransformerEncoderLayer::new(config, device)?,
                TransformerEncoderLayer::new(config, device)?,
            ],
            head: Linear::new(WIDTH, DIGITS, true, device)?,
        })
    }

    /// `ids [batch, LENGTH]` (int32) → logits `[batch, LENGTH, DIGITS]`.
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let places = Tensor::arange(0.0, LENGTH as f64, 1.0, DType::I32, ids.device())?;
        let mut x = self
            .tokens
            .forward(ids)?
            .mul_scalar(0.5)?
            .add(&self.positions.forward(&places)?.mul_scalar(0.5)?)?;
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        self.head.forward(&x)
    }
}

/// A reproducible batch of random sequences and their sorted versions (a small LCG).
fn batch(state: &mut u64, device: &Device) -> Result<(Tensor, Tensor)> {
    let mut inputs = Vec::with_capacity(BATCH * LENGTH);
    let mut targets = Vec::with_capacity(BATCH * LENGTH);
    for _ in 0..BATCH {
        let mut row: Vec<i32> = (0..LENGTH)
            .map(|_| {
                *state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((*state >> 33) % DIGITS as u64) as i32
            })
            .collect();
        inputs.extend_from_slice(&row);
        row.sort_unstable();
        targets.extend_from_slice(&row);
    }
    Ok((
        Tensor::from_vec(inputs, &[BATCH, LENGTH], device)?,
        Tensor::from_vec(targets, &[BATCH, LENGTH], device)?,
    ))
}

fn main() -> Result<()> {
    let steps = steps()?;
    let device = Device::best()?;
    println!("device: {}", device.description());
    anygrad::manual_seed(0);
    let model = Sorter::new(&device)?;
    let mut optimizer = AdamW::new(
        model.named_parameter_slots(),
        AdamConfig::new(2e-3).weight_decay(0.0),
    )?;
    let mut state = 1u64;
    let start = std::time::Instant::now();
    for step in 1..=steps {
        let (inputs, targets) = batch(&mut state, &device)?;
        let logits = model.forward(&inputs)?;
        let loss = cross_entropy(
            &logits.reshape([BATCH * LENGTH, DIGITS])?,
            &targets.reshape([BATCH * LENGTH])?,
        )?;
        optimizer.zero_grad();
        loss.backward()?;
        optimizer.step()?;
        if step % 50 == 0 {
            println!("step {step:4}  loss {:.4}", loss.item_f64()?);
        }
    }
    let (inputs, targets) = batch(&mut 12345u64, &device)?;
    let predicted = {
        let _no_graph = anygrad::no_grad();
        model.forward(&inputs)?.argmax(-1, false)?
    };
    let predicted: Vec<i32> = predicted.to_dtype(DType::I32)?.to_vec()?;
    let targets: Vec<i32> = targets.to_vec()?;
    let digits_right = predicted
        .iter()
        .zip(&targets)
        .filter(|(p, t)| p == t)
        .count();
    let sequences_right = predicted
        .chunks(LENGTH)
        .zip(targets.chunks(LENGTH))
        .filter(|(p, t)| p == t)
        .count();
    println!(
        "held-out: {:.1}% of digits, {:.1}% of whole sequences sorted right ({:.1} s)",
        100.0 * digits_right as f64 / targets.len() as f64,
        100.0 * sequences_right as f64 / BATCH as f64,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
