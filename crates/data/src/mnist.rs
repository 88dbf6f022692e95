//! MNIST and Fashion-MNIST from a directory of IDX files.
//!
//! The four files keep their usual names — `train-images-idx3-ubyte`,
//! `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte` — raw or
//! with a `.gz` suffix (the Kaggle spelling `train-images.idx3-ubyte` is accepted too).
//! Fashion-MNIST uses the same names and format, so [`Mnist::load`] reads both.
//!
//! Pixels are kept as `u8` (47 MB for the training set instead of 188 MB as `f32`) and
//! converted to `f32` when tensors are made: scaled to [0, 1] like torchvision's `ToTensor`,
//! and optionally normalised by a [`Normalize`] transform of one mean and one standard
//! deviation, like the PyTorch MNIST example's
//! `transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])`:
//!
//! ```no_run
//! # use anygrad_core::{Device, Result};
//! use anygrad_data::transforms::Normalize;
//! use anygrad_data::{DataLoader, Mnist};
//! # fn main() -> Result<()> {
//! let train = Mnist::load("data/mnist", true)?;
//! // transforms.Normalize((0.1307,), (0.3081,)) after ToTensor's x / 255:
//! let dataset = train.to_array_dataset(Normalize::new(&[0.1307], &[0.3081])?)?;
//! let loader = DataLoader::new(dataset, 64)?.shuffle(1).to_device(&Device::best()?);
//! # Ok(())
//! # }
//! ```
//!
//! Every method that makes features takes a [`PixelScaling`] or anything that converts into
//! one: a `Normalize` (checked to have one channel), or `PixelScaling::UnitRange` (`ToTensor`
//! alone) and `PixelScaling::Normalized` (the MNIST constants above, kept for existing code).

use std::path::{Path, PathBuf};

use anygrad_core::files::regular_file_metadata;
use anygrad_core::{Device, Error, Result, Tensor};

use crate::array_dataset::ArrayDataset;
use crate::dataset::TensorDataset;
use crate::idx::{read_idx_images, read_idx_labels};
use crate::transforms::Normalize;

/// Mean pixel value of the MNIST training set after scaling to [0, 1].
pub const MNIST_MEAN: f32 = 0.1307;
/// Standard deviation of the MNIST training pixels after scaling to [0, 1].
pub const MNIST_STD: f32 = 0.3081;
/// Number of classes in MNIST and Fashion-MNIST.
pub const MNIST_CLASSES: usize = 10;

/// How to turn `u8` pixels into `f32` features.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PixelScaling {
    /// `x / 255`: values in [0, 1] (torchvision's `ToTensor`).
    #[default]
    UnitRange,
    /// `(x / 255 − 0.1307) / 0.3081` (the PyTorch MNIST example's `Normalize`).
    Normalized,
    /// `(x / 255 − mean) / std`: what a one-channel [`Normalize`] converts into
    /// (`PixelScaling::try_from(Normalize::new(&[mean], &[std])?)`, or pass the `Normalize`
    /// itself to [`Mnist::to_array_dataset`] and friends).
    Normalize {
        /// Subtracted after scaling to [0, 1].
        mean: f32,
        /// Divided by after subtracting the mean (non-zero and finite).
        std: f32,
    },
}

impl TryFrom<&Normalize> for PixelScaling {
    type Error = Error;

    /// The normalization of MNIST's single channel: `normalize` must hold one mean and one
    /// standard deviation (its constructor already checked the standard deviation).
    fn try_from(normalize: &Normalize) -> Result<PixelScaling> {
        match (normalize.mean(), normalize.std()) {
            (&[mean], &[std]) => Ok(PixelScaling::Normalize { mean, std }),
            (mean, std) => Err(Error::invalid(
                "Mnist",
                format!(
                    "MNIST images have one channel, so Normalize needs one mean and one std \
                     (Normalize::new(&[0.1307], &[0.3081]), PyTorch's Normalize((0.1307,), \
                     (0.3081,))); got means {mean:?} and stds {std:?}"
                ),
            )),
        }
    }
}

impl TryFrom<Normalize> for PixelScaling {
    type Error = Error;

    /// As for `&Normalize`.
    fn try_from(normalize: Normalize) -> Result<PixelScaling> {
        PixelScaling::try_from(&normalize)
    }
}

/// `scaling` as a [`PixelScaling`], a failed conversion as an [`Error::InvalidArgument`].
fn pixel_scaling<S>(scaling: S) -> Result<PixelScaling>
where
    S: TryInto<PixelScaling>,
    S::Error: std::fmt::Display,
{
    scaling.try_into().map_err(|error| match error.to_string() {
        // The conversion's own error already names the op.
        message if message.starts_with("Mnist: ") => {
            Error::invalid("Mnist", message.trim_start_matches("Mnist: ").to_string())
        }
        message => Error::invalid("Mnist", message),
    })
}

/// One split (train or test) of MNIST or Fashion-MNIST, held in host memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mnist {
    /// Number of images.
    pub count: usize,
    /// Rows per image (28).
    pub rows: usize,
    /// Columns per image (28).
    pub cols: usize,
    /// `count × rows × cols` pixels, 0..255, image after image, row-major.
    pub pixels: Vec<u8>,
    /// `count` labels, 0..9.
    pub labels: Vec<u8>,
}

/// Find `{stem}-{kind}-idx{rank}-ubyte` (or `.gz`, or the Kaggle `.idx` spelling) in `dir`.
/// The first name that exists must be a regular file (or a link to one); anything else with
/// that name is an error naming it, not a reason to look further.
fn locate(dir: &Path, stem: &str, kind: &str, rank: u8) -> Result<PathBuf> {
    let names = [
        format!("{stem}-{kind}-idx{rank}-ubyte"),
        format!("{stem}-{kind}-idx{rank}-ubyte.gz"),
        format!("{stem}-{kind}.idx{rank}-ubyte"),
        format!("{stem}-{kind}.idx{rank}-ubyte.gz"),
    ];
    // A directory that cannot be read (permissions, not a directory) is reported as such,
    // not as a missing file.
    if let Err(error) = std::fs::read_dir(dir) {
        return Err(Error::io(dir.display().to_string(), error));
    }
    for name in &names {
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            // Something has this name (a file, a link, a FIFO, a device): it must be a
            // regular file (or a link to one), else the error names it. Its size is checked
            // against its header when it is read.
            Ok(_) => {
                regular_file_metadata(&path, u64::MAX, "IDX file")?;
                return Ok(path);
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(Error::io(path.display().to_string(), error)),
        }
    }
    Err(Error::io(
        dir.join(&names[0]).display().to_string(),
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "no MNIST file `{}` (or `.gz`) in {}; download MNIST or \
                 Fashion-MNIST in IDX format into that directory",
                names[0],
                dir.display()
            ),
        ),
    ))
}

impl Mnist {
    /// Load the training split (`train = true`, 60 000 images) or the test split (`false`,
    /// 10 000 images) from `dir`.
    ///
    /// Errors: [`Error::Io`] naming the path when a file is missing or unreadable;
    /// [`Error::Format`] naming the file when it is corrupt, truncated, not a regular file
    /// (a FIFO, a device, a directory with the file's name), or when images and labels
    /// disagree (counts, labels outside 0..9).
    pub fn load(dir: impl AsRef<Path>, train: bool) -> Result<Mnist> {
        let dir = dir.as_ref();
        let stem = if train { "train" } else { "t10k" };
        let images_path = locate(dir, stem, "images", 3)?;
        let labels_path = locate(dir, stem, "labels", 1)?;
        let images = read_idx_images(&images_path)?;
        let labels = read_idx_labels(&labels_path)?;
        if labels.len() != images.count {
            return Err(Error::format(
                labels_path.display().to_string(),
                format!(
                    "{} labels for {} images in {}",
                    labels.len(),
                    images.count,
                    images_path.display()
                ),
            ));
        }
        if let Some(position) = labels.iter().position(|&l| l as usize >= MNIST_CLASSES) {
            return Err(Error::format(
                labels_path.display().to_string(),
                format!(
                    "label {} at index {position} is outside 0..9",
                    labels[position]
                ),
            ));
        }
        Ok(Mnist {
            count: images.count,
            rows: images.rows,
            cols: images.cols,
            pixels: images.pixels,
            labels,
        })
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there are no images.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Pixels per image (`rows × cols`, 784 for MNIST).
    pub fn image_size(&self) -> usize {
        self.rows * self.cols
    }

    /// All pixels as `f32` features, row-major (`count × rows·cols`), scaled as asked.
    pub fn features(&self, scaling: PixelScaling) -> Vec<f32> {
        let (scale, shift) = scaling_coefficients(scaling);
        self.pixels
            .iter()
            .map(|&p| p as f32 * scale + shift)
            .collect()
    }

    /// Images as an `F32 [count, 1, rows, cols]` tensor (NCHW, ready for a CNN; call
    /// `.flatten(1, -1)` for an MLP) and labels as `I32 [count]`, on `device`. `scaling` is a
    /// [`PixelScaling`] or a one-channel [`Normalize`] (an error for more channels).
    pub fn to_tensors<S>(&self, scaling: S, device: &Device) -> Result<(Tensor, Tensor)>
    where
        S: TryInto<PixelScaling>,
        S::Error: std::fmt::Display,
    {
        Ok(self.to_dataset(scaling, device)?.into_tensors())
    }

    /// The split as a [`TensorDataset`] on `device` (see [`to_tensors`](Self::to_tensors)).
    pub fn to_dataset<S>(&self, scaling: S, device: &Device) -> Result<TensorDataset>
    where
        S: TryInto<PixelScaling>,
        S::Error: std::fmt::Display,
    {
        TensorDataset::from_class_labels(
            self.features(pixel_scaling(scaling)?),
            &[1, self.rows, self.cols],
            &self.labels,
            device,
        )
    }

    /// The split as an [`ArrayDataset`] in host memory: batches are `F32 [b, 1, rows, cols]`
    /// and `I32 [b]`, built by row copies on the loader's prefetch thread (the fastest way to
    /// feed MNIST from the CPU). `scaling` as in [`to_tensors`](Self::to_tensors):
    /// `train.to_array_dataset(Normalize::new(&[0.1307], &[0.3081])?)?`.
    pub fn to_array_dataset<S>(&self, scaling: S) -> Result<ArrayDataset>
    where
        S: TryInto<PixelScaling>,
        S::Error: std::fmt::Display,
    {
        ArrayDataset::from_class_labels(
            self.features(pixel_scaling(scaling)?),
            &[1, self.rows, self.cols],
            &self.labels,
        )
    }

    /// Keep only the first `n` images (handy for quick experiments and tests).
    pub fn truncate(&mut self, n: usize) {
        if n < self.count {
            self.count = n;
            self.pixels.truncate(n * self.image_size());
            self.labels.truncate(n);
        }
    }
}

/// `(scale, shift)` such that the feature is `pixel · scale + shift`.
fn scaling_coefficients(scaling: PixelScaling) -> (f32, f32) {
    match scaling {
        PixelScaling::UnitRange => (1.0 / 255.0, 0.0),
        PixelScaling::Normalized => (1.0 / (255.0 * MNIST_STD), -MNIST_MEAN / MNIST_STD),
        PixelScaling::Normalize { mean, std } => (1.0 / (255.0 * std), -mean / std),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling() {
        let m = Mnist {
            count: 1,
            rows: 1,
            cols: 3,
            pixels: vec![0, 255, 51],
            labels: vec![3],
        };
        let unit = m.features(PixelScaling::UnitRange);
        assert_eq!(unit[0], 0.0);
        assert!((unit[1] - 1.0).abs() < 1e-6);
        assert!((unit[2] - 0.2).abs() < 1e-6);
        let normalized = m.features(PixelScaling::Normalized);
        for (n, u) in normalized.iter().zip(&unit) {
            assert!((n - (u - MNIST_MEAN) / MNIST_STD).abs() < 1e-5);
        }
        // A one-channel Normalize transform scales the same way, with its own constants.
        let custom = PixelScaling::try_from(Normalize::new(&[0.5], &[0.25]).unwrap()).unwrap();
        assert_eq!(
            custom,
            PixelScaling::Normalize {
                mean: 0.5,
                std: 0.25
            }
        );
        for (n, u) in m.features(custom).iter().zip(&unit) {
            assert!((n - (u - 0.5) / 0.25).abs() < 1e-5, "{n} from {u}");
        }
        let mnist = Normalize::new(&[MNIST_MEAN], &[MNIST_STD]).unwrap();
        assert_eq!(
            m.features(PixelScaling::try_from(&mnist).unwrap()),
            m.features(PixelScaling::Normalized)
        );
    }

    #[test]
    fn normalize_transforms_apply_to_mnist() {
        let m = Mnist {
            count: 2,
            rows: 1,
            cols: 2,
            pixels: vec![0, 255, 51, 102],
            labels: vec![3, 7],
        };
        let normalize = Normalize::new(&[0.1307], &[0.3081]).unwrap();
        let (images, labels) = m.to_tensors(normalize.clone(), &Device::Cpu).unwrap();
        assert_eq!(images.shape(), &[2, 1, 1, 2]);
        assert_eq!(labels.to_vec::<i32>().unwrap(), vec![3, 7]);
        let expected: Vec<f32> = m
            .pixels
            .iter()
            .map(|&p| (p as f32 / 255.0 - 0.1307) / 0.3081)
            .collect();
        let got = images.to_vec::<f32>().unwrap();
        for (g, e) in got.iter().zip(&expected) {
            assert!((g - e).abs() < 1e-5, "{got:?} vs {expected:?}");
        }
        assert_eq!(
            crate::Dataset::len(&m.to_array_dataset(&normalize).unwrap()),
            2
        );
        // The old enum still works.
        let (unit, _) = m.to_tensors(PixelScaling::UnitRange, &Device::Cpu).unwrap();
        assert_eq!(unit.to_vec::<f32>().unwrap()[1], 1.0);

        // An RGB normalization does not fit MNIST's one channel: an error naming both.
        let rgb = Normalize::new(&[0.485, 0.456, 0.406], &[0.229, 0.224, 0.225]).unwrap();
        let error = m.to_array_dataset(rgb).expect_err("refused");
        assert!(
            matches!(error, Error::InvalidArgument { op: "Mnist", .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with("Mnist: MNIST images have one channel")
                && message.contains("[0.485, 0.456, 0.406]"),
            "{message}"
        );
    }
}
