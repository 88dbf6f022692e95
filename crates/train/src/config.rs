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
    /// PNG/JPEG images in one sub-folder per class under `data_dir` (torchvision's
    /// `ImageFolder`), split into train and test with `test_fraction`, augmented on worker
    /// threads.
    Folder,
}

/// Which model to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ModelKind {
    /// A multi-layer perceptron on flattened pixels.
    Mlp,
    /// The small convolutional network (two conv-relu-pool stages, two linear layers).
    Cnn,
    /// ResNet-18 (RGB input; for the image-folder data set).
    Resnet18,
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
    /// Fraction of the digits set or the image folder held out for testing (MNIST has its
    /// own test set).
    pub test_fraction: f64,
    /// Write a checkpoint here after every epoch.
    pub save: Option<PathBuf>,
    /// Continue from this checkpoint.
    pub resume: Option<PathBuf>,
    /// On resume, set the optimizer's learning rate to `learning_rate` instead of continuing
    /// with the checkpoint's (the command line sets it when `--lr` is given explicitly, e.g.
    /// to resume a run that diverged with a lower rate).
    pub resume_learning_rate: bool,
    /// Use at most this many training images (MNIST; for quick runs).
    pub limit_train: Option<usize>,
    /// Mixed precision: matmul/conv in f16 under autocast, dynamic loss scaling.
    pub amp: bool,
    /// Image folder: the side images are resized and cropped to (default: 28 for the CNN,
    /// 32 for ResNet-18).
    pub image_size: Option<usize>,
    /// Image folder: threads decoding and augmenting images (0: on the training thread).
    pub num_workers: usize,
    /// Image folder: augment the training images (random crop with padding, colour jitter
    /// for RGB).
    pub augment: bool,
    /// Image folder: also flip training images left to right at random (off by default:
    /// it hurts digits and text).
    pub hflip: bool,
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
            resume_learning_rate: false,
            limit_train: None,
            amp: false,
            image_size: None,
            num_workers: 2,
            augment: true,
            hflip: false,
        }
    }
}
