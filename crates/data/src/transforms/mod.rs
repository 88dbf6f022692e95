//! Image transforms composed like torchvision's: each is a [`Transform`] from one host
//! [`Image`] to the next, and [`Compose`] chains them.
//!
//! ```
//! use anygrad_data::transforms::{
//!     CenterCrop, ColorJitter, Compose, Normalize, RandomHorizontalFlip, RandomResizedCrop,
//!     Resize, ToTensor, Transform,
//! };
//! # fn main() -> anygrad_core::Result<()> {
//! // transforms.Compose([RandomResizedCrop(224), RandomHorizontalFlip(), ColorJitter(.4, .4, .4),
//! //                     ToTensor(), Normalize(mean, std)])
//! let train = Compose::new()
//!     .then(RandomResizedCrop::new(224)?)
//!     .then(RandomHorizontalFlip::new(0.5)?)
//!     .then(ColorJitter::new(0.4, 0.4, 0.4, 0.0)?)
//!     .then(ToTensor)
//!     .then(Normalize::new(&[0.485, 0.456, 0.406], &[0.229, 0.224, 0.225])?);
//! // transforms.Compose([Resize(256), CenterCrop(224), ToTensor(), Normalize(mean, std)])
//! let eval = Compose::new()
//!     .then(Resize::new(256)?)
//!     .then(CenterCrop::new(224)?)
//!     .then(ToTensor)
//!     .then(Normalize::new(&[0.485, 0.456, 0.406], &[0.229, 0.224, 0.225])?);
//! # let _ = (train, eval);
//! # Ok(())
//! # }
//! ```
//!
//! **Randomness.** A transform draws from the [`SplitMix64`] it is handed. The
//! [`SampleLoader`](crate::SampleLoader) gives every sample its own generator seeded from
//! `(seed, epoch, index)` ([`sample_seed`](crate::sample_seed)), so a run is reproducible
//! and the augmentation of a sample does not depend on the number of worker threads.
//!
//! **Layouts.** Geometric transforms and colour jitter work on 8-bit [`PixelImage`]s (before
//! [`ToTensor`]) and on `f32` [`ChwImage`](crate::ChwImage)s (after it); [`Normalize`] needs a `ChwImage`.
//! What each deterministic operation matches in torchvision is listed in [`functional`].
//!
//! **Sizes.** No transform makes an image of more than
//! [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels: a target size beyond it is refused
//! when the transform is built, and a result that would exceed it (a fixed shorter side for
//! a very thin image, a large padding) is an [`Error::InvalidArgument`] naming the transform
//! and the sizes when it is applied.

pub mod functional;
mod random;

use std::sync::Arc;

use anygrad_core::{Error, Result};

use crate::image::{check_pixel_count, Image, PixelImage};
use crate::rng::SplitMix64;

pub use random::{
    ColorJitter, RandomCrop, RandomHorizontalFlip, RandomResizedCrop, RandomVerticalFlip,
};

/// One step of an image pipeline.
///
/// Implementations are `Send + Sync`: the loader runs them on worker threads, each sample
/// with its own `rng`. A deterministic transform ignores `rng`.
pub trait Transform: Send + Sync + std::fmt::Debug {
    /// Transform `image`, drawing any randomness from `rng`.
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image>;
}

impl<T: Transform + ?Sized> Transform for Arc<T> {
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        (**self).apply(image, rng)
    }
}

impl<T: Transform + ?Sized> Transform for Box<T> {
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        (**self).apply(image, rng)
    }
}

/// Transforms applied in order (torchvision's `Compose`); empty, it returns the image as is.
#[derive(Debug, Default, Clone)]
pub struct Compose {
    steps: Vec<Arc<dyn Transform>>,
}

impl Compose {
    /// An empty pipeline; add steps with [`then`](Self::then).
    pub fn new() -> Self {
        Compose::default()
    }

    /// The pipeline with `step` appended.
    pub fn then(mut self, step: impl Transform + 'static) -> Self {
        self.steps.push(Arc::new(step));
        self
    }

    /// Number of steps.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// True without steps.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

impl Transform for Compose {
    fn apply(&self, mut image: Image, rng: &mut SplitMix64) -> Result<Image> {
        for step in &self.steps {
            image = step.apply(image, rng)?;
        }
        Ok(image)
    }
}

/// A transform from a closure (torchvision's `Lambda`).
pub struct Lambda<F> {
    function: F,
}

impl<F> Lambda<F>
where
    F: Fn(Image, &mut SplitMix64) -> Result<Image> + Send + Sync,
{
    /// Wrap `function`.
    pub fn new(function: F) -> Self {
        Lambda { function }
    }
}

impl<F> std::fmt::Debug for Lambda<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lambda")
    }
}

impl<F> Transform for Lambda<F>
where
    F: Fn(Image, &mut SplitMix64) -> Result<Image> + Send + Sync,
{
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        (self.function)(image, rng)
    }
}

/// The target of a resize: the shorter side, or an exact size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    ShorterSide(usize),
    Exact { height: usize, width: usize },
}

fn positive(op: &'static str, what: &str, values: &[usize]) -> Result<()> {
    if values.contains(&0) {
        return Err(Error::invalid(
            op,
            format!("{what} {values:?} must be positive"),
        ));
    }
    Ok(())
}

/// Check an output size given to a transform's constructor: positive sides, and at most
/// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
fn output_size(op: &'static str, height: usize, width: usize) -> Result<()> {
    positive(op, "size", &[height, width])?;
    check_pixel_count(op, height, width, None)
}

/// `result` with an [`Error::InvalidArgument`] of the operation underneath (`pad`,
/// `resize`, ...) named after the transform `op` that called it, so that the message says
/// which step of a pipeline refused the image (the operation's own name is kept in the
/// message when it differs, as in `RandomCrop: pad: ...`).
pub(crate) fn named<T>(op: &'static str, result: Result<T>) -> Result<T> {
    result.map_err(|error| match error {
        Error::InvalidArgument { op: inner, message } => Error::InvalidArgument {
            op,
            message: if inner.eq_ignore_ascii_case(op) {
                message
            } else {
                format!("{inner}: {message}")
            },
        },
        other => other,
    })
}

/// Bilinear resize without antialiasing (torchvision's `Resize(size, antialias=False)`; see
/// [`functional::resize`] for what matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resize {
    size: Size,
}

impl Resize {
    /// The shorter side becomes `size`, the aspect ratio is kept (`Resize(256)`).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0, or a size whose square is more than
    /// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS).
    pub fn new(size: usize) -> Result<Self> {
        output_size("Resize", size, size)?;
        Ok(Resize {
            size: Size::ShorterSide(size),
        })
    }

    /// Exactly `height × width` (`Resize((h, w))`).
    ///
    /// Errors: [`Error::InvalidArgument`] for a zero side, or more than
    /// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
    pub fn exact(height: usize, width: usize) -> Result<Self> {
        output_size("Resize", height, width)?;
        Ok(Resize {
            size: Size::Exact { height, width },
        })
    }
}

impl Transform for Resize {
    /// Errors: [`Error::InvalidArgument`] naming `Resize` and the sizes when the result
    /// would have more than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels (a shorter
    /// side for a very thin image makes the longer side huge), or for an empty image.
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        let (height, width) = match self.size {
            Size::ShorterSide(side) => {
                functional::resized_size(image.height(), image.width(), side)
            }
            Size::Exact { height, width } => (height, width),
        };
        named("Resize", functional::resize(&image, height, width))
    }
}

/// The central region (torchvision's `CenterCrop`), zero-padded when larger than the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CenterCrop {
    height: usize,
    width: usize,
}

impl CenterCrop {
    /// A `size × size` crop.
    ///
    /// Errors: [`Error::InvalidArgument`] for 0.
    pub fn new(size: usize) -> Result<Self> {
        CenterCrop::rect(size, size)
    }

    /// A `height × width` crop.
    ///
    /// Errors: [`Error::InvalidArgument`] for a zero side, or more than
    /// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
    pub fn rect(height: usize, width: usize) -> Result<Self> {
        output_size("CenterCrop", height, width)?;
        Ok(CenterCrop { height, width })
    }
}

impl Transform for CenterCrop {
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        named(
            "CenterCrop",
            functional::center_crop(&image, self.height, self.width),
        )
    }
}

/// Padding on every side (torchvision's `Pad`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pad {
    ltrb: [usize; 4],
    mode: functional::PaddingMode,
}

impl Pad {
    /// `padding` on all four sides, filled by `mode`.
    pub fn new(padding: usize, mode: functional::PaddingMode) -> Self {
        Pad {
            ltrb: [padding; 4],
            mode,
        }
    }

    /// `[left, top, right, bottom]` padding, filled by `mode`.
    pub fn ltrb(ltrb: [usize; 4], mode: functional::PaddingMode) -> Self {
        Pad { ltrb, mode }
    }
}

impl Transform for Pad {
    /// Errors: [`Error::InvalidArgument`] naming `Pad` and the sizes when the padded image
    /// would have more than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels, or the
    /// padding does not suit the mode (see [`functional::pad`]).
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        named("Pad", functional::pad(&image, self.ltrb, self.mode))
    }
}

/// Convert to grey or to RGB (torchvision's `Grayscale(num_output_channels)`, PIL's
/// `convert`): on 8-bit images only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertChannels {
    channels: usize,
}

impl ConvertChannels {
    /// One grey channel (PIL's `convert("L")`).
    pub fn gray() -> Self {
        ConvertChannels { channels: 1 }
    }

    /// Three RGB channels (PIL's `convert("RGB")`).
    pub fn rgb() -> Self {
        ConvertChannels { channels: 3 }
    }
}

impl Transform for ConvertChannels {
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        match image {
            Image::Pixels(pixels) if self.channels == 1 => Ok(Image::Pixels(pixels.into_gray()?)),
            Image::Pixels(pixels) => Ok(Image::Pixels(pixels.into_rgb()?)),
            Image::Chw(chw) => Err(Error::invalid(
                "ConvertChannels",
                format!(
                    "converts 8-bit pixels; got a CHW f32 image {:?}: put it before ToTensor",
                    chw.shape()
                ),
            )),
        }
    }
}

/// 8-bit HWC pixels to `f32` CHW values in [0, 1] (torchvision's `ToTensor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToTensor;

impl Transform for ToTensor {
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        match image {
            Image::Pixels(pixels) => Ok(Image::Chw(functional::to_tensor(&pixels)?)),
            Image::Chw(chw) => Err(Error::invalid(
                "ToTensor",
                format!(
                    "the image {:?} is already CHW f32; ToTensor appears twice",
                    chw.shape()
                ),
            )),
        }
    }
}

/// `(x − mean[c]) / std[c]` per channel on a CHW image (torchvision's `Normalize`).
#[derive(Debug, Clone, PartialEq)]
pub struct Normalize {
    mean: Vec<f32>,
    std: Vec<f32>,
}

impl Normalize {
    /// One mean and standard deviation per channel (or one for all).
    ///
    /// Errors: [`Error::InvalidArgument`] for empty lists, lists of different lengths, or a
    /// zero or non-finite standard deviation.
    pub fn new(mean: &[f32], std: &[f32]) -> Result<Self> {
        if mean.is_empty() || mean.len() != std.len() {
            return Err(Error::invalid(
                "Normalize",
                format!(
                    "needs as many means as standard deviations (at least one): {mean:?} / {std:?}"
                ),
            ));
        }
        if let Some(bad) = std.iter().find(|s| **s == 0.0 || !s.is_finite()) {
            return Err(Error::invalid(
                "Normalize",
                format!("std {bad} must be non-zero and finite (it divides)"),
            ));
        }
        Ok(Normalize {
            mean: mean.to_vec(),
            std: std.to_vec(),
        })
    }

    /// The means, one per channel (or one for all).
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// The standard deviations, one per channel (or one for all).
    pub fn std(&self) -> &[f32] {
        &self.std
    }
}

impl Transform for Normalize {
    fn apply(&self, image: Image, _rng: &mut SplitMix64) -> Result<Image> {
        let chw = image.into_chw("Normalize")?;
        Ok(Image::Chw(functional::normalize(
            chw, &self.mean, &self.std,
        )?))
    }
}

/// Apply `transform` to a decoded image with a fixed seed: a convenience for trying a
/// pipeline on one picture (`transform(img)` in Python).
pub fn apply_once(transform: &dyn Transform, image: PixelImage, seed: u64) -> Result<Image> {
    transform.apply(Image::Pixels(image), &mut SplitMix64::new(seed))
}
