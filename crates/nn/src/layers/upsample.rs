//! `Upsample`: resizing `[n, c, h, w]` to a size or by a scale factor, nearest or bilinear,
//! like `torch.nn.Upsample` (core's `interpolate`, a composite of gathers and weighted sums).

use anygrad_core::{InterpolateMode, InterpolateSize, Result, Tensor};

use crate::module::{Kind, Module, Parameter};

/// Resizing of `[n, c, h, w]`, like `torch.nn.Upsample`; no parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Upsample {
    /// The output size, or the scale factors.
    pub size: InterpolateSize,
    /// Nearest or bilinear (with its `align_corners`).
    pub mode: InterpolateMode,
}

impl Upsample {
    /// `Upsample(scale_factor=scale, mode='nearest')`.
    pub fn nearest(scale: f64) -> Upsample {
        Upsample {
            size: InterpolateSize::Scale(scale, scale),
            mode: InterpolateMode::Nearest,
        }
    }

    /// `Upsample(scale_factor=scale, mode='bilinear', align_corners=align_corners)`.
    pub fn bilinear(scale: f64, align_corners: bool) -> Upsample {
        Upsample {
            size: InterpolateSize::Scale(scale, scale),
            mode: InterpolateMode::Bilinear { align_corners },
        }
    }

    /// Any size and mode.
    pub fn new(size: InterpolateSize, mode: InterpolateMode) -> Upsample {
        Upsample { size, mode }
    }
}

impl Module for Upsample {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.interpolate(self.size, self.mode)
    }
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {}
}
