//! `anygrad train`: the main job. Trains a model (the digits MLP by default) on the best
//! device, with a progress bar per epoch on stderr, a line per epoch, a final summary, and
//! optionally a JSON summary on stdout and a PNG of the curves.

use std::path::PathBuf;

use anygrad::train::{run, Event};
use anygrad::Device;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

/// Options of `anygrad train`.
#[derive(Args)]
pub struct TrainArgs {
    /// Device: cpu, gpu, gpu:N or best (default: ANYGRAD_DEVICE, else the best device).
    #[arg(long)]
    device: Option<String>,
    /// Number of epochs.
    #[arg(long, default_value_t = 20)]
    epochs: usize,
    /// Mini-batch size.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// Learning rate [default: 0.001]. With --resume the checkpoint's rate is kept unless
    /// --lr is given (e.g. a lower one after a run diverged).
    #[arg(long)]
    lr: Option<f64>,
    /// Optimizer.
    #[arg(long, value_enum, default_value = "adam")]
    optimizer: OptimizerArg,
    /// Seed for the split, the initialization and the shuffling.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Model.
    #[arg(long, value_enum, default_value = "mlp")]
    model: ModelArg,
    /// Data set.
    #[arg(long, value_enum, default_value = "digits")]
    dataset: DatasetArg,
    /// Directory holding the IDX files (mnist, fashion-mnist), or the image folder with one
    /// sub-folder of PNG/JPEG images per class (folder).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Use at most this many training images (mnist, fashion-mnist, folder).
    #[arg(long)]
    limit_train: Option<usize>,
    /// Folder: resize and crop images to this side (default 28 for cnn, 32 for resnet18; at
    /// most 4096).
    #[arg(long)]
    image_size: Option<usize>,
    /// Folder: threads decoding and augmenting images (0: on the training thread; capped at
    /// the available cores and the images of one batch, with a note).
    #[arg(long, default_value_t = 2)]
    num_workers: usize,
    /// Folder: no augmentation (by default: random crop with padding, colour jitter for RGB).
    #[arg(long)]
    no_augment: bool,
    /// Folder: also flip training images left to right at random.
    #[arg(long)]
    hflip: bool,
    /// Save a checkpoint (model, optimizer, epoch) here after every epoch.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Resume from a checkpoint written by --save.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Draw loss and accuracy curves into this PNG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Mixed precision: matmul and conv in f16 (autocast) with dynamic loss scaling.
    #[arg(long)]
    amp: bool,
    /// Print a machine-readable summary on stdout (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Data parallel in this process: gpu:0,gpu:1, all (every GPU) or cpu,cpu; --batch-size
    /// is the global batch, split across the devices.
    #[arg(long, conflicts_with = "device")]
    devices: Option<String>,
    /// One rank per device under mpirun (needs the `mpi` feature); the local rank picks the
    /// GPU unless --device is given; --batch-size is the global batch, split across ranks.
    #[arg(long, conflicts_with = "devices")]
    distributed: bool,
}

mod parallel;

#[derive(Clone, Copy, ValueEnum)]
enum OptimizerArg {
    Sgd,
    Adam,
    Adamw,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModelArg {
    Mlp,
    Cnn,
    Resnet18,
}

#[derive(Clone, Copy, ValueEnum)]
enum DatasetArg {
    Digits,
    Mnist,
    FashionMnist,
    /// One sub-folder of PNG/JPEG images per class under --data-dir.
    Folder,
}

/// `ANYGRAD_PROFILE=FILE`: where the run's Chrome trace goes (`None` when unset or empty),
/// checked before training like `--save` (a file path whose directory takes a new file), so
/// that a bad path is reported up front, naming the variable, not after the whole run.
fn profile_target() -> Result<Option<String>, String> {
    let path = match std::env::var("ANYGRAD_PROFILE") {
        Ok(path) if !path.is_empty() => path,
        _ => return Ok(None),
    };
    anygrad::nn::check_writable(&path).map_err(|error| {
        format!(
            "ANYGRAD_PROFILE={path}: the profile trace could not be written there ({error}); \
             set ANYGRAD_PROFILE to a writable file path, or unset it"
        )
    })?;
    Ok(Some(path))
}

/// Run `job`, under the profiler when `trace` is given: then print the op table and write
/// the Chrome trace there (an error names ANYGRAD_PROFILE).
fn profiled<T>(trace: Option<&str>, job: impl FnOnce() -> anygrad::Result<T>) -> Result<T, String> {
    let Some(path) = trace else {
        return job().map_err(|e| e.to_string());
    };
    let (result, recorded) = anygrad::profiler::profile(job).map_err(|e| e.to_string())?;
    recorded.export_chrome_trace(path).map_err(|error| {
        format!("ANYGRAD_PROFILE={path}: writing the profile trace failed: {error}")
    })?;
    eprintln!("{}", recorded.key_averages().table());
    eprintln!("profile trace: {path}");
    Ok(result)
}

/// Run the training job.
pub fn run_train(args: TrainArgs) -> Result<(), String> {
    if args.devices.is_some() || args.distributed {
        return parallel::run_parallel(args);
    }
    let trace = profile_target()?;
    let (device, why) = match &args.device {
        Some(text) => (
            Device::parse(text).map_err(|e| e.to_string())?,
            "chosen with --device".to_string(),
        ),
        None => match std::env::var("ANYGRAD_DEVICE") {
            Ok(text) if !text.is_empty() => (
                Device::parse(&text).map_err(|e| e.to_string())?,
                "chosen with ANYGRAD_DEVICE".to_string(),
            ),
            _ => match Device::best_available() {
                (device, Some(reason)) => (device, reason),
                (device, None) => (device, "the best GPU adapter found".to_string()),
            },
        },
    };
    eprintln!("device: {} ({why})", device.description());
    #[cfg(feature = "plot")]
    if let Some(path) = &args.plot {
        crate::plot::check_plot_path(path)?;
    }
    #[cfg(not(feature = "plot"))]
    if let Some(path) = &args.plot {
        return Err(format!(
            "cannot write {}: this build has no plotting (rebuild with the default `plot` feature)",
            path.display()
        ));
    }
    let config = parallel::config_of(&args);
    let style = ProgressStyle::with_template("epoch {prefix:>3} [{bar:30}] {pos}/{len} {msg}")
        .map_err(|e| e.to_string())?
        .progress_chars("=> ");
    let mut bar: Option<ProgressBar> = None;
    let total_epochs = config.epochs;
    let mut on_event = |event: Event| match event {
        Event::EpochStart { epoch, batches } => {
            let progress = ProgressBar::new(batches as u64).with_style(style.clone());
            progress.set_prefix(format!("{}", epoch + 1));
            bar = Some(progress);
        }
        Event::Batch { loss, .. } => {
            if let Some(progress) = &bar {
                progress.inc(1);
                if let Some(loss) = loss {
                    progress.set_message(format!("loss {loss:.4}"));
                }
            }
        }
        Event::Note(note) => eprintln!("note: {note}"),
        Event::EpochEnd(report) => {
            if let Some(progress) = bar.take() {
                progress.finish_and_clear();
            }
            eprintln!(
                "epoch {:>3}/{total_epochs}  loss {:.4}  train acc {:6.2}%  test acc {:6.2}%  {:7.1} ms",
                report.epoch,
                report.train_loss,
                100.0 * report.train_accuracy,
                100.0 * report.test_accuracy,
                report.seconds * 1e3
            );
        }
    };
    // ANYGRAD_PROFILE=FILE: record every op of the run and write a Chrome trace there.
    let summary = profiled(trace.as_deref(), || run(&config, &device, &mut on_event))?;
    eprintln!(
        "done: {} on {}, {} parameters, test accuracy {:.2}%, {:.1} ms per epoch ({} epochs, {:.2} s)",
        parallel::model_name(config.model),
        summary.device,
        summary.parameters,
        100.0 * summary.final_test_accuracy,
        summary.mean_epoch_seconds * 1e3,
        summary.epochs.len(),
        summary.total_seconds
    );
    #[cfg(feature = "plot")]
    if let Some(path) = &args.plot {
        crate::plot::plot_training(&summary.epochs, path)?;
        eprintln!("plot: {}", path.display());
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}
