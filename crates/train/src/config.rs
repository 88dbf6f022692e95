//! What a training run is: data set, model, optimizer and hyper-parameters. The defaults are
//! the digits tutorial: the 64-128-64-10 MLP, Adam at 1e-3, batch 32, an 80/20 split with a
//! fixed seed and standard scaling.

use std::path::PathBuf;

use serde::Serialize;

/// Which data set to train on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DatasetKind {
    /// The 8×8 digits set embedded in the binary (1,797 images).
    Digits,
    /// MNIST from IDX files in `data_dir`.
    Mnist,
    /// Fashion-MNIST from IDX files in `data_dir`.
    FashionMnist,
}

/// Which model to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ModelKind {
    /// A multi-layer perceptron on flattened pixels.
    Mlp,
    /// The small convolutional network (two conv-relu-pool stages, two linear layers).
    Cnn,
}

/// Which optimizer to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OptimizerKind {
    Sgd,
    Adam,
    AdamW,
}

/// Everything that defines a run.
#[derive(Debug, Clone, Serialize)]
pub struct TrainConfig {
    pub dataset: DatasetKind,
    pub data_dir: Option<PathBuf>,
    pub model: ModelKind,
    pub optimizer: OptimizerKind,
    pub learning_rate: f64,
    pub batch_size: usize,
    pub epochs: usize,
    pub seed: u64,
    /// Fraction of the digits set held out for testing (MNIST has its own test set).
    pub test_fraction: f64,
    /// Write a checkpoint here after every epoch.
    pub save: Option<PathBuf>,
    /// Continue from this checkpoint.
    pub resume: Option<PathBuf>,
    /// Use at most this many training images (MNIST; for quick runs).
    pub limit_train: Option<usize>,
    /// Mixed precision: matmul/conv in f16 under autocast, dynamic loss scaling.
    pub amp: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            dataset: DatasetKind::Digits,
            data_dir: None,
            model: ModelKind::Mlp,
            optimizer: OptimizerKind::Adam,
            learning_rate: 1e-3,
            batch_size: 32,
            epochs: 20,
            seed: 42,
            test_fraction: 0.2,
            save: None,
            resume: None,
            limit_train: None,
            amp: false,
        }
    }
}
