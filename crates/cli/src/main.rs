//! The `anygrad` command: list devices, check a machine (`doctor`), train the built-in models,
//! embed sentences with a pretrained BERT encoder (`embed`), generate text with a Llama-family
//! model (`generate`), import ONNX models (`onnx`), and benchmark. Every failure is one line
//! on stderr and a non-zero exit, never a panic trace.

mod bench;
mod chat;
mod devices;
mod doctor;
mod doctor_layers;
mod doctor_ops;
mod embed;
mod environment;
mod generate;
mod kernels;
#[cfg(feature = "mpi")]
mod mpi;
mod onnx;
#[cfg(feature = "plot")]
mod plot;
mod profile;
mod runtime_dir;
mod train;

use std::process::ExitCode;

use anygrad::{DType, Device};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "anygrad",
    version,
    about = "PyTorch-shaped deep learning on any GPU (wgpu) or the CPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model (default: the digits MLP on the best device).
    Train(train::TrainArgs),
    /// List the GPU adapters anygrad can use (index, name, backend, limits, features).
    Devices {
        /// One JSON object per adapter instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check this machine: adapters, drivers, and every GPU kernel against the CPU.
    Doctor {
        /// One JSON object per check.
        #[arg(long)]
        json: bool,
    },
    /// Work with the GPU kernels' WGSL (see `kernels dump`).
    Kernels {
        #[command(subcommand)]
        command: KernelsCommand,
    },
    /// Sentence embeddings from a sentence-transformers model directory (all-MiniLM-L6-v2).
    Embed(embed::EmbedArgs),
    /// Generate text with a Llama-family language model (a GGUF file or a Hugging Face folder).
    Generate(generate::GenerateArgs),
    /// Chat with a Llama-family chat model: each line of standard input is a message, the
    /// reply streams back (`/reset` forgets the conversation, `/exit` ends it).
    Chat(chat::ChatArgs),
    /// Import ONNX models: `info`, `run` on .npy inputs, `test` backend-test folders.
    Onnx {
        #[command(subcommand)]
        command: onnx::OnnxCommand,
    },
    /// Profile a few steps and print the per-op table (GPU time, calls, CPU fallbacks).
    Profile(profile::ProfileArgs),
    /// Benchmark a workload and print median timings.
    Bench {
        /// Which workload.
        #[arg(value_enum)]
        workload: Workload,
        /// Device: cpu, gpu, gpu:N or best.
        #[arg(long, default_value = "best")]
        device: String,
        /// Element type for matmul: f32 or f16.
        #[arg(long, default_value = "f32")]
        dtype: String,
        /// Matrix sizes for matmul (comma separated).
        #[arg(long, value_delimiter = ',', default_value = "256,512,1024,2048")]
        sizes: Vec<usize>,
        /// Approximate seconds to spend timing each case (a positive number).
        #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
        seconds: f64,
        /// Batch sizes for resnet18 (`auto` doubles until out of memory; default
        /// 16,32,64,128,256); for resnet18-train one batch (default 64), per device with
        /// --devices; for minilm and minilm-train one batch of sequences (default 64); for
        /// onnx one batch, the model's symbolic batch dim (default 64).
        #[arg(long, value_delimiter = ',')]
        batch: Vec<String>,
        /// resnet18-train data parallel over these devices (gpu:0,gpu:1, all, cpu,cpu):
        /// images/s on one device and on all, the scaling, and the gradient exchange per step.
        #[arg(long)]
        devices: Option<String>,
        /// resnet18-train as one rank of an MPI job (`mpirun -n 2 anygrad bench resnet18-train
        /// --distributed`, build feature `mpi`): rank 0 reports images/s over all ranks and
        /// the scaling over one device.
        #[arg(long, conflicts_with = "devices")]
        distributed: bool,
        /// Mixed precision for resnet18 / resnet18-train / minilm / minilm-train / onnx
        /// (autocast f16, loss scaling).
        #[arg(long)]
        amp: bool,
        /// Skip the CPU baseline of resnet18 (it is slow on small machines).
        #[arg(long)]
        no_cpu_baseline: bool,
        /// Elements for the elementwise workload.
        #[arg(long, default_value_t = 64 << 20)]
        elements: usize,
        /// The attention workload's batch, heads, sequence length and head size.
        #[arg(long, value_delimiter = ',', default_value = "8,12,512,64")]
        attention_shape: Vec<usize>,
        /// Causal attention for the attention workload.
        #[arg(long)]
        causal: bool,
        /// Run the attention workload through the composite (matmul, softmax, matmul) instead
        /// of the fused GPU kernel, for comparison (like `ANYGRAD_FUSED_ATTENTION=off`).
        #[arg(long)]
        composite_attention: bool,
        /// Tokens per sequence for minilm and minilm-train.
        #[arg(long, default_value_t = 128)]
        sequence_length: usize,
        /// minilm / minilm-train: a sentence-transformers directory (all-MiniLM-L6-v2) to load
        /// instead of the same architecture with seeded random weights; onnx: the `.onnx` file
        /// (required).
        #[arg(long)]
        model: Option<std::path::PathBuf>,
        /// JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum KernelsCommand {
    /// Write every catalogued kernel's WGSL to a folder, one file per kernel.
    Dump {
        /// The folder to write (created if missing).
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Workload {
    /// Square matrix products: GFLOPS.
    Matmul,
    /// `a*b + a` and a copy on 64M f32 elements: GB/s.
    Elementwise,
    /// Host time per small op over 1,000 chained ops: µs/op.
    Overhead,
    /// The digits MLP training epoch: ms/epoch.
    Mlp,
    /// ResNet-18 inference per batch size: images/s, peak memory, speed-up over the CPU.
    Resnet18,
    /// ResNet-18 training (one SGD step per iteration): images/s.
    Resnet18Train,
    /// Scaled dot-product attention forward + backward at --attention-shape (--dtype): ms,
    /// TFLOPS, peak memory.
    Attention,
    /// all-MiniLM-L6-v2 sentence embeddings (random weights unless --model) at --batch ×
    /// --sequence-length tokens, f32 or --amp: sequences/s, peak memory.
    Minilm,
    /// MiniLM training steps (head, cross-entropy, AdamW) without and with gradient
    /// checkpointing of the encoder layers: sequences/s, peak memory.
    MinilmTrain,
    /// An imported ONNX model (--model FILE.onnx) on random inputs at --batch (its symbolic
    /// batch dim), f32 or --amp: images/s, peak memory, the convolution chains fused. Not
    /// part of `all`.
    Onnx,
    /// Every workload above.
    All,
}

/// Whether every bare word of a log filter is a level or names one of the crates that log
/// (`verbose` would otherwise be taken as a target name and silently enable nothing).
fn log_filter_looks_valid(filter: &str) -> bool {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    const TARGETS: [&str; 3] = ["anygrad", "wgpu", "naga"];
    filter.split(',').map(str::trim).all(|directive| {
        directive.is_empty()
            || directive.contains('=')
            || directive.contains('[')
            || LEVELS.contains(&directive.to_ascii_lowercase().as_str())
            || TARGETS.iter().any(|target| directive.starts_with(target))
    })
}

fn main() -> ExitCode {
    runtime_dir::ensure_runtime_dir();
    environment::warn_about_environment();
    let filter = match std::env::var("ANYGRAD_LOG") {
        Ok(value) if !value.trim().is_empty() => {
            let parsed = if log_filter_looks_valid(&value) {
                tracing_subscriber::EnvFilter::try_new(&value).map_err(|e| e.to_string())
            } else {
                Err("a bare word must be a level".to_string())
            };
            parsed.unwrap_or_else(|error| {
                eprintln!(
                    "warning: ANYGRAD_LOG={value} is not a log filter ({error}); use e.g. \
                     error, warn, info, debug or anygrad_core=debug; using warn"
                );
                tracing_subscriber::EnvFilter::new("warn")
            })
        }
        // wgpu's OpenGL probe logs an error for every EGL platform that is missing (no
        // display, no DRI driver) even when another one works: noise, not anygrad's error.
        // The autotuner's one line saying that the first steps on a new adapter time kernels
        // is shown.
        _ => tracing_subscriber::EnvFilter::new(
            "warn,wgpu_hal::gles::egl=off,anygrad_core::backend::gpu::autotune=info",
        ),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    };
    // Every tensor of the command is dropped by now: wait for the GPUs' submitted work and
    // close them before the process exits, on every path (`anygrad::gpu::shutdown`: a driver
    // thread still compiling a kernel while the exit handlers ran crashed the process after
    // its error was printed).
    anygrad::gpu::shutdown();
    code
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Train(args) => train::run_train(args),
        Command::Devices { json } => devices::run(json),
        Command::Doctor { json } => doctor::run(json),
        Command::Kernels {
            command: KernelsCommand::Dump { out },
        } => kernels::dump(&out),
        Command::Embed(args) => embed::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Chat(args) => chat::run(args),
        Command::Profile(args) => profile::run_profile(args),
        Command::Onnx { command } => onnx::run(command),
        Command::Bench {
            workload,
            device,
            dtype,
            sizes,
            seconds,
            elements,
            attention_shape,
            causal,
            composite_attention,
            sequence_length,
            model,
            batch,
            amp,
            no_cpu_baseline,
            json,
            devices,
            distributed,
        } => {
            let batch_given = !batch.is_empty();
            let batch = if batch.is_empty() {
                ["16", "32", "64", "128", "256"].map(String::from).to_vec()
            } else {
                batch
            };
            let batches = batch
                .iter()
                .map(|b| match (b.as_str(), b.parse::<usize>()) {
                    ("auto", _) => Ok(0),
                    (_, Ok(0)) => Err("--batch 0 is not a batch size; use `auto` to search \
                                       for the largest batch that fits"
                        .to_string()),
                    (_, Ok(size)) => Ok(size),
                    (_, Err(_)) => Err(format!(
                        "bad batch size `{b}`; use a positive number or auto"
                    )),
                })
                .collect::<Result<Vec<usize>, String>>()?;
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(format!(
                    "--seconds {seconds} must be a positive number of seconds"
                ));
            }
            if let Some(zero) = sizes.iter().find(|&&n| n == 0) {
                return Err(format!("--sizes {zero}: matrix sizes must be at least 1"));
            }
            if elements == 0 {
                return Err("--elements must be at least 1".to_string());
            }
            let attention_shape: [usize; 4] = match attention_shape[..] {
                [b, h, t, d] if b * h * t * d > 0 => [b, h, t, d],
                _ => {
                    return Err(format!(
                        "--attention-shape {attention_shape:?} must be four positive sizes \
                         B,H,T,d"
                    ))
                }
            };
            if sequence_length == 0 {
                return Err("--sequence-length must be at least 1".to_string());
            }
            if distributed {
                if !matches!(workload, Workload::Resnet18Train) {
                    return Err("--distributed applies to resnet18-train only".to_string());
                }
                let per_device = if batch_given { batches[0].max(1) } else { 64 };
                let results = bench::run_resnet18_train_distributed(&device, per_device, amp)?;
                if !results.is_empty() {
                    bench::report(&results, json);
                }
                return Ok(());
            }
            let device = Device::parse(&device).map_err(|e| e.to_string())?;
            let dtype = DType::parse(&dtype)
                .ok_or_else(|| format!("unknown dtype `{dtype}`; use f32 or f16"))?;
            if matches!(workload, Workload::Onnx) {
                let path = model
                    .as_deref()
                    .ok_or("bench onnx needs --model FILE.onnx")?;
                let batch = match batches[..] {
                    _ if !batch_given => None,
                    [size] if size > 0 => Some(size),
                    _ => return Err("bench onnx takes one --batch size (a number)".to_string()),
                };
                let results = bench::run_onnx(&device, path, batch, amp)?;
                bench::report(&results, json);
                return Ok(());
            }
            let run = |workload: Workload| match workload {
                Workload::Matmul => bench::run_matmul(&device, &sizes, dtype, seconds),
                Workload::Elementwise => bench::run_elementwise(&device, elements, 20),
                Workload::Overhead => bench::run_overhead(&device, 1000, 10),
                Workload::Mlp => bench::run_mlp(&device, 10),
                Workload::Resnet18 => bench::run_resnet18(&device, &batches, !no_cpu_baseline, amp),
                Workload::Resnet18Train => {
                    let per_device = if batch_given { batches[0].max(1) } else { 64 };
                    match &devices {
                        Some(list) => bench::run_resnet18_train_parallel(list, per_device, amp),
                        None => bench::run_resnet18_train(&device, per_device, amp),
                    }
                }
                Workload::Attention => {
                    if composite_attention {
                        anygrad::set_fused_attention(false);
                    }
                    bench::run_attention(&device, attention_shape, dtype, causal, seconds)
                }
                Workload::Minilm | Workload::MinilmTrain => {
                    let options = bench::MinilmOptions {
                        batch: if batch_given { batches[0].max(1) } else { 64 },
                        tokens: sequence_length,
                        amp,
                        model: model.as_deref(),
                        seconds,
                    };
                    if matches!(workload, Workload::Minilm) {
                        bench::run_minilm(&device, &options)
                    } else {
                        bench::run_minilm_train(&device, &options)
                    }
                }
                Workload::All | Workload::Onnx => Ok(Vec::new()),
            };
            let results = match workload {
                Workload::All => {
                    let mut all = Vec::new();
                    for each in [
                        Workload::Matmul,
                        Workload::Elementwise,
                        Workload::Overhead,
                        Workload::Mlp,
                        Workload::Resnet18,
                        Workload::Resnet18Train,
                        Workload::Attention,
                        Workload::Minilm,
                        Workload::MinilmTrain,
                    ] {
                        match run(each) {
                            Ok(results) => all.extend(results),
                            Err(error) => eprintln!("bench: a workload failed: {error}"),
                        }
                    }
                    all
                }
                single => run(single).map_err(|e| e.to_string())?,
            };
            bench::report(&results, json);
            Ok(())
        }
    }
}
