//! `anygrad train --devices LIST` (data parallel in this process) and `anygrad train
//! --distributed` (one MPI rank per device, feature `mpi`). `--batch-size` is the global batch
//! in both. Under MPI only rank 0 prints, plots and saves, and a rank that fails aborts the
//! whole job (`MPI_Abort`) so that no rank waits forever for it.

use anygrad::train::{
    parse_devices, run_data_parallel, DatasetKind, Event, ModelKind, OptimizerKind, TrainConfig,
    TrainSummary,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{DatasetArg, ModelArg, OptimizerArg, TrainArgs};

/// The run's configuration from the command line (shared with single-device runs).
pub(super) fn config_of(args: &TrainArgs) -> TrainConfig {
    TrainConfig {
        dataset: match args.dataset {
            DatasetArg::Digits => DatasetKind::Digits,
            DatasetArg::Mnist => DatasetKind::Mnist,
            DatasetArg::FashionMnist => DatasetKind::FashionMnist,
            DatasetArg::Folder => DatasetKind::Folder,
        },
        data_dir: args.data_dir.clone(),
        model: match args.model {
            ModelArg::Mlp => ModelKind::Mlp,
            ModelArg::Cnn => ModelKind::Cnn,
            ModelArg::Resnet18 => ModelKind::Resnet18,
        },
        optimizer: match args.optimizer {
            OptimizerArg::Sgd => OptimizerKind::Sgd,
            OptimizerArg::Adam => OptimizerKind::Adam,
            OptimizerArg::Adamw => OptimizerKind::AdamW,
        },
        learning_rate: args.lr.unwrap_or(1e-3),
        resume_learning_rate: args.lr.is_some(),
        batch_size: args.batch_size,
        epochs: args.epochs,
        seed: args.seed,
        save: args.save.clone(),
        resume: args.resume.clone(),
        limit_train: args.limit_train,
        amp: args.amp,
        image_size: args.image_size,
        num_workers: args.num_workers,
        augment: !args.no_augment,
        hflip: args.hflip,
        ..TrainConfig::default()
    }
}

/// The model's name as `--model` spells it.
pub(super) fn model_name(model: ModelKind) -> &'static str {
    match model {
        ModelKind::Mlp => "mlp",
        ModelKind::Cnn => "cnn",
        ModelKind::Resnet18 => "resnet18",
    }
}

/// Progress bars and epoch lines on stderr (silent when `quiet`: MPI ranks other than 0).
fn printer(epochs: usize, quiet: bool) -> Result<impl FnMut(Event), String> {
    let style = ProgressStyle::with_template("epoch {prefix:>3} [{bar:30}] {pos}/{len} {msg}")
        .map_err(|e| e.to_string())?
        .progress_chars("=> ");
    let mut bar: Option<ProgressBar> = None;
    Ok(move |event: Event| {
        if quiet {
            return;
        }
        match event {
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
                    "epoch {:>3}/{epochs}  loss {:.4}  train acc {:6.2}%  test acc {:6.2}%  {:7.1} ms",
                    report.epoch,
                    report.train_loss,
                    100.0 * report.train_accuracy,
                    100.0 * report.test_accuracy,
                    report.seconds * 1e3
                );
            }
        }
    })
}

/// The summary line, the plot and the JSON, as a single-device run prints them.
fn finish(args: &TrainArgs, config: &TrainConfig, summary: &TrainSummary) -> Result<(), String> {
    eprintln!(
        "done: {} on {}, {} parameters, test accuracy {:.2}%, {:.1} ms per epoch ({} epochs, {:.2} s)",
        model_name(config.model),
        summary.device,
        summary.parameters,
        100.0 * summary.final_test_accuracy,
        summary.mean_epoch_seconds * 1e3,
        summary.epochs.len(),
        summary.total_seconds
    );
    if let Some(path) = &args.plot {
        #[cfg(feature = "plot")]
        {
            crate::plot::plot_training(&summary.epochs, path)?;
            eprintln!("plot: {}", path.display());
        }
        #[cfg(not(feature = "plot"))]
        return Err(format!(
            "cannot write {}: this build has no plotting (rebuild with the default `plot` feature)",
            path.display()
        ));
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(summary).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

/// Run `--devices` or `--distributed`.
pub(super) fn run_parallel(args: TrainArgs) -> Result<(), String> {
    let config = config_of(&args);
    if args.distributed {
        return run_distributed(&args, &config);
    }
    let trace = super::profile_target()?;
    let text = args.devices.as_deref().unwrap_or("all");
    let devices = parse_devices(text).map_err(|e| e.to_string())?;
    let names: Vec<String> = devices.iter().map(|d| d.description()).collect();
    eprintln!(
        "devices: {} (global batch {}, split across them)",
        names.join(", "),
        config.batch_size
    );
    let mut on_event = printer(config.epochs, false)?;
    let summary = super::profiled(trace.as_deref(), || {
        run_data_parallel(&config, &devices, &mut on_event)
    })?;
    finish(&args, &config, &summary)
}

#[cfg(not(feature = "mpi"))]
fn run_distributed(_args: &TrainArgs, _config: &TrainConfig) -> Result<(), String> {
    Err(
        "--distributed needs MPI, and this build has none: install OpenMPI (openmpi-bin \
         libopenmpi-dev libclang-dev) and build with `cargo build --release -p anygrad-cli \
         --features mpi`, then run `mpirun -n 2 anygrad train --distributed`"
            .into(),
    )
}

#[cfg(feature = "mpi")]
fn run_distributed(args: &TrainArgs, config: &TrainConfig) -> Result<(), String> {
    use anygrad::nn::Collective;
    use anygrad::Device;

    let mpi = crate::mpi::MpiCollective::init()?;
    let rank = mpi.rank();
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<(), String> {
            let device = match &args.device {
                Some(text) => Device::parse(text),
                None => Device::gpu(mpi.local_rank()),
            }
            .map_err(|e| e.to_string())?;
            if rank == 0 {
                eprintln!(
                    "distributed: {} ranks, rank 0 on {} (global batch {}, split across ranks)",
                    mpi.world_size(),
                    device.description(),
                    config.batch_size
                );
            }
            let mut rank_config = config.clone();
            if rank != 0 {
                rank_config.save = None;
            }
            let mut on_event = printer(config.epochs, rank != 0)?;
            let summary =
                anygrad::train::run_distributed(&rank_config, &device, &mpi, &mut on_event)
                    .map_err(|e| e.to_string())?;
            if rank == 0 {
                finish(args, config, &summary)?;
            }
            Ok(())
        }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => {
            eprintln!("error (rank {rank}): {message}");
            mpi.abort(1)
        }
        Err(_) => {
            eprintln!("error (rank {rank}): the rank panicked; aborting the job");
            mpi.abort(1)
        }
    }
}
