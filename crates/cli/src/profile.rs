//! `anygrad profile train|resnet18|resnet18-train|minilm|minilm-train|attention`: run a warm-up step, then a few
//! steps under the op profiler and print the per-op table (sorted by device time; CPU fallbacks flagged)
//! and the achieved TFLOPS per matmul and convolution shape, optionally under f16 autocast
//! (`--amp`) and writing a Chrome trace for Perfetto / chrome://tracing.

use std::path::PathBuf;

use anygrad::models::bert::{sentence_embeddings, Pooling};
use anygrad::models::ResNet;
use anygrad::nn::{
    cross_entropy, AdamConfig, AdamW, CrossEntropyLoss, Linear, Module, Optimizer, Sgd, SgdConfig,
};
use anygrad::profiler::profile;
use anygrad::train::{build_model, build_optimizer, load_data, TrainConfig};
use anygrad::{autocast, no_grad, DType, Device, Result, Tensor};
use clap::{Args, ValueEnum};

/// Options of `anygrad profile`.
#[derive(Args)]
pub struct ProfileArgs {
    /// What to profile.
    #[arg(value_enum)]
    target: Target,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// Number of steps (training steps, or forward passes for resnet18).
    #[arg(long, default_value_t = 5)]
    steps: usize,
    /// Batch size for resnet18, minilm and attention.
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Tokens per sequence for minilm and attention.
    #[arg(long, default_value_t = 128)]
    tokens: usize,
    /// Attention heads for attention.
    #[arg(long, default_value_t = 12)]
    heads: usize,
    /// Width of each attention head (query, key and value) for attention.
    #[arg(long, default_value_t = 64)]
    head_dim: usize,
    /// Run the model under f16 autocast (resnet18 and minilm targets).
    #[arg(long)]
    amp: bool,
    /// Write a Chrome trace (JSON) here.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Rows of the per-kernel table (GPU timestamps; 0 leaves it out).
    #[arg(long, default_value_t = 30)]
    kernels: usize,
    /// Characters of each kernel's name shown in the per-kernel table.
    #[arg(long, default_value_t = 90)]
    kernel_width: usize,
}

#[derive(Clone, Copy, ValueEnum)]
enum Target {
    /// Training steps of the digits MLP.
    Train,
    /// ResNet-18 inference.
    Resnet18,
    /// ResNet-18 training steps.
    Resnet18Train,
    /// all-MiniLM-L6-v2 sentence embeddings (seeded random weights).
    Minilm,
    /// all-MiniLM-L6-v2 training steps: a 2-class head on mean pooling, AdamW.
    MinilmTrain,
    /// `scaled_dot_product_attention` forward and backward, f16 on the GPU (`bench
    /// attention`'s workload; `--batch`, `--heads`, `--tokens` and `--head-dim` set B, H, T
    /// and d).
    Attention,
}

/// Forward and backward of attention over `[batch, heads, tokens, head_dim]`, f16 where the
/// device has it.
fn steps_of_attention(device: &Device, steps: usize, shape: [usize; 4]) -> Result<()> {
    let dtype = if device.supports_f16() {
        DType::F16
    } else {
        DType::F32
    };
    let workload = crate::bench::AttentionWorkload::new(device, shape, dtype, false)?;
    for _ in 0..steps {
        workload.step()?;
    }
    device.synchronize()
}

fn steps_of_training(device: &Device, steps: usize) -> Result<()> {
    let config = TrainConfig::default();
    let data = load_data(&config, device)?;
    let model = build_model(config.model, &data, device)?;
    let mut optimizer = build_optimizer(config.optimizer, config.learning_rate, model.as_ref())?;
    let loss_fn = CrossEntropyLoss::new();
    for batch in data.train.iter_epoch(0).take(steps) {
        let (inputs, labels) = batch?;
        optimizer.zero_grad();
        let loss = loss_fn.forward(&model.forward(&inputs)?, &labels)?;
        loss.backward()?;
        optimizer.step()?;
    }
    device.synchronize()
}

/// Refuse counts that leave nothing to profile (an empty table is no answer): every step,
/// batch, token, head and head-width count, and the kernel names' width, must be at least 1
/// (`--kernels 0` is allowed: it leaves the per-kernel table out). The first zero is named.
fn check_counts(args: &ProfileArgs) -> std::result::Result<(), String> {
    let counts = [
        ("--steps", args.steps, "the number of profiled steps"),
        ("--batch", args.batch, "the batch size"),
        ("--tokens", args.tokens, "the number of tokens per sequence"),
        ("--heads", args.heads, "the number of attention heads"),
        (
            "--head-dim",
            args.head_dim,
            "the width of an attention head",
        ),
        (
            "--kernel-width",
            args.kernel_width,
            "the width of the kernel names' column",
        ),
    ];
    match counts.iter().find(|(_, value, _)| *value == 0) {
        Some((option, _, what)) => Err(format!("{option} 0: {what} must be at least 1")),
        None => Ok(()),
    }
}

/// Run the profile and print the table.
pub fn run_profile(args: ProfileArgs) -> std::result::Result<(), String> {
    check_counts(&args)?;
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    eprintln!("profiling on {}", device.description());
    let (steps, batch) = (args.steps, args.batch);
    // Autocast covers forward passes only (backward and the optimizer run outside it).
    let amp = || -> Result<_> {
        Ok(if args.amp {
            Some(autocast(DType::F16, &device)?)
        } else {
            None
        })
    };
    let work = || -> Result<()> {
        match args.target {
            Target::Train => steps_of_training(&device, steps),
            Target::Attention => {
                let shape = [batch, args.heads, args.tokens, args.head_dim];
                steps_of_attention(&device, steps, shape)
            }
            Target::Resnet18 => {
                let model = ResNet::resnet18(1000, &device)?;
                model.eval();
                let images = Tensor::randn(&[batch, 3, 224, 224], DType::F32, &device)?;
                let _guard = no_grad();
                let _autocast = amp()?;
                for _ in 0..steps {
                    model.forward(&images)?;
                }
                device.synchronize()
            }
            Target::Resnet18Train => {
                let model = ResNet::resnet18(1000, &device)?;
                let mut optimizer = Sgd::new(
                    model.named_parameter_slots(),
                    SgdConfig::new(0.01).momentum(0.9),
                )?;
                let images = Tensor::randn(&[batch, 3, 224, 224], DType::F32, &device)?;
                let labels = Tensor::randint(0, 1000, &[batch], &device)?;
                let loss_fn = CrossEntropyLoss::new();
                for _ in 0..steps {
                    optimizer.zero_grad();
                    let loss = {
                        let _autocast = amp()?;
                        loss_fn.forward(&model.forward(&images)?, &labels)?
                    };
                    loss.backward()?;
                    optimizer.step()?;
                }
                device.synchronize()
            }
            Target::Minilm => {
                let (model, ids) = crate::bench::random_minilm(&device, batch, args.tokens)?;
                model.eval();
                let _guard = no_grad();
                let _autocast = amp()?;
                for _ in 0..steps {
                    sentence_embeddings(&model, &ids, Pooling::Mean, true)?;
                }
                device.synchronize()
            }
            Target::MinilmTrain => {
                let (model, ids) = crate::bench::random_minilm(&device, batch, args.tokens)?;
                model.train();
                let head = Linear::new(model.config().hidden_size, 2, true, &device)?;
                let mut slots = model.named_parameter_slots();
                slots.extend(head.named_parameter_slots());
                let mut optimizer = AdamW::new(slots, AdamConfig::new(5e-5))?;
                let labels = Tensor::randint(0, 2, &[batch], &device)?;
                for _ in 0..steps {
                    optimizer.zero_grad();
                    let loss = {
                        let _autocast = amp()?;
                        let pooled = sentence_embeddings(&model, &ids, Pooling::Mean, false)?;
                        cross_entropy(&head.forward(&pooled)?, &labels)?
                    };
                    loss.backward()?;
                    optimizer.step()?;
                }
                device.synchronize()
            }
        }
    };
    // One unrecorded run first: kernel compilation and the autotuner's timing of candidates
    // on first use of a shape belong to no step.
    work().map_err(|e| e.to_string())?;
    let ((), recorded) = profile(work).map_err(|e| e.to_string())?;
    println!("{}", recorded.key_averages().table());
    let by_shape = recorded.shape_averages();
    if !by_shape.0.is_empty() {
        println!("matmul and convolutions by shape (achieved TFLOPS = operations / device time):");
        println!("{}", by_shape.table());
    }
    let memory_bound = recorded.memory_bound_shapes();
    if !memory_bound.0.is_empty() {
        println!("other ops by shape (most device time first):");
        println!("{}", memory_bound.time_table(12));
    }
    let kernels = recorded.kernel_averages();
    if !kernels.0.is_empty() && args.kernels > 0 {
        println!("kernels by device time (GPU timestamps, each kernel on its own):");
        println!("{}", kernels.table(args.kernels, args.kernel_width));
    }
    let timestamped = recorded.events.iter().filter(|e| e.gpu_timestamps).count();
    println!(
        "{} ops recorded in {:.1} ms; device times: {} from GPU timestamp queries, {} synchronized wall times",
        recorded.events.len(),
        recorded.total_us / 1e3,
        timestamped,
        recorded.events.len() - timestamped
    );
    if let Some(path) = &args.trace {
        recorded
            .export_chrome_trace(path)
            .map_err(|e| e.to_string())?;
        println!(
            "trace: {} (open in https://ui.perfetto.dev or chrome://tracing)",
            path.display()
        );
    }
    Ok(())
}
