//! The `anygrad` command: list devices, check a machine (`doctor`), train the built-in models,
//! and benchmark. Every failure is one line on stderr and a non-zero exit, never a panic trace.

mod bench;
mod devices;
mod doctor;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "plot")]
mod plot;
mod profile;
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
        /// Approximate seconds to spend timing each case.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// Batch sizes for resnet18 (`auto` doubles until out of memory; default
        /// 16,32,64,128,256); for resnet18-train one batch (default 64), per device with
        /// --devices.
        #[arg(long, value_delimiter = ',')]
        batch: Vec<String>,
        /// resnet18-train data parallel over these devices (gpu:0,gpu:1, all, cpu,cpu):
        /// images/s on one device and on all, the scaling, and the gradient exchange per step.
        #[arg(long)]
        devices: Option<String>,
        /// Mixed precision for resnet18 / resnet18-train (autocast f16, loss scaling).
        #[arg(long)]
        amp: bool,
        /// Skip the CPU baseline of resnet18 (it is slow on small machines).
        #[arg(long)]
        no_cpu_baseline: bool,
        /// Elements for the elementwise workload.
        #[arg(long, default_value_t = 64 << 20)]
        elements: usize,
        /// JSON lines instead of a table.
        #[arg(long)]
        json: bool,
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
    /// Every workload above.
    All,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ANYGRAD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Train(args) => train::run_train(args),
        Command::Devices { json } => devices::run(json),
        Command::Doctor { json } => doctor::run(json),
        Command::Profile(args) => profile::run_profile(args),
        Command::Bench {
            workload,
            device,
            dtype,
            sizes,
            seconds,
            elements,
            batch,
            amp,
            no_cpu_baseline,
            json,
            devices,
        } => {
            let batch_given = !batch.is_empty();
            let batch = if batch.is_empty() {
                ["16", "32", "64", "128", "256"].map(String::from).to_vec()
            } else {
                batch
            };
            let batches = batch
                .iter()
                .map(|b| {
                    if b == "auto" {
                        Ok(0)
                    } else {
                        b.parse::<usize>()
                            .map_err(|_| format!("bad batch size `{b}`"))
                    }
                })
                .collect::<Result<Vec<usize>, String>>()?;
            let device = Device::parse(&device).map_err(|e| e.to_string())?;
            let dtype = DType::parse(&dtype)
                .ok_or_else(|| format!("unknown dtype `{dtype}`; use f32 or f16"))?;
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
                Workload::All => Ok(Vec::new()),
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
