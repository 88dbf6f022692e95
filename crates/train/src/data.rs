//! Loading the data a run needs onto its device: digits (split and standardized with the
//! training statistics), MNIST / Fashion-MNIST from a directory (normalized like the
//! PyTorch tutorial), or an image folder (decoded and augmented on worker threads). The
//! small digits set becomes device-resident (uploaded once, batches gathered on the
//! device); MNIST stays in host memory and is uploaded batch by batch, so no device tensor is
//! larger than one batch.
//!
//! What the data imposes on the run is settled here, before any training: a training set of
//! one sample is refused; for a model with batch norm (ResNet-18) a batch size of 1 is
//! refused and a last batch of a single sample is dropped (PyTorch's `drop_last`), since batch
//! norm in training mode needs more than one value per channel; `--image-size` is bounded
//! ([`MAX_IMAGE_SIDE`]); and worker threads beyond what helps are not started. What was
//! decided for the user is said once in [`LoadedData::notes`].

use std::sync::Arc;

use anygrad_core::{Device, Error, Result};
use anygrad_data::transforms::{
    CenterCrop, ColorJitter, Compose, Normalize, RandomCrop, RandomHorizontalFlip, Resize, ToTensor,
};
use anygrad_data::{
    digits_standardized_split, random_split, ArrayDataset, BatchLoader, DataLoader, Dataset,
    ImageFolder, Mnist, PixelScaling, SampleDataset, SampleLoader, Subset, TensorDataset,
    Transformed,
};

use crate::config::{DatasetKind, ModelKind, TrainConfig};

/// Train and test loaders plus the facts the model needs.
pub struct LoadedData {
    pub train: Box<dyn BatchLoader>,
    pub test: Box<dyn BatchLoader>,
    pub train_len: usize,
    pub test_len: usize,
    /// Features per sample (64 for digits, 784 for MNIST, channels × side² for a folder).
    pub features: usize,
    /// Image side for convolutional models (8 or 28; the chosen size for a folder).
    pub image_side: usize,
    /// Image channels (1, or 3 for an RGB folder).
    pub channels: usize,
    pub classes: usize,
    /// What loading decided for the user (a dropped one-sample last batch, a capped worker
    /// count), one line each: the run reports each once as an `Event::Note`.
    pub notes: Vec<String>,
}

/// The largest `--image-size`: 4096 pixels a side. Folder images are resized to a square of
/// this side, so one RGB image is `3 × side²` values: 192 MiB as `f32` at 4096, and a batch
/// of 32 about 6 GiB before the model's activations, already beyond most devices. Training
/// resolutions are far smaller (ImageNet 224, high-resolution medical or satellite crops
/// 1024 to 2048), while a mistyped size (100,000, or 2^32 which wraps in 32-bit code) would
/// ask for terabytes: refused up front with an error naming the option.
pub const MAX_IMAGE_SIDE: usize = 4096;

/// Whether `model` has batch norm layers, which in training mode need more than one value
/// per channel: a batch of a single image fails.
fn uses_batch_norm(model: ModelKind) -> bool {
    matches!(model, ModelKind::Resnet18)
}

/// The model's name as the `--model` option spells it.
fn model_name(model: ModelKind) -> &'static str {
    match model {
        ModelKind::Mlp => "mlp",
        ModelKind::Cnn => "cnn",
        ModelKind::Resnet18 => "resnet18",
    }
}

/// Whether the training loader drops a last partial batch, and the note saying so: checked
/// before any training, so that a run does not fail (and save nothing) after a whole epoch.
///
/// Errors: [`Error::InvalidArgument`] for a training set of exactly one sample, and for
/// `--batch-size 1` with a batch-norm model.
fn last_batch_policy(config: &TrainConfig, train_len: usize) -> Result<(bool, Option<String>)> {
    let model = model_name(config.model);
    let batch_norm = uses_batch_norm(config.model);
    if train_len == 1 {
        let why = if batch_norm {
            format!("; {model}'s batch norm needs more than one sample per batch in training mode")
        } else {
            String::new()
        };
        return Err(Error::invalid(
            "train",
            format!(
                "the training set holds a single sample (is --limit-train 1, or does the data \
                 hold so few images?): one sample is nothing to learn from{why}; train on at \
                 least 2"
            ),
        ));
    }
    if !batch_norm {
        return Ok((false, None));
    }
    if config.batch_size == 1 {
        return Err(Error::invalid(
            "train",
            format!(
                "--batch-size 1 cannot train {model}: its batch norm needs more than one \
                 sample per batch in training mode; use --batch-size 2 or more"
            ),
        ));
    }
    if train_len > config.batch_size && train_len % config.batch_size == 1 {
        let note = format!(
            "dropping the last training batch of every epoch (drop_last): {train_len} \
             training samples in batches of {} leave 1 sample over, and {model}'s batch norm \
             needs more than one sample per batch in training mode",
            config.batch_size
        );
        return Ok((true, Some(note)));
    }
    Ok((false, None))
}

/// Load the configured data set onto `device`.
pub fn load_data(config: &TrainConfig, device: &Device) -> Result<LoadedData> {
    match config.dataset {
        DatasetKind::Digits => {
            let (train, test, _scaler) =
                digits_standardized_split(config.test_fraction, config.seed, device)?;
            let (train_len, test_len) = (train.len(), test.len());
            let (drop_last, note) = last_batch_policy(config, train_len)?;
            let (train, test) = match config.model {
                ModelKind::Mlp => (train, test),
                // The CNN and ResNet-18 refuse 8x8 grey images when they are built.
                ModelKind::Cnn | ModelKind::Resnet18 => (
                    reshape_features(train, &[1, 8, 8])?,
                    reshape_features(test, &[1, 8, 8])?,
                ),
            };
            Ok(LoadedData {
                train: Box::new(
                    DataLoader::new(train, config.batch_size)?
                        .shuffle(config.seed)
                        .drop_last(drop_last)
                        .to_device(device)
                        .device_resident(true),
                ),
                test: Box::new(
                    DataLoader::new(test, 256)?
                        .to_device(device)
                        .device_resident(true),
                ),
                train_len,
                test_len,
                features: 64,
                image_side: 8,
                channels: 1,
                classes: 10,
                notes: note.into_iter().collect(),
            })
        }
        DatasetKind::Mnist | DatasetKind::FashionMnist => {
            let dir = config.data_dir.as_ref().ok_or_else(|| {
                Error::invalid("train", "--data-dir is required for mnist and fashion-mnist (a directory with the IDX files)")
            })?;
            let mut train_set = Mnist::load(dir, true)?;
            if let Some(limit) = config.limit_train {
                train_set.truncate(limit);
            }
            let test_set = Mnist::load(dir, false)?;
            // Kept in host memory and uploaded a batch at a time (built on the loader's
            // prefetch thread, two batches ahead): the 60,000 MNIST images are 188 MB as f32,
            // more than one buffer binding holds on many GPUs (128 MiB on lavapipe and many
            // integrated GPUs), and a batch is all a step needs on the device.
            let sample_shape: &[usize] = match config.model {
                ModelKind::Mlp => &[784],
                ModelKind::Cnn | ModelKind::Resnet18 => &[1, 28, 28],
            };
            let train = ArrayDataset::from_class_labels(
                train_set.features(PixelScaling::Normalized),
                sample_shape,
                &train_set.labels,
            )?;
            let test = ArrayDataset::from_class_labels(
                test_set.features(PixelScaling::Normalized),
                sample_shape,
                &test_set.labels,
            )?;
            let (train_len, test_len) = (train.len(), test.len());
            let (drop_last, note) = last_batch_policy(config, train_len)?;
            Ok(LoadedData {
                train: Box::new(
                    DataLoader::new(train, config.batch_size)?
                        .shuffle(config.seed)
                        .drop_last(drop_last)
                        .to_device(device),
                ),
                test: Box::new(DataLoader::new(test, 500)?.to_device(device)),
                train_len,
                test_len,
                features: 784,
                image_side: 28,
                channels: 1,
                classes: 10,
                notes: note.into_iter().collect(),
            })
        }
        DatasetKind::Folder => load_folder(config, device),
    }
}

/// Mean and standard deviation the folder pipeline normalizes with: 0.5 and 0.25 per
/// channel, mapping [0, 1] pixels to [-2, 2] without needing the data set's statistics.
const FOLDER_MEAN: f32 = 0.5;
const FOLDER_STD: f32 = 0.25;

/// An image folder: classes from the sub-folders, a seeded train/test split
/// (`test_fraction`), images resized and centre-cropped to a square, training images
/// augmented (random crop with 1/8 padding, colour jitter for RGB, optional flips),
/// normalized, and loaded on `num_workers` threads (capped at what helps: see
/// [`SampleLoader::num_workers`]).
fn load_folder(config: &TrainConfig, device: &Device) -> Result<LoadedData> {
    let dir = config.data_dir.as_ref().ok_or_else(|| {
        Error::invalid(
            "train",
            "--data-dir is required for --dataset folder (a directory with one sub-folder of \
             PNG/JPEG images per class)",
        )
    })?;
    let (channels, default_side) = match config.model {
        ModelKind::Cnn => (1, 28),
        ModelKind::Resnet18 => (3, 32),
        ModelKind::Mlp => {
            return Err(Error::invalid(
                "train",
                "--dataset folder trains convolutional models: use --model cnn (grey 28x28) \
                 or --model resnet18 (RGB)",
            ))
        }
    };
    let side = config.image_size.unwrap_or(default_side);
    if side == 0 {
        return Err(Error::invalid("train", "--image-size must be positive"));
    }
    if side > MAX_IMAGE_SIDE {
        return Err(Error::invalid(
            "train",
            format!(
                "--image-size {side} is larger than the {MAX_IMAGE_SIDE} pixels a side allowed \
                 (one {side}x{side} image alone would be {} as f32); pick a training \
                 resolution such as 32, 64 or 224",
                describe_bytes(channels as f64 * side as f64 * side as f64 * 4.0)
            ),
        ));
    }
    if config.model == ModelKind::Cnn && side != 28 {
        return Err(Error::invalid(
            "train",
            format!("the CNN takes 28x28 images; drop --image-size {side} or use --model resnet18"),
        ));
    }
    let folder = Arc::new(ImageFolder::new(dir)?.gray(channels == 1));
    let classes = folder.classes().len();
    if classes < 2 {
        return Err(Error::format(
            dir.display().to_string(),
            format!("found {classes} class folder; classification needs at least two"),
        ));
    }
    let test_fraction = config.test_fraction;
    let mut parts = random_split(folder, &[1.0 - test_fraction, test_fraction], config.seed)?;
    let test_part = parts.pop();
    let train_part = parts.pop();
    let (mut train_part, test_part) = match (train_part, test_part) {
        (Some(train), Some(test)) => (train, test),
        _ => {
            return Err(Error::invalid(
                "train",
                "internal: random_split returned fewer parts",
            ))
        }
    };
    if train_part.is_empty() || test_part.is_empty() {
        return Err(Error::invalid(
            "train",
            format!(
                "{} holds {} images: too few to split into training and test images with \
                 test fraction {test_fraction}",
                dir.display(),
                train_part.len() + test_part.len()
            ),
        ));
    }
    if let Some(limit) = config.limit_train {
        let kept = train_part.indices()[..limit.min(train_part.len())].to_vec();
        train_part = Subset::new(train_part.dataset().clone(), kept)?;
    }
    let normalize = Normalize::new(&[FOLDER_MEAN; 3][..channels], &[FOLDER_STD; 3][..channels])?;
    let square = Compose::new()
        .then(Resize::new(side)?)
        .then(CenterCrop::new(side)?);
    let mut train_transform = square.clone();
    if config.augment {
        train_transform = train_transform.then(RandomCrop::new(side, side.div_ceil(8))?);
        if channels == 3 {
            train_transform = train_transform.then(ColorJitter::new(0.2, 0.2, 0.2, 0.0)?);
        }
    }
    if config.hflip {
        train_transform = train_transform.then(RandomHorizontalFlip::new(0.5)?);
    }
    let train_transform = train_transform.then(ToTensor).then(normalize.clone());
    let test_transform = square.then(ToTensor).then(normalize);
    let (train_len, test_len) = (train_part.len(), test_part.len());
    let (drop_last, note) = last_batch_policy(config, train_len)?;
    let mut notes: Vec<String> = note.into_iter().collect();
    let train = SampleLoader::new(
        Transformed::new(train_part, train_transform),
        config.batch_size,
    )?
    .shuffle(config.seed)
    .seed(config.seed)
    .drop_last(drop_last)
    .num_workers(config.num_workers)
    .to_device(device);
    let test = SampleLoader::new(Transformed::new(test_part, test_transform), 256)?
        .num_workers(config.num_workers)
        .to_device(device);
    let (train_workers, test_workers) = (train.worker_count(), test.worker_count());
    if config.num_workers > train_workers.max(test_workers) {
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        notes.push(format!(
            "--num-workers {} is more than can help: starting {train_workers} worker \
             thread(s) for training and {test_workers} for testing (at most the {cores} \
             available core(s), and no more than the images of one batch)",
            config.num_workers
        ));
    }
    Ok(LoadedData {
        train: Box::new(train),
        test: Box::new(test),
        train_len,
        test_len,
        features: channels * side * side,
        image_side: side,
        channels,
        classes,
        notes,
    })
}

/// `bytes` in the largest binary unit that keeps a number of at least 1 (`192 MiB`).
fn describe_bytes(bytes: f64) -> String {
    let units = [
        "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB",
    ];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.0} {}", units[unit])
}

/// The same samples with each feature block reshaped (e.g. 64 → 1×8×8 for a CNN).
fn reshape_features(dataset: TensorDataset, sample_shape: &[usize]) -> Result<TensorDataset> {
    let (features, labels) = dataset.into_tensors();
    let mut shape = vec![features.shape()[0]];
    shape.extend_from_slice(sample_shape);
    TensorDataset::new(features.reshape(shape)?, labels)
}
