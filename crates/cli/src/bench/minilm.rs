//! MiniLM throughput: the BERT encoder of all-MiniLM-L6-v2 (vocabulary 30522, hidden 384, 6
//! layers of 12 heads, feed-forward 1536) with seeded random weights, or a real
//! sentence-transformers directory with `--model DIR`, on a batch of random token ids with a
//! full attention mask. The same workloads as `bench/pytorch_reference.py minilm
//! minilm-train`.
//!
//! - `minilm`: sentence embeddings as `anygrad embed` computes them (encoder, mean pooling,
//!   L2 normalization; `sentence_embeddings` of the models crate), eval mode, no graph, in
//!   f32 or under f16 autocast: sequences/s, tokens/s in the note, peak device memory.
//! - `minilm-train`: one training step per iteration (encoder in training mode with its
//!   dropouts, mean pooling, a 2-class linear head, cross-entropy, backward, AdamW with no
//!   decay on biases and norms; loss scaling under autocast), once with every encoder layer
//!   kept for backward and once with the layers checkpointed (recomputed in backward): the
//!   peak memory of the two is the activation memory checkpointing saves.

use std::path::Path;

use anygrad::models::bert::{sentence_embeddings, Pooling, TokenBatch};
use anygrad::models::{BertConfig, BertModel, SentenceEncoder};
use anygrad::nn::{
    cross_entropy, split_no_decay, AdamConfig, AdamW, GradScaler, Linear, Module, Optimizer,
    ParamGroup,
};
use anygrad::{
    autocast, empty_cache, memory_stats, no_grad, reset_peak_memory, AutocastGuard, DType, Device,
    Result, Tensor,
};

use super::{median, time_iterations, time_pipelined, BenchResult};

/// What a MiniLM benchmark runs: shape, precision, weights, and time per case.
#[derive(Debug, Clone)]
pub struct MinilmOptions<'a> {
    /// Sequences per batch.
    pub batch: usize,
    /// Tokens per sequence.
    pub tokens: usize,
    /// Run under f16 autocast (with loss scaling when training).
    pub amp: bool,
    /// A sentence-transformers directory to load instead of random weights.
    pub model: Option<&'a Path>,
    /// Approximate seconds of timed iterations per case.
    pub seconds: f64,
}

/// The encoder, its pooling and normalization, and where the weights came from.
struct Encoder {
    model: BertModel,
    pooling: Pooling,
    normalize: bool,
    source: String,
}

fn load_encoder(device: &Device, options: &MinilmOptions) -> Result<Encoder> {
    match options.model {
        Some(dir) => {
            let encoder = SentenceEncoder::from_dir(dir, device)?;
            let (pooling, normalize) = (encoder.pooling(), encoder.normalizes());
            Ok(Encoder {
                model: encoder.model,
                pooling,
                normalize,
                source: format!("weights from {}", dir.display()),
            })
        }
        None => {
            anygrad::manual_seed(0);
            Ok(Encoder {
                model: BertModel::new(&BertConfig::all_minilm_l6_v2(), device)?,
                pooling: Pooling::Mean,
                normalize: true,
                source: "all-MiniLM-L6-v2 config, random weights (seed 0)".into(),
            })
        }
    }
}

/// The all-MiniLM-L6-v2 encoder with seeded random weights and a batch of `batch` × `tokens`
/// random ids (what `anygrad profile minilm` runs).
pub fn random_minilm(
    device: &Device,
    batch: usize,
    tokens: usize,
) -> Result<(BertModel, TokenBatch)> {
    let options = MinilmOptions {
        batch,
        tokens,
        amp: false,
        model: None,
        seconds: 0.0,
    };
    let encoder = load_encoder(device, &options)?;
    let ids = random_batch(&encoder.model, device, &options)?;
    Ok((encoder.model, ids))
}

/// Random ids below the vocabulary size, every token attended, token type 0.
fn random_batch(model: &BertModel, device: &Device, options: &MinilmOptions) -> Result<TokenBatch> {
    let shape = [options.batch, options.tokens];
    Ok(TokenBatch {
        input_ids: Tensor::randint(0, model.config().vocab_size as i64, &shape, device)?,
        attention_mask: Tensor::ones(&shape, DType::I32, device)?,
        token_type_ids: Tensor::zeros(&shape, DType::I32, device)?,
    })
}

fn autocast_scope(device: &Device, amp: bool) -> Result<Option<AutocastGuard>> {
    if amp {
        Ok(Some(autocast(DType::F16, device)?))
    } else {
        Ok(None)
    }
}

/// Probe one step after a first warm-up (each new shape's first call runs its heuristic
/// kernel, a later one times the candidates: the autotuner), then time enough iterations for
/// about `seconds` (3 to 200) after a warm-up, with the peak memory counted from the warm-up
/// on.
fn measure(
    device: &Device,
    seconds: f64,
    mut step: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    let probe = time_iterations(device, 1, 1, &mut step)?;
    let iterations = ((seconds * 1e3 / probe[0].max(1e-3)) as usize).clamp(3, 200);
    empty_cache(device);
    reset_peak_memory(device);
    time_iterations(device, 2, iterations, step)
}

fn result(
    bench: &str,
    device: &Device,
    options: &MinilmOptions,
    suffix: &str,
    samples: &[f64],
    note: String,
) -> BenchResult {
    let med = median(samples);
    let sequences_per_second = options.batch as f64 / (med * 1e-3);
    let stats = memory_stats(device);
    BenchResult {
        bench: bench.into(),
        framework: "anygrad",
        device: device.description(),
        dtype: if options.amp {
            "float16-amp"
        } else {
            "float32"
        }
        .into(),
        size: format!("B{}xT{}{suffix}", options.batch, options.tokens),
        median_ms: med,
        min_ms: samples.first().copied().unwrap_or(f64::NAN),
        max_ms: samples.last().copied().unwrap_or(f64::NAN),
        iterations: samples.len(),
        value: sequences_per_second,
        unit: "sequences/s",
        peak_memory_bytes: stats.as_ref().map(|m| m.peak_allocated_bytes),
        peak_requested_bytes: stats.map(|m| m.peak_requested_bytes),
        note: Some(format!(
            "{:.0} tokens/s; {note}",
            sequences_per_second * options.tokens as f64
        )),
    }
}

/// Sentence-embedding inference (encoder, pooling, normalization) on random ids.
pub fn run_minilm(device: &Device, options: &MinilmOptions) -> Result<Vec<BenchResult>> {
    let encoder = load_encoder(device, options)?;
    encoder.model.eval();
    let batch = random_batch(&encoder.model, device, options)?;
    let (samples, (host, total)) = {
        let _no_graph = no_grad();
        let _autocast = autocast_scope(device, options.amp)?;
        let mut forward = || {
            sentence_embeddings(&encoder.model, &batch, encoder.pooling, encoder.normalize)
                .map(drop)
        };
        // Before `measure`, which resets the peak: ten batches in flight are not the peak
        // of one. The first call takes the autotuner's timing of new shapes.
        forward()?;
        let pipelined = time_pipelined(device, 10, &mut forward)?;
        (measure(device, options.seconds, forward)?, pipelined)
    };
    let note = format!(
        "host {host:.2} ms to issue a batch; {total:.2} ms a batch without a synchronize \
         between batches; embeddings: mean pooling{}; {}",
        if encoder.normalize {
            " + L2 normalization"
        } else {
            ""
        },
        encoder.source
    );
    Ok(vec![result("minilm", device, options, "", &samples, note)])
}

/// Training steps without and with gradient checkpointing of the encoder layers.
pub fn run_minilm_train(device: &Device, options: &MinilmOptions) -> Result<Vec<BenchResult>> {
    let encoder = load_encoder(device, options)?;
    let model = &encoder.model;
    model.train();
    let head = Linear::new(model.config().hidden_size, 2, true, device)?;
    let mut parameters = model.named_parameter_slots();
    parameters.extend(
        head.named_parameter_slots()
            .into_iter()
            .map(|(name, slot)| (format!("head.{name}"), slot)),
    );
    let (decay, no_decay) = split_no_decay(parameters);
    let config = AdamConfig::new(5e-5);
    let mut optimizer = AdamW::with_groups(vec![
        ParamGroup::new(decay, config.weight_decay(0.01)),
        ParamGroup::new(no_decay, config.weight_decay(0.0)),
    ])?;
    let batch = random_batch(model, device, options)?;
    let labels = Tensor::randint(0, 2, &[options.batch], device)?;
    let mut scaler = GradScaler::default();
    let mut results = Vec::new();
    let mut plain_peak = None;
    for checkpointed in [false, true] {
        model.set_gradient_checkpointing(checkpointed);
        let samples = measure(device, options.seconds, || {
            optimizer.zero_grad();
            let loss = {
                let _autocast = autocast_scope(device, options.amp)?;
                let pooled = sentence_embeddings(model, &batch, Pooling::Mean, false)?;
                cross_entropy(&head.forward(&pooled)?, &labels)?
            };
            if options.amp {
                scaler.scale(&loss)?.backward()?;
                scaler.step(&mut optimizer)?;
                scaler.update();
                Ok(())
            } else {
                loss.backward()?;
                optimizer.step()
            }
        })?;
        let mut note = format!(
            "{}; AdamW, 2-class head on mean pooling; {}",
            if checkpointed {
                "encoder layers checkpointed"
            } else {
                "no checkpointing"
            },
            encoder.source
        );
        let peak = memory_stats(device).map(|m| m.peak_allocated_bytes);
        match (checkpointed, plain_peak, peak) {
            (true, Some(plain), Some(peak)) => note.push_str(&format!(
                "; peak {:.0} MiB vs {:.0} MiB without checkpointing",
                peak as f64 / 1048576.0,
                plain as f64 / 1048576.0
            )),
            (true, _, _) => {}
            (false, _, _) => plain_peak = peak,
        }
        results.push(result(
            "minilm-train",
            device,
            options,
            if checkpointed { "-checkpoint" } else { "" },
            &samples,
            note,
        ));
    }
    model.set_gradient_checkpointing(false);
    Ok(results)
}
