//! Loading the data a run needs onto its device: digits (split and standardized with the
//! training statistics), or MNIST / Fashion-MNIST from a directory (normalized like the
//! PyTorch tutorial). The small digits set becomes device-resident (uploaded once, batches
//! gathered on the device); MNIST stays in host memory and is uploaded batch by batch, so no
//! device tensor is larger than one batch.

use anygrad_core::{Device, Error, Result};
use anygrad_data::{
    digits_standardized_split, ArrayDataset, DataLoader, Dataset, Mnist, PixelScaling,
    TensorDataset,
};

use crate::config::{DatasetKind, ModelKind, TrainConfig};

/// Train and test loaders plus the facts the model needs.
pub struct LoadedData {
    pub train: DataLoader,
    pub test: DataLoader,
    pub train_len: usize,
    pub test_len: usize,
    /// Features per sample (64 for digits, 784 for MNIST).
    pub features: usize,
    /// Image side for convolutional models (8 or 28).
    pub image_side: usize,
    pub classes: usize,
}

/// Load the configured data set onto `device`.
pub fn load_data(config: &TrainConfig, device: &Device) -> Result<LoadedData> {
    match config.dataset {
        DatasetKind::Digits => {
            let (train, test, _scaler) =
                digits_standardized_split(config.test_fraction, config.seed, device)?;
            let (train_len, test_len) = (train.len(), test.len());
            let (train, test) = match config.model {
                ModelKind::Mlp => (train, test),
                ModelKind::Cnn => (
                    reshape_features(train, &[1, 8, 8])?,
                    reshape_features(test, &[1, 8, 8])?,
                ),
            };
            Ok(LoadedData {
                train: DataLoader::new(train, config.batch_size)?
                    .shuffle(config.seed)
                    .to_device(device)
                    .device_resident(true),
                test: DataLoader::new(test, 256)?
                    .to_device(device)
                    .device_resident(true),
                train_len,
                test_len,
                features: 64,
                image_side: 8,
                classes: 10,
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
                ModelKind::Cnn => &[1, 28, 28],
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
            Ok(LoadedData {
                train: DataLoader::new(train, config.batch_size)?
                    .shuffle(config.seed)
                    .to_device(device),
                test: DataLoader::new(test, 500)?.to_device(device),
                train_len,
                test_len,
                features: 784,
                image_side: 28,
                classes: 10,
            })
        }
    }
}

/// The same samples with each feature block reshaped (e.g. 64 → 1×8×8 for a CNN).
fn reshape_features(dataset: TensorDataset, sample_shape: &[usize]) -> Result<TensorDataset> {
    let (features, labels) = dataset.into_tensors();
    let mut shape = vec![features.shape()[0]];
    shape.extend_from_slice(sample_shape);
    TensorDataset::new(features.reshape(shape)?, labels)
}
