//! The random transforms: crops, flips and colour jitter. Each draws its parameters from
//! the generator it is handed, with torchvision's rules for the parameters (the draws
//! themselves come from our SplitMix64, so the same seed does not give torchvision's crops),
//! then calls the deterministic operation in [`functional`](super::functional).

use anygrad_core::{Error, Result};

use super::functional::{self, PaddingMode};
use super::{named, output_size, Transform};
use crate::image::Image;
use crate::rng::SplitMix64;

/// A random `height × width` crop after optional padding (torchvision's `RandomCrop(size,
/// padding, pad_if_needed, fill, padding_mode)`). The CIFAR recipe is
/// `RandomCrop::new(32, 4)`: pad by 4 with zeros, take a random 32×32 window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomCrop {
    height: usize,
    width: usize,
    padding: [usize; 4],
    pad_if_needed: bool,
    mode: PaddingMode,
}

impl RandomCrop {
    /// A `size × size` crop after padding every side by `padding` with zeros.
    ///
    /// Errors: [`Error::InvalidArgument`] for size 0.
    pub fn new(size: usize, padding: usize) -> Result<Self> {
        RandomCrop::rect(size, size, [padding; 4])
    }

    /// A `height × width` crop after `[left, top, right, bottom]` padding with zeros.
    ///
    /// Errors: [`Error::InvalidArgument`] for a zero side, or more than
    /// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
    pub fn rect(height: usize, width: usize, padding: [usize; 4]) -> Result<Self> {
        output_size("RandomCrop", height, width)?;
        Ok(RandomCrop {
            height,
            width,
            padding,
            pad_if_needed: false,
            mode: PaddingMode::Constant(0.0),
        })
    }

    /// How the padding is filled (default: constant 0).
    pub fn padding_mode(mut self, mode: PaddingMode) -> Self {
        self.mode = mode;
        self
    }

    /// Pad an image smaller than the crop up to the crop size (default: an error instead).
    pub fn pad_if_needed(mut self, pad: bool) -> Self {
        self.pad_if_needed = pad;
        self
    }
}

impl Transform for RandomCrop {
    /// Errors: [`Error::InvalidArgument`] naming `RandomCrop` when the crop is larger than
    /// the padded image (without `pad_if_needed`), or when the padded image would have more
    /// than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        let mut image = if self.padding == [0; 4] {
            image
        } else {
            named(
                "RandomCrop",
                functional::pad(&image, self.padding, self.mode),
            )?
        };
        if self.pad_if_needed && image.width() < self.width {
            let extra = self.width - image.width();
            image = named(
                "RandomCrop",
                functional::pad(&image, [extra, 0, extra, 0], self.mode),
            )?;
        }
        if self.pad_if_needed && image.height() < self.height {
            let extra = self.height - image.height();
            image = named(
                "RandomCrop",
                functional::pad(&image, [0, extra, 0, extra], self.mode),
            )?;
        }
        let (height, width) = (image.height(), image.width());
        if height < self.height || width < self.width {
            return Err(Error::invalid(
                "RandomCrop",
                format!(
                    "crop {}x{} is larger than the (padded) image {height}x{width}; pad more or \
                     use pad_if_needed(true)",
                    self.height, self.width
                ),
            ));
        }
        let top = rng.below((height - self.height + 1) as u64) as isize;
        let left = rng.below((width - self.width + 1) as u64) as isize;
        named(
            "RandomCrop",
            functional::crop(&image, top, left, self.height, self.width),
        )
    }
}

/// A random region of random area and aspect ratio, resized to `height × width`
/// (torchvision's `RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3))`, antialias
/// off). Ten tries at a region inside the image, then the central crop clamped to the ratio
/// range, as torchvision does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomResizedCrop {
    height: usize,
    width: usize,
    scale: (f64, f64),
    ratio: (f64, f64),
}

impl RandomResizedCrop {
    /// A `size × size` output with the default scale (0.08, 1) and ratio (3/4, 4/3).
    ///
    /// Errors: [`Error::InvalidArgument`] for 0.
    pub fn new(size: usize) -> Result<Self> {
        RandomResizedCrop::rect(size, size)
    }

    /// A `height × width` output.
    ///
    /// Errors: [`Error::InvalidArgument`] for a zero side, or more than
    /// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
    pub fn rect(height: usize, width: usize) -> Result<Self> {
        output_size("RandomResizedCrop", height, width)?;
        Ok(RandomResizedCrop {
            height,
            width,
            scale: (0.08, 1.0),
            ratio: (3.0 / 4.0, 4.0 / 3.0),
        })
    }

    /// The range of the region's area as a fraction of the image's.
    ///
    /// Errors: [`Error::InvalidArgument`] unless `0 < low <= high` and both are finite.
    pub fn scale(mut self, low: f64, high: f64) -> Result<Self> {
        if !(low > 0.0 && low <= high && high.is_finite()) {
            return Err(Error::invalid(
                "RandomResizedCrop",
                format!("scale ({low}, {high}) needs 0 < low <= high"),
            ));
        }
        self.scale = (low, high);
        Ok(self)
    }

    /// The range of the region's width / height.
    ///
    /// Errors: [`Error::InvalidArgument`] unless `0 < low <= high` and both are finite.
    pub fn ratio(mut self, low: f64, high: f64) -> Result<Self> {
        if !(low > 0.0 && low <= high && high.is_finite()) {
            return Err(Error::invalid(
                "RandomResizedCrop",
                format!("ratio ({low}, {high}) needs 0 < low <= high"),
            ));
        }
        self.ratio = (low, high);
        Ok(self)
    }

    /// The region `(top, left, height, width)` for an image of `height × width`, drawn as
    /// torchvision's `RandomResizedCrop.get_params` (an empty image gives an empty region).
    pub fn region(
        &self,
        height: usize,
        width: usize,
        rng: &mut SplitMix64,
    ) -> (usize, usize, usize, usize) {
        if height == 0 || width == 0 {
            return (0, 0, 0, 0);
        }
        let area = height as f64 * width as f64;
        let (log_low, log_high) = (self.ratio.0.ln(), self.ratio.1.ln());
        for _ in 0..10 {
            let target_area = area * rng.uniform(self.scale.0, self.scale.1);
            let aspect = rng.uniform(log_low, log_high).exp();
            let w = (target_area * aspect).sqrt().round() as usize;
            let h = (target_area / aspect).sqrt().round() as usize;
            if 0 < w && w <= width && 0 < h && h <= height {
                let top = rng.below((height - h + 1) as u64) as usize;
                let left = rng.below((width - w + 1) as u64) as usize;
                return (top, left, h, w);
            }
        }
        // Fallback: the whole image, clamped to the ratio range, centred.
        let in_ratio = width as f64 / height.max(1) as f64;
        let (h, w) = if in_ratio < self.ratio.0 {
            ((width as f64 / self.ratio.0).round() as usize, width)
        } else if in_ratio > self.ratio.1 {
            (height, (height as f64 * self.ratio.1).round() as usize)
        } else {
            (height, width)
        };
        let (h, w) = (h.clamp(1, height), w.clamp(1, width));
        ((height - h) / 2, (width - w) / 2, h, w)
    }
}

impl Transform for RandomResizedCrop {
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        if image.height() == 0 || image.width() == 0 {
            return Err(Error::invalid(
                "RandomResizedCrop",
                format!("the image {}x{} is empty", image.height(), image.width()),
            ));
        }
        let (top, left, h, w) = self.region(image.height(), image.width(), rng);
        named(
            "RandomResizedCrop",
            functional::resized_crop(
                &image,
                top as isize,
                left as isize,
                h,
                w,
                self.height,
                self.width,
            ),
        )
    }
}

fn check_probability(op: &'static str, p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("probability {p} must be in [0, 1]"),
        ))
    }
}

/// Mirror left to right with probability `p` (torchvision's `RandomHorizontalFlip(p)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomHorizontalFlip {
    p: f64,
}

impl RandomHorizontalFlip {
    /// Flip with probability `p` (torchvision's default is 0.5).
    ///
    /// Errors: [`Error::InvalidArgument`] for `p` outside [0, 1].
    pub fn new(p: f64) -> Result<Self> {
        check_probability("RandomHorizontalFlip", p)?;
        Ok(RandomHorizontalFlip { p })
    }
}

impl Transform for RandomHorizontalFlip {
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        if rng.bernoulli(self.p) {
            functional::hflip(&image)
        } else {
            Ok(image)
        }
    }
}

/// Mirror top to bottom with probability `p` (torchvision's `RandomVerticalFlip(p)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomVerticalFlip {
    p: f64,
}

impl RandomVerticalFlip {
    /// Flip with probability `p`.
    ///
    /// Errors: [`Error::InvalidArgument`] for `p` outside [0, 1].
    pub fn new(p: f64) -> Result<Self> {
        check_probability("RandomVerticalFlip", p)?;
        Ok(RandomVerticalFlip { p })
    }
}

impl Transform for RandomVerticalFlip {
    fn apply(&self, image: Image, rng: &mut SplitMix64) -> Result<Image> {
        if rng.bernoulli(self.p) {
            functional::vflip(&image)
        } else {
            Ok(image)
        }
    }
}

/// Random brightness, contrast, saturation and hue changes in a random order (torchvision's
/// `ColorJitter(brightness, contrast, saturation, hue)`): each factor is drawn uniformly from
/// `[max(0, 1 − x), 1 + x]` (hue: `[−x, x]`); a zero amount skips that adjustment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColorJitter {
    brightness: f64,
    contrast: f64,
    saturation: f64,
    hue: f64,
}

impl ColorJitter {
    /// Jitter by these amounts (`ColorJitter(0.4, 0.4, 0.4, 0.1)`).
    ///
    /// Errors: [`Error::InvalidArgument`] for a negative or non-finite amount, or a hue
    /// amount above 0.5.
    pub fn new(brightness: f64, contrast: f64, saturation: f64, hue: f64) -> Result<Self> {
        for (what, value) in [
            ("brightness", brightness),
            ("contrast", contrast),
            ("saturation", saturation),
            ("hue", hue),
        ] {
            if !(value >= 0.0 && value.is_finite()) {
                return Err(Error::invalid(
                    "ColorJitter",
                    format!("{what} {value} must be a finite non-negative amount"),
                ));
            }
        }
        if hue > 0.5 {
            return Err(Error::invalid(
                "ColorJitter",
                format!("hue {hue} must be at most 0.5 (half a turn)"),
            ));
        }
        Ok(ColorJitter {
            brightness,
            contrast,
            saturation,
            hue,
        })
    }
}

impl Transform for ColorJitter {
    fn apply(&self, mut image: Image, rng: &mut SplitMix64) -> Result<Image> {
        let mut order = [0usize, 1, 2, 3];
        rng.shuffle(&mut order);
        let factor =
            |amount: f64, rng: &mut SplitMix64| rng.uniform((1.0 - amount).max(0.0), 1.0 + amount);
        for step in order {
            image = match step {
                0 if self.brightness > 0.0 => {
                    functional::adjust_brightness(&image, factor(self.brightness, rng))?
                }
                1 if self.contrast > 0.0 => {
                    functional::adjust_contrast(&image, factor(self.contrast, rng))?
                }
                2 if self.saturation > 0.0 => {
                    functional::adjust_saturation(&image, factor(self.saturation, rng))?
                }
                3 if self.hue > 0.0 => {
                    functional::adjust_hue(&image, rng.uniform(-self.hue, self.hue))?
                }
                _ => image,
            };
        }
        Ok(image)
    }
}
