//! anygrad-data: datasets and data loading for anygrad.
//!
//! - [`Dataset`] (batch-oriented: `len`, `get_batch(indices)`, `get(index)`),
//!   [`TensorDataset`] (a features tensor and a labels tensor, first dim = sample, on any
//!   device) and [`ArrayDataset`] (host vectors; batches by row copies — the fast choice for
//!   large host-side sets such as MNIST).
//! - [`DataLoader`]: batch size, seeded per-epoch shuffling (epoch `e` uses `seed + e`,
//!   decided by [`epoch_order`] for both loaders),
//!   `drop_last`, background prefetch on a worker thread, and a device-resident mode that
//!   uploads the dataset once and gathers batches on the device.
//! - [`train_test_split`] and [`StandardScaler`], like scikit-learn's.
//! - Per-sample data, PyTorch's map-style datasets: [`SampleDataset`] (`len`, `get(i)` →
//!   [`Sample`]), [`collate`], [`Subset`], [`random_split`], [`Transformed`], and
//!   [`ImageFolder`] (PNG/JPEG files in one sub-folder per class, like torchvision's).
//!   [`SampleLoader`] batches them with `num_workers` threads decoding and augmenting ahead
//!   of the consumer. Host images are [`PixelImage`] (8-bit HWC) and [`ChwImage`] (`f32`
//!   CHW); [`transforms`] holds torchvision's usual pipeline steps.
//! - The 8×8 [`digits`] set, embedded in the binary (no download), and a reader for
//!   MNIST / Fashion-MNIST IDX files ([`Mnist::load`], [`read_idx_images`],
//!   [`read_idx_labels`]; raw or gzip).
//!
//! The digits tutorial's data pipeline:
//!
//! ```no_run
//! use anygrad_core::{Device, Result};
//! use anygrad_data::{digits_standardized_split, DataLoader, Dataset};
//!
//! fn main() -> Result<()> {
//!     let device = Device::best()?;
//!     // 80/20 split with seed 42, features standardised with the training statistics.
//!     let (train, test, _scaler) = digits_standardized_split(0.2, 42, &device)?;
//!     println!("{} train / {} test samples", train.len(), test.len());
//!     let loader = DataLoader::new(train, 32)?
//!         .shuffle(42)
//!         .to_device(&device)
//!         .device_resident(true); // small set: upload once, gather batches on the device
//!     for epoch in 0..10 {
//!         for batch in loader.iter_epoch(epoch) {
//!             let (inputs, labels) = batch?; // F32 [32, 64], I32 [32]
//!             // let loss = model.forward(&inputs)?.cross_entropy(&labels)?; ...
//!         }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! MNIST from a directory holding `train-images-idx3-ubyte.gz` and friends:
//!
//! ```no_run
//! # use anygrad_core::{Device, Result};
//! use anygrad_data::{DataLoader, Mnist, PixelScaling};
//! # fn main() -> Result<()> {
//! let train = Mnist::load("data/mnist", true)?; // 60 000 images, 28×28
//! let dataset = train.to_array_dataset(PixelScaling::Normalized)?; // F32 [N, 1, 28, 28] batches
//! let loader = DataLoader::new(dataset, 64)?.shuffle(1).to_device(&Device::best()?);
//! # Ok(())
//! # }
//! ```
//!
//! Images from a folder, augmented on four worker threads:
//!
//! ```no_run
//! # use anygrad_core::{Device, Result};
//! use anygrad_data::transforms::{Compose, Normalize, RandomCrop, RandomHorizontalFlip, ToTensor};
//! use anygrad_data::{ImageFolder, SampleLoader};
//! # fn main() -> Result<()> {
//! let augment = Compose::new()
//!     .then(RandomCrop::new(32, 4)?)
//!     .then(RandomHorizontalFlip::new(0.5)?)
//!     .then(ToTensor)
//!     .then(Normalize::new(&[0.5, 0.5, 0.5], &[0.25, 0.25, 0.25])?);
//! let train = ImageFolder::new("data/train")?.transform(augment);
//! let loader = SampleLoader::new(train, 128)?.shuffle(0).num_workers(4).to_device(&Device::best()?);
//! # Ok(())
//! # }
//! ```
//!
//! Errors are [`anygrad_core::Error`]: a bad argument (batch size 0, a test fraction
//! outside (0, 1)) is `InvalidArgument`; a missing file is `Io` naming the path; a corrupt or
//! truncated file is `Format` naming the file. Nothing here panics on bad input.

mod array_dataset;
mod dataset;
mod digits;
mod epoch;
mod idx;
mod image;
mod image_folder;
mod loader;
mod mnist;
mod rng;
mod sample;
mod sample_loader;
mod scaler;
mod split;
pub mod transforms;

pub use array_dataset::ArrayDataset;
pub use dataset::{Dataset, TensorDataset};
pub use digits::{
    digits, digits_dataset, digits_standardized_split, digits_tensors, parse_digits_csv,
    DIGITS_CLASSES, DIGITS_FEATURES, DIGITS_SAMPLES,
};
pub use epoch::epoch_order;
pub use idx::{
    decompress_if_gzip, encode_idx_images, encode_idx_labels, parse_idx_images, parse_idx_labels,
    read_idx_images, read_idx_labels, read_maybe_gzip, IdxImages, IDX_IMAGES_MAGIC,
    IDX_LABELS_MAGIC, MAX_IDX_DATA_BYTES,
};
pub use image::{ChwImage, Image, PixelImage, MAX_IMAGE_FILE_BYTES, MAX_IMAGE_PIXELS};
pub use image_folder::{write_image_folder, ImageFolder, IMAGE_EXTENSIONS};
pub use loader::{BatchLoader, Batches, DataLoader};
pub use mnist::{Mnist, PixelScaling, MNIST_CLASSES, MNIST_MEAN, MNIST_STD};
pub use rng::{permutation, sample_seed, SplitMix64};
pub use sample::{
    collate, random_split, random_split_lengths, InMemoryImages, Sample, SampleDataset, Subset,
    Transformed,
};
pub use sample_loader::{CollateFn, SampleBatches, SampleLoader};
pub use scaler::StandardScaler;
pub use split::{gather_rows, split_indices, train_test_split, Split};
