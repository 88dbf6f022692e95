//! The loop: forward, cross-entropy, backward, optimizer step, for every batch of every
//! epoch, then evaluation on the test set. Progress is reported through `Event`s so that a
//! command-line front end can draw progress bars while a library user ignores them.

use std::time::Instant;

use anygrad_core::{autocast, no_grad, random, DType, Device, Error, Result, Tensor};
use anygrad_data::BatchLoader;
use anygrad_models::{Mlp, ResNet, SmallCnn};
use anygrad_nn::{
    Adam, AdamConfig, AdamW, CrossEntropyLoss, GradScaler, Module, Optimizer, Parameter, Sgd,
    SgdConfig,
};
use serde::Serialize;

use crate::checkpointing::{check_save_target, device_lost, resume, save_unless_diverged};
use crate::config::{DatasetKind, ModelKind, OptimizerKind, TrainConfig};
use crate::data::{load_data, LoadedData};

/// Figures of one finished epoch.
#[derive(Debug, Clone, Serialize)]
pub struct EpochReport {
    pub epoch: usize,
    pub train_loss: f64,
    pub train_accuracy: f64,
    pub test_loss: f64,
    pub test_accuracy: f64,
    pub seconds: f64,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct TrainSummary {
    pub device: String,
    pub config: TrainConfig,
    pub parameters: usize,
    pub epochs: Vec<EpochReport>,
    pub final_test_accuracy: f64,
    pub mean_epoch_seconds: f64,
    pub total_seconds: f64,
}

/// Progress notifications.
pub enum Event<'a> {
    /// Training of an epoch starts with this many batches.
    EpochStart { epoch: usize, batches: usize },
    /// One batch finished, with its loss (read back only every few batches: reading blocks).
    Batch {
        epoch: usize,
        index: usize,
        loss: Option<f64>,
    },
    /// An epoch finished.
    EpochEnd(&'a EpochReport),
    /// Something the user should know about the run (one line, no trailing period), e.g. that
    /// a resumed run keeps the checkpoint's learning rate.
    Note(String),
}

/// Build the configured model on `device`.
pub fn build_model(kind: ModelKind, data: &LoadedData, device: &Device) -> Result<Box<dyn Module>> {
    Ok(match kind {
        ModelKind::Mlp if data.features == 64 => Box::new(Mlp::new(device)?),
        ModelKind::Mlp => Box::new(Mlp::with_sizes(
            &[data.features, 128, 64, data.classes],
            device,
        )?),
        ModelKind::Cnn if data.image_side == 28 && data.channels == 1 => {
            Box::new(SmallCnn::with_classes(data.classes, device)?)
        }
        ModelKind::Cnn => return Err(Error::invalid(
            "train",
            "the CNN is built for 28x28 images (mnist, fashion-mnist); use --model mlp for digits",
        )),
        ModelKind::Resnet18 if data.channels == 3 => {
            Box::new(ResNet::resnet18(data.classes, device)?)
        }
        ModelKind::Resnet18 => return Err(Error::invalid(
            "train",
            "resnet18 takes RGB images: train it on --dataset folder (digits and mnist are grey)",
        )),
    })
}

/// Create the optimizer once, over the model's parameters.
pub fn build_optimizer(
    kind: OptimizerKind,
    learning_rate: f64,
    model: &dyn Module,
) -> Result<Box<dyn Optimizer>> {
    let optimizer: Box<dyn Optimizer> =
        optimizer_for(kind, learning_rate, model.named_parameter_slots())?;
    Ok(optimizer)
}

/// The configured optimizer over given parameter slots (one per data-parallel replica).
pub fn optimizer_for(
    kind: OptimizerKind,
    learning_rate: f64,
    parameters: Vec<(String, Parameter)>,
) -> Result<Box<dyn Optimizer + Send>> {
    Ok(match kind {
        OptimizerKind::Sgd => Box::new(Sgd::new(
            parameters,
            SgdConfig::new(learning_rate).momentum(0.9),
        )?),
        OptimizerKind::Adam => Box::new(Adam::new(parameters, AdamConfig::new(learning_rate))?),
        OptimizerKind::AdamW => Box::new(AdamW::new(
            parameters,
            AdamConfig::new(learning_rate).weight_decay(0.01),
        )?),
    })
}

pub(crate) fn correct_predictions(logits: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let predicted = logits.argmax(1, false)?;
    predicted
        .eq(&labels.to_dtype(DType::I32)?)?
        .to_dtype(DType::F32)?
        .sum_all()
}

/// One training epoch; returns (mean loss, accuracy). Losses and correct counts are summed on
/// the device and read back once at the end, so the GPU is never waited on per batch. With a
/// `scaler`, forward and loss run under f16 autocast and the loss is scaled for backward.
pub fn train_epoch(
    model: &dyn Module,
    optimizer: &mut dyn Optimizer,
    loader: &dyn BatchLoader,
    epoch: usize,
    mut scaler: Option<&mut GradScaler>,
    on_event: &mut dyn FnMut(Event),
) -> Result<(f64, f64)> {
    model.train();
    let loss_fn = CrossEntropyLoss::new();
    let batches = loader.len();
    on_event(Event::EpochStart { epoch, batches });
    let mut loss_sum: Option<Tensor> = None;
    let mut correct_sum: Option<Tensor> = None;
    let mut seen = 0usize;
    for (index, batch) in loader.iter_epoch(epoch as u64).enumerate() {
        let (inputs, labels) = batch?;
        optimizer.zero_grad();
        let (logits, loss) = {
            let _autocast = match scaler {
                Some(_) => Some(autocast(DType::F16, inputs.device())?),
                None => None,
            };
            let logits = model.forward(&inputs)?;
            let loss = loss_fn.forward(&logits, &labels)?;
            (logits, loss)
        };
        match scaler.as_deref_mut() {
            Some(scaler) => {
                scaler.scale(&loss)?.backward()?;
                scaler.step(optimizer)?;
                scaler.update();
            }
            None => {
                loss.backward()?;
                optimizer.step()?;
            }
        }
        let count = labels.shape()[0];
        seen += count;
        {
            let _guard = no_grad();
            let weighted = loss
                .detach()
                .to_dtype(DType::F32)?
                .mul_scalar(count as f64)?;
            let correct = correct_predictions(&logits.detach(), &labels)?;
            loss_sum = Some(match loss_sum {
                Some(sum) => sum.add(&weighted)?,
                None => weighted,
            });
            correct_sum = Some(match correct_sum {
                Some(sum) => sum.add(&correct)?,
                None => correct,
            });
        }
        let report_loss = if index % 10 == 0 {
            Some(loss.item_f64()?)
        } else {
            None
        };
        on_event(Event::Batch {
            epoch,
            index,
            loss: report_loss,
        });
    }
    let total = seen.max(1) as f64;
    let loss = loss_sum.map(|t| t.item_f64()).transpose()?.unwrap_or(0.0) / total;
    let correct = correct_sum
        .map(|t| t.item_f64())
        .transpose()?
        .unwrap_or(0.0);
    Ok((loss, correct / total))
}

/// Mean loss and accuracy over a loader, in eval mode and without a graph.
pub fn evaluate(model: &dyn Module, loader: &dyn BatchLoader) -> Result<(f64, f64)> {
    model.eval();
    let _guard = no_grad();
    let loss_fn = CrossEntropyLoss::new();
    let mut loss_sum = 0.0;
    let mut correct = 0.0;
    let mut seen = 0usize;
    for batch in loader.iter_epoch(0) {
        let (inputs, labels) = batch?;
        let logits = model.forward(&inputs)?;
        let count = labels.shape()[0];
        loss_sum += loss_fn.forward(&logits, &labels)?.item_f64()? * count as f64;
        correct += correct_predictions(&logits, &labels)?.item_f64()?;
        seen += count;
    }
    model.train();
    let total = seen.max(1) as f64;
    Ok((loss_sum / total, correct / total))
}

/// Run a whole configured training job on `device`.
pub fn run(
    config: &TrainConfig,
    device: &Device,
    on_event: &mut dyn FnMut(Event),
) -> Result<TrainSummary> {
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
    if config.dataset == DatasetKind::Digits
        && (config.data_dir.is_some() || config.limit_train.is_some())
    {
        return Err(Error::invalid(
            "train",
            "--data-dir and --limit-train apply to mnist, fashion-mnist and folder; the digits \
             set is built in (drop them, or pass --dataset mnist)",
        ));
    }
    check_save_target(config)?;
    random::manual_seed(config.seed);
    let data = load_data(config, device)?;
    data.notes
        .iter()
        .for_each(|note| on_event(Event::Note(note.clone())));
    if data.train_len == 0 {
        return Err(Error::invalid(
            "train",
            "the training set is empty (is --limit-train 0, or does the images file hold no \
             images?); train on at least one image",
        ));
    }
    if data.test_len == 0 {
        return Err(Error::invalid(
            "train",
            "the test set is empty (does the t10k images file hold no images?); a run needs \
             test images to report an accuracy",
        ));
    }
    let model = build_model(config.model, &data, device)?;
    let mut optimizer = build_optimizer(config.optimizer, config.learning_rate, model.as_ref())?;
    let (first_epoch, mut last_good) =
        resume(config, model.as_ref(), optimizer.as_mut(), on_event)?;
    let mut scaler = config.amp.then(GradScaler::default);
    if config.amp && !device.supports_f16() {
        return Err(Error::Unsupported {
            op: "train --amp",
            dtype: DType::F16,
            device: device.to_string(),
            hint: "; this adapter cannot compute in f16: train without --amp".into(),
        });
    }
    let started = Instant::now();
    let mut epochs = Vec::new();
    let device_name = device.to_string();
    for epoch in first_epoch..config.epochs {
        let epoch_start = Instant::now();
        // A device lost during the epoch (or its evaluation or save) stops the run with an
        // error naming the epoch and the last good checkpoint, which is never overwritten.
        let mut one_epoch = || -> Result<()> {
            let (train_loss, train_accuracy) = train_epoch(
                model.as_ref(),
                optimizer.as_mut(),
                &data.train,
                epoch,
                scaler.as_mut(),
                on_event,
            )?;
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
        one_epoch().map_err(|error| device_lost(error, config, &device_name, epoch, &last_good))?;
    }
    let total_seconds = started.elapsed().as_secs_f64();
    let mean_epoch_seconds = if epochs.is_empty() {
        0.0
    } else {
        epochs.iter().map(|e| e.seconds).sum::<f64>() / epochs.len() as f64
    };
    Ok(TrainSummary {
        device: device.description(),
        config: config.clone(),
        parameters: model.parameter_count(),
        final_test_accuracy: epochs.last().map(|e| e.test_accuracy).unwrap_or(0.0),
        epochs,
        mean_epoch_seconds,
        total_seconds,
    })
}
