//! The training loop on several devices: [`run_data_parallel`] (one process, a
//! [`DataParallel`] model over a device list) and [`run_distributed`] (one process per device,
//! gradients averaged over a [`Collective`] such as MPI). In both `batch_size` is the *global*
//! batch: the loader draws the same shuffled global batches as a single-device run, each
//! device (or rank) takes its slice, and the averaged gradients are those of the global
//! batch's mean loss, so the same configuration trains the same model whatever the number of
//! devices (within float rounding; BatchNorm normalizes per slice, as in PyTorch). Checkpoints
//! are the single-device format (replica 0's or rank 0's model and optimizer), so they resume
//! on any number of devices.

use std::time::Instant;

use anygrad_core::{autocast, AutocastGuard};
use anygrad_core::{device_count, no_grad, random, DType, Device, Error, Result, Tensor};
use anygrad_data::BatchLoader;
use anygrad_nn::parallel::{
    default_bucket_bytes, has_batch_norm, min_rows_per_replica, split_rows,
};
use anygrad_nn::{
    broadcast_buffers, broadcast_module, Collective, CrossEntropyLoss, DataParallel, GradScaler,
    GradientReducer, Module, Optimizer, ReplicatedOptimizer,
};

use crate::checkpointing::{check_save_target, device_lost, resume, save_unless_diverged};
use crate::config::TrainConfig;
use crate::data::load_data;
use crate::fit::{
    build_model, build_optimizer, correct_predictions, evaluate, optimizer_for, EpochReport, Event,
    TrainSummary,
};

/// Parse a device list: `gpu:0,gpu:1`, `cpu,cpu` (the same device may repeat: tests do) or
/// `all` (every GPU anygrad can open).
pub fn parse_devices(text: &str) -> Result<Vec<Device>> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("all") {
        let count = device_count();
        if count == 0 {
            return Err(Error::invalid(
                "--devices",
                "`all` found no GPU adapter (see `anygrad devices`); name devices instead, e.g. cpu,cpu",
            ));
        }
        return (0..count).map(Device::gpu).collect();
    }
    let devices = text
        .split(',')
        .filter(|part| !part.trim().is_empty())
        .map(Device::parse)
        .collect::<Result<Vec<_>>>()?;
    if devices.is_empty() {
        return Err(Error::invalid(
            "--devices",
            format!("`{text}` names no device; use e.g. gpu:0,gpu:1 or all"),
        ));
    }
    Ok(devices)
}

fn validate(config: &TrainConfig) -> Result<()> {
    if config.epochs == 0 {
        return Err(Error::invalid("train", "--epochs must be at least 1"));
    }
    if !(config.learning_rate > 0.0 && config.learning_rate.is_finite()) {
        return Err(Error::invalid(
            "train",
            format!(
                "learning rate {} must be a positive number",
                config.learning_rate
            ),
        ));
    }
    check_save_target(config)
}

/// Error unless the global batch gives each of `replicas` devices (or ranks: `spread`
/// says which) at least 2 samples where the model has batch norm, which cannot normalize a
/// single sample in training mode. Shorter last batches are split over fewer replicas.
fn check_batch_for_batch_norm(
    config: &TrainConfig,
    batch_norm: bool,
    replicas: usize,
    spread: &str,
) -> Result<()> {
    let needed = 2 * replicas;
    if batch_norm && config.batch_size < needed {
        return Err(Error::invalid(
            "train",
            format!(
                "--batch-size {} cannot give each of the {replicas} {spread} at least 2 \
                 samples, which the model's batch norm needs in training mode; use --batch-size \
                 {needed} or more, or fewer devices",
                config.batch_size
            ),
        ));
    }
    Ok(())
}

/// With `--amp`: a gradient scaler, after checking that every device computes in f16.
fn amp_scaler(config: &TrainConfig, devices: &[Device]) -> Result<Option<GradScaler>> {
    if !config.amp {
        return Ok(None);
    }
    if let Some(device) = devices.iter().find(|d| !d.supports_f16()) {
        return Err(Error::Unsupported {
            op: "train --amp",
            dtype: DType::F16,
            device: device.to_string(),
            hint: "; this adapter cannot compute in f16: train without --amp".into(),
        });
    }
    Ok(Some(GradScaler::default()))
}

/// Under `--amp`, f16 autocast on the calling thread (data parallelism carries it to every
/// replica's thread).
fn amp_autocast(
    scaler: &Option<&mut GradScaler>,
    device: &Device,
) -> Result<Option<AutocastGuard>> {
    match scaler {
        Some(_) => Ok(Some(autocast(DType::F16, device)?)),
        None => Ok(None),
    }
}

/// Step the optimizer, through the scaler under `--amp` (which skips the step, on every
/// replica or rank alike, when a gradient overflowed: they hold the same averaged gradients).
fn optimizer_step(
    optimizer: &mut dyn Optimizer,
    scaler: &mut Option<&mut GradScaler>,
) -> Result<()> {
    match scaler {
        Some(scaler) => {
            scaler.step(optimizer)?;
            scaler.update();
            Ok(())
        }
        None => optimizer.step(),
    }
}

fn accumulate(sum: &mut Option<Tensor>, value: Tensor) -> Result<()> {
    *sum = Some(match sum.take() {
        Some(previous) => previous.add(&value)?,
        None => value,
    });
    Ok(())
}

fn total(sums: &[Option<Tensor>]) -> Result<f64> {
    let mut total = 0.0;
    for sum in sums.iter().flatten() {
        total += sum.item_f64()?;
    }
    Ok(total)
}

fn summary(
    device: String,
    config: &TrainConfig,
    parameters: usize,
    epochs: Vec<EpochReport>,
    started: Instant,
) -> TrainSummary {
    let mean_epoch_seconds = if epochs.is_empty() {
        0.0
    } else {
        epochs.iter().map(|e| e.seconds).sum::<f64>() / epochs.len() as f64
    };
    TrainSummary {
        device,
        config: config.clone(),
        parameters,
        final_test_accuracy: epochs.last().map(|e| e.test_accuracy).unwrap_or(0.0),
        epochs,
        mean_epoch_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
    }
}

/// One epoch of data-parallel training; returns (mean loss, accuracy) over the epoch. With a
/// `scaler`, forward and loss run under f16 autocast on every replica and the loss is scaled
/// for backward (one scaler for all replicas).
pub fn train_epoch_data_parallel(
    model: &DataParallel,
    optimizer: &mut ReplicatedOptimizer,
    loader: &dyn BatchLoader,
    epoch: usize,
    mut scaler: Option<&mut GradScaler>,
    on_event: &mut dyn FnMut(Event),
) -> Result<(f64, f64)> {
    model.train();
    let loss_fn = CrossEntropyLoss::new();
    on_event(Event::EpochStart {
        epoch,
        batches: loader.len(),
    });
    let mut loss_sums: Vec<Option<Tensor>> = vec![None; model.len()];
    let mut correct_sums: Vec<Option<Tensor>> = vec![None; model.len()];
    let mut seen = 0usize;
    for (index, batch) in loader.iter_epoch(epoch as u64).enumerate() {
        let (inputs, labels) = batch?;
        optimizer.zero_grad();
        let loss_scale = scaler.as_deref().map_or(1.0, GradScaler::scale_value);
        let step = if scaler.is_some() {
            let step = {
                let _autocast = amp_autocast(&scaler, &model.devices()[0])?;
                model.forward_backward(&inputs, &labels, |output, target| {
                    loss_fn.forward(output, target)?.mul_scalar(loss_scale)
                })?
            };
            optimizer_step(optimizer, &mut scaler)?;
            step
        } else {
            // Without a scaler the update of each bucket runs during the exchange.
            model.forward_backward_step(
                &inputs,
                &labels,
                |output, target| loss_fn.forward(output, target),
                optimizer,
            )?
        };
        let count = labels.shape()[0];
        seen += count;
        {
            let _guard = no_grad();
            for replica in 0..model.len() {
                let weighted = step.weighted_losses[replica]
                    .to_dtype(DType::F32)?
                    .mul_scalar(count as f64 / loss_scale)?;
                accumulate(&mut loss_sums[replica], weighted)?;
                if let Some(output) = &step.outputs[replica] {
                    let correct = correct_predictions(output, &step.targets[replica])?;
                    accumulate(&mut correct_sums[replica], correct)?;
                }
            }
        }
        let loss = if index % 10 == 0 {
            Some(step.loss()? / loss_scale)
        } else {
            None
        };
        on_event(Event::Batch { epoch, index, loss });
    }
    let seen = seen.max(1) as f64;
    Ok((total(&loss_sums)? / seen, total(&correct_sums)? / seen))
}

/// Train on several devices in one process (see the module documentation).
pub fn run_data_parallel(
    config: &TrainConfig,
    devices: &[Device],
    on_event: &mut dyn FnMut(Event),
) -> Result<TrainSummary> {
    validate(config)?;
    if devices.is_empty() {
        return Err(Error::invalid("train", "--devices names no device"));
    }
    let mut scaler = amp_scaler(config, devices)?;
    random::manual_seed(config.seed);
    let data = load_data(config, &devices[0])?;
    data.notes
        .iter()
        .for_each(|note| on_event(Event::Note(note.clone())));
    let model = DataParallel::new(devices, |device| build_model(config.model, &data, device))?;
    check_batch_for_batch_norm(
        config,
        model.has_batch_norm(),
        devices.len(),
        "devices of --devices",
    )?;
    let mut optimizer = model.optimizer(|parameters| {
        optimizer_for(config.optimizer, config.learning_rate, parameters)
    })?;
    let (first_epoch, mut last_good) = resume(config, model.module(), &mut optimizer, on_event)?;
    if config.resume.is_some() {
        model.broadcast_state()?;
    }
    let started = Instant::now();
    let mut epochs = Vec::new();
    let names: Vec<String> = devices.iter().map(|d| d.to_string()).collect();
    let devices_named = names.join(", ");
    for epoch in first_epoch..config.epochs {
        let epoch_start = Instant::now();
        // A lost device stops the run with an error naming the last good checkpoint.
        let mut one_epoch = || -> Result<()> {
            let (train_loss, train_accuracy) = train_epoch_data_parallel(
                &model,
                &mut optimizer,
                &data.train,
                epoch,
                scaler.as_mut(),
                on_event,
            )?;
            model.sync_buffers()?;
            let (test_loss, test_accuracy) = evaluate(model.module(), &data.test)?;
            let report = EpochReport {
                epoch: epoch + 1,
                train_loss,
                train_accuracy,
                test_loss,
                test_accuracy,
                seconds: epoch_start.elapsed().as_secs_f64(),
            };
            on_event(Event::EpochEnd(&report));
            epochs.push(report);
            save_unless_diverged(
                config,
                model.module(),
                &optimizer,
                epoch,
                train_loss,
                &mut last_good,
            )
        };
        one_epoch()
            .map_err(|error| device_lost(error, config, &devices_named, epoch, &last_good))?;
    }
    let names: Vec<String> = devices.iter().map(|d| d.description()).collect();
    Ok(summary(
        format!("{} devices: {}", devices.len(), names.join(", ")),
        config,
        model.module().parameter_count(),
        epochs,
        started,
    ))
}

/// The data and helpers of one rank of a distributed run.
struct RankContext<'a> {
    model: &'a dyn Module,
    reducer: &'a GradientReducer,
    collective: &'a dyn Collective,
    loader: &'a dyn BatchLoader,
}

/// One epoch of one rank of a distributed run; returns the global (mean loss, accuracy).
fn train_epoch_distributed(
    rank_context: &RankContext<'_>,
    optimizer: &mut dyn Optimizer,
    epoch: usize,
    mut scaler: Option<&mut GradScaler>,
    on_event: &mut dyn FnMut(Event),
) -> Result<(f64, f64)> {
    let RankContext {
        model,
        reducer,
        collective,
        loader,
    } = *rank_context;
    model.train();
    let device = loader.device();
    let loss_fn = CrossEntropyLoss::new();
    let (rank, world) = (collective.rank(), collective.world_size());
    let min_rows = min_rows_per_replica(model);
    on_event(Event::EpochStart {
        epoch,
        batches: loader.len(),
    });
    let mut loss_sum: Option<Tensor> = None;
    let mut correct_sum: Option<Tensor> = None;
    let mut seen = 0usize;
    for (index, batch) in loader.iter_epoch(epoch as u64).enumerate() {
        let (inputs, labels) = batch?;
        let global = labels.shape()[0];
        let sizes = split_rows(global, world, min_rows);
        let start: usize = sizes[..rank].iter().sum();
        let rows = sizes[rank];
        seen += global;
        optimizer.zero_grad();
        let mut report = None;
        let loss_scale = scaler.as_deref().map_or(1.0, GradScaler::scale_value);
        if rows > 0 {
            let inputs = inputs.narrow(0, start, rows)?;
            let labels = labels.narrow(0, start, rows)?;
            let (logits, loss) = {
                let _autocast = amp_autocast(&scaler, device)?;
                let logits = model.forward(&inputs)?;
                let loss = loss_fn.forward(&logits, &labels)?;
                (logits, loss)
            };
            let weighted =
                loss.mul_scalar(GradientReducer::loss_weight(rows, global, world) * loss_scale)?;
            reducer.backward(&weighted, collective, device)?;
            let _guard = no_grad();
            accumulate(
                &mut loss_sum,
                loss.detach()
                    .to_dtype(DType::F32)?
                    .mul_scalar(rows as f64)?,
            )?;
            accumulate(
                &mut correct_sum,
                correct_predictions(&logits.detach(), &labels)?,
            )?;
            if index % 10 == 0 {
                report = Some(loss.item_f64()?);
            }
        } else {
            reducer.all_reduce(collective, device)?;
        }
        optimizer_step(optimizer, &mut scaler)?;
        on_event(Event::Batch {
            epoch,
            index,
            loss: report,
        });
    }
    let mut totals = [total(&[loss_sum])? as f32, total(&[correct_sum])? as f32];
    collective.all_reduce_sum(&mut totals)?;
    let seen = seen.max(1) as f64;
    Ok((totals[0] as f64 / seen, totals[1] as f64 / seen))
}

/// Train as one rank of a distributed job on `device` (see the module documentation). Every
/// rank must call it with the same configuration; only rank 0 saves checkpoints. Every rank
/// returns the same summary.
pub fn run_distributed(
    config: &TrainConfig,
    device: &Device,
    collective: &dyn Collective,
    on_event: &mut dyn FnMut(Event),
) -> Result<TrainSummary> {
    validate(config)?;
    let mut scaler = amp_scaler(config, std::slice::from_ref(device))?;
    random::manual_seed(config.seed);
    let data = load_data(config, device)?;
    data.notes
        .iter()
        .for_each(|note| on_event(Event::Note(note.clone())));
    let model = build_model(config.model, &data, device)?;
    check_batch_for_batch_norm(
        config,
        has_batch_norm(model.as_ref()),
        collective.world_size(),
        "ranks of --distributed",
    )?;
    let mut optimizer = build_optimizer(config.optimizer, config.learning_rate, model.as_ref())?;
    let (first_epoch, mut last_good) =
        resume(config, model.as_ref(), optimizer.as_mut(), on_event)?;
    // Every rank checks that the state stayed finite (they hold the same parameters, so they
    // stop together); only rank 0 writes the checkpoint, and every rank's errors name it.
    if collective.rank() != 0 {
        last_good = last_good.written_by_another();
    }
    broadcast_module(model.as_ref(), collective, 0)?;
    let reducer = GradientReducer::new(model.as_ref(), default_bucket_bytes());
    let started = Instant::now();
    let mut epochs = Vec::new();
    let device_named = format!("{device} (rank {})", collective.rank());
    for epoch in first_epoch..config.epochs {
        let epoch_start = Instant::now();
        // A lost device stops the run with an error naming the last good checkpoint.
        let mut one_epoch = || -> Result<()> {
            let rank_context = RankContext {
                model: model.as_ref(),
                reducer: &reducer,
                collective,
                loader: &data.train,
            };
            let (train_loss, train_accuracy) = train_epoch_distributed(
                &rank_context,
                optimizer.as_mut(),
                epoch,
                scaler.as_mut(),
                on_event,
            )?;
            broadcast_buffers(model.as_ref(), collective, 0)?;
            let (test_loss, test_accuracy) = evaluate(model.as_ref(), &data.test)?;
            let report = EpochReport {
                epoch: epoch + 1,
                train_loss,
                train_accuracy,
                test_loss,
                test_accuracy,
                seconds: epoch_start.elapsed().as_secs_f64(),
            };
            on_event(Event::EpochEnd(&report));
            epochs.push(report);
            save_unless_diverged(
                config,
                model.as_ref(),
                optimizer.as_ref(),
                epoch,
                train_loss,
                &mut last_good,
            )
        };
        one_epoch()
            .map_err(|error| device_lost(error, config, &device_named, epoch, &last_good))?;
    }
    Ok(summary(
        format!(
            "{} ranks ({} on rank {})",
            collective.world_size(),
            device.description(),
            collective.rank()
        ),
        config,
        model.parameter_count(),
        epochs,
        started,
    ))
}
