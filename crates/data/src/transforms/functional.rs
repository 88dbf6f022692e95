//! The deterministic image operations behind the transforms, callable on their own
//! (torchvision's `transforms.functional`): resize, crop, pad, flip, colour adjustments,
//! `to_tensor` and `normalize`.
//!
//! Where torchvision's result is defined by arithmetic we can reproduce, these match it; the
//! tests in `crates/data/tests/transforms_golden.rs` compare them with torchvision's output
//! on the same image (golden files written by `scripts/golden/generate_transforms.py`):
//!
//! - [`resize`] is bilinear with half-pixel centres and **no antialiasing**: torchvision's
//!   `resize(..., antialias=False)` on a tensor image (`F.interpolate(mode="bilinear",
//!   align_corners=False)`). On `f32` images it matches to float rounding; on 8-bit images
//!   the result is rounded to nearest and matches torchvision's `uint8` tensor path within
//!   one level. PIL images in torchvision are always antialiased when shrunk, so a PIL
//!   pipeline that shrinks by more than 2× looks smoother than this.
//! - [`crop`], [`center_crop`] (including torchvision's banker's rounding of the offset and
//!   its zero padding when the crop is larger than the image), [`pad`], [`hflip`] and
//!   [`vflip`] only move values and match exactly.
//! - [`adjust_brightness`], [`adjust_contrast`] and [`adjust_saturation`] follow
//!   torchvision's tensor functions (grey = 0.2989 R + 0.587 G + 0.114 B, blends clamped to
//!   [0, 1] for `f32` or [0, 255] and truncated for 8-bit); [`adjust_hue`] goes through HSV
//!   like torchvision's tensor version. They are not PIL's `ImageEnhance` (which
//!   torchvision uses for PIL images, with a slightly different contrast mean).
//! - [`to_tensor`] is `x / 255` into CHW and [`normalize`] is `(x - mean) / std` per channel.
//!
//! Every operation that makes a new image checks its size against
//! [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) and allocates fallibly, so an absurd target
//! size is an [`Error::InvalidArgument`] (or, when memory really runs out, an
//! [`Error::OutOfMemory`]) and never an abort.

use anygrad_core::{Error, Result};

use crate::image::{check_pixel_count, ChwImage, Image, PixelImage, Raster};
use anygrad_core::host_memory::{filled, reserved};

/// How [`pad`] fills the new border (torchvision's `padding_mode` and `fill`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaddingMode {
    /// A constant value (on 8-bit images rounded to 0..255): `padding_mode="constant"`.
    Constant(f32),
    /// Repeat the edge value: `"edge"`.
    Edge,
    /// Mirror without repeating the edge (`[1, 2, 3]` padded by 2: `3 2 | 1 2 3 | 2 1`):
    /// `"reflect"`. The padding must be smaller than the side.
    Reflect,
    /// Mirror repeating the edge (`2 1 | 1 2 3 | 3 2`): `"symmetric"`. The padding must not
    /// exceed the side.
    Symmetric,
}

/// Apply a fallible layout-independent operation to whichever image `image` holds.
macro_rules! on_raster {
    ($image:expr, |$raster:ident| $body:expr) => {
        match $image {
            Image::Pixels($raster) => Image::Pixels($body?),
            Image::Chw($raster) => Image::Chw($body?),
        }
    };
}

/// The output size of torchvision's `Resize(size)` with one number: the shorter side becomes
/// `shorter_side` and the longer one keeps the aspect ratio, truncated
/// (`int(size * long / short)`). Returns `(height, width)`.
pub fn resized_size(height: usize, width: usize, shorter_side: usize) -> (usize, usize) {
    if height <= width {
        let long = (shorter_side as f64 * width as f64 / height.max(1) as f64) as usize;
        (shorter_side, long)
    } else {
        let long = (shorter_side as f64 * height as f64 / width.max(1) as f64) as usize;
        (long, shorter_side)
    }
}

/// Per output index along one axis: the two source indices and their weights, as PyTorch's
/// bilinear upsampling computes them (`src = scale · (dst + 0.5) − 0.5`, clamped at 0).
fn linear_taps(input: usize, output: usize) -> Result<Vec<(usize, usize, f32, f32)>> {
    let scale = input as f32 / output as f32;
    let mut taps = reserved(output)?;
    taps.extend((0..output).map(|index| {
        let real = (scale * (index as f32 + 0.5) - 0.5).max(0.0);
        let first = (real.floor() as usize).min(input - 1);
        let second = (first + 1).min(input - 1);
        let lambda = (real - first as f32).clamp(0.0, 1.0);
        (first, second, 1.0 - lambda, lambda)
    }));
    Ok(taps)
}

fn resize_raster<R: Raster>(image: &R, height: usize, width: usize) -> Result<R> {
    let (channels, in_height, in_width) = image.dims();
    let rows = linear_taps(in_height, height)?;
    let columns = linear_taps(in_width, width)?;
    R::build("resize", channels, height, width, |channel, row, column| {
        let (y0, y1, wy0, wy1) = rows[row];
        let (x0, x1, wx0, wx1) = columns[column];
        let at = |y, x| R::to_f32(image.value(channel, y, x));
        let top = at(y0, x0) * wx0 + at(y0, x1) * wx1;
        let bottom = at(y1, x0) * wx0 + at(y1, x1) * wx1;
        R::from_f32_rounded(top * wy0 + bottom * wy1)
    })
}

/// Resize to exactly `height × width`, bilinear without antialiasing (see the module notes
/// for what this matches).
///
/// Errors: [`Error::InvalidArgument`] for a zero target side, an empty image, or a target
/// of more than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels;
/// [`Error::OutOfMemory`] when the result cannot be allocated.
pub fn resize(image: &Image, height: usize, width: usize) -> Result<Image> {
    if height == 0 || width == 0 || image.height() == 0 || image.width() == 0 {
        return Err(Error::invalid(
            "resize",
            format!(
                "cannot resize a {}x{} image to {height}x{width}: every side must be positive",
                image.height(),
                image.width()
            ),
        ));
    }
    check_pixel_count(
        "resize",
        height,
        width,
        Some((image.height(), image.width())),
    )?;
    if height == image.height() && width == image.width() {
        return Ok(image.clone());
    }
    Ok(on_raster!(image, |raster| resize_raster(
        raster, height, width
    )))
}

fn crop_raster<R: Raster>(
    image: &R,
    top: isize,
    left: isize,
    height: usize,
    width: usize,
    fill: R::Value,
) -> Result<R> {
    let (channels, in_height, in_width) = image.dims();
    R::build("crop", channels, height, width, |channel, row, column| {
        let y = top + row as isize;
        let x = left + column as isize;
        if y < 0 || x < 0 || y as usize >= in_height || x as usize >= in_width {
            fill
        } else {
            image.value(channel, y as usize, x as usize)
        }
    })
}

/// The `height × width` region whose top-left corner is (`top`, `left`); parts outside the
/// image are zero (torchvision's `crop`).
///
/// Errors: [`Error::InvalidArgument`] for a region of more than
/// [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels; [`Error::OutOfMemory`] when it
/// cannot be allocated.
pub fn crop(image: &Image, top: isize, left: isize, height: usize, width: usize) -> Result<Image> {
    check_pixel_count("crop", height, width, Some((image.height(), image.width())))?;
    Ok(match image {
        Image::Pixels(raster) => Image::Pixels(crop_raster(raster, top, left, height, width, 0)?),
        Image::Chw(raster) => Image::Chw(crop_raster(raster, top, left, height, width, 0.0)?),
    })
}

/// Python's `round` on a non-negative half-integer-or-integer: halves go to the even
/// neighbour (what torchvision's `center_crop` uses for the offset).
fn round_half_even(twice: usize) -> usize {
    let (whole, half) = (twice / 2, twice % 2 == 1);
    if half && whole % 2 == 1 {
        whole + 1
    } else {
        whole
    }
}

/// The central `height × width` region (torchvision's `center_crop`): the offset is
/// `round((side - crop) / 2)` with Python's round-half-to-even; a crop larger than the image
/// is zero-padded around it first.
///
/// Errors: as [`crop`].
pub fn center_crop(image: &Image, height: usize, width: usize) -> Result<Image> {
    let offset = |side: usize, crop_side: usize| -> isize {
        if crop_side > side {
            // torchvision pads (crop - side) // 2 before and the rest after, then crops at 0.
            -(((crop_side - side) / 2) as isize)
        } else {
            round_half_even(side - crop_side) as isize
        }
    };
    crop(
        image,
        offset(image.height(), height),
        offset(image.width(), width),
        height,
        width,
    )
}

/// Map a padded coordinate to the source coordinate under `mode` (`None`: the constant).
fn padded_source(index: isize, side: usize, mode: PaddingMode) -> Option<usize> {
    let n = side as isize;
    if (0..n).contains(&index) {
        return Some(index as usize);
    }
    let mapped = match mode {
        PaddingMode::Constant(_) => return None,
        PaddingMode::Edge => index.clamp(0, n - 1),
        PaddingMode::Reflect => {
            if index < 0 {
                -index
            } else {
                2 * (n - 1) - index
            }
        }
        PaddingMode::Symmetric => {
            if index < 0 {
                -index - 1
            } else {
                2 * n - 1 - index
            }
        }
    };
    Some(mapped.clamp(0, n - 1) as usize)
}

fn pad_raster<R: Raster>(
    image: &R,
    ltrb: [usize; 4],
    out_height: usize,
    out_width: usize,
    mode: PaddingMode,
    fill: R::Value,
) -> Result<R> {
    let (channels, height, width) = image.dims();
    let [left, top, _, _] = ltrb;
    R::build(
        "pad",
        channels,
        out_height,
        out_width,
        |channel, row, column| {
            let y = padded_source(row as isize - top as isize, height, mode);
            let x = padded_source(column as isize - left as isize, width, mode);
            match (y, x) {
                (Some(y), Some(x)) => image.value(channel, y, x),
                _ => fill,
            }
        },
    )
}

/// Pad by `[left, top, right, bottom]` with `mode` (torchvision's `pad` with a 4-element
/// padding).
///
/// Errors: [`Error::InvalidArgument`] when a reflect padding is not smaller than the side
/// (symmetric: larger than the side), when a non-constant mode pads an empty image, or when
/// the padded image would have more than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS)
/// pixels; [`Error::OutOfMemory`] when it cannot be allocated.
pub fn pad(image: &Image, ltrb: [usize; 4], mode: PaddingMode) -> Result<Image> {
    let [left, top, right, bottom] = ltrb;
    let (height, width) = (image.height(), image.width());
    let limit = |side: usize| match mode {
        PaddingMode::Constant(_) => usize::MAX,
        PaddingMode::Edge => {
            if side == 0 {
                0
            } else {
                usize::MAX
            }
        }
        PaddingMode::Reflect => side.saturating_sub(1),
        PaddingMode::Symmetric => side,
    };
    if left.max(right) > limit(width) || top.max(bottom) > limit(height) {
        return Err(Error::invalid(
            "pad",
            format!(
                "padding {ltrb:?} (left, top, right, bottom) is too large for a {height}x{width} \
                 image in {mode:?} mode (reflect needs padding < side, symmetric <= side)"
            ),
        ));
    }
    let (out_height, out_width) = padded_size(height, width, ltrb)?;
    let fill = match mode {
        PaddingMode::Constant(value) => value,
        _ => 0.0,
    };
    Ok(match image {
        Image::Pixels(raster) => Image::Pixels(pad_raster(
            raster,
            ltrb,
            out_height,
            out_width,
            mode,
            PixelImage::from_f32_rounded(fill),
        )?),
        Image::Chw(raster) => {
            Image::Chw(pad_raster(raster, ltrb, out_height, out_width, mode, fill)?)
        }
    })
}

/// The `(height, width)` of a `height × width` image padded by `[left, top, right, bottom]`.
///
/// Errors: [`Error::InvalidArgument`] naming `pad` when a side overflows or the padded image
/// would have more than [`MAX_IMAGE_PIXELS`](crate::MAX_IMAGE_PIXELS) pixels.
pub(crate) fn padded_size(height: usize, width: usize, ltrb: [usize; 4]) -> Result<(usize, usize)> {
    let [left, top, right, bottom] = ltrb;
    let side = |side: usize, before: usize, after: usize| {
        side.checked_add(before)
            .and_then(|side| side.checked_add(after))
            .ok_or_else(|| {
                Error::invalid(
                    "pad",
                    format!(
                        "padding {ltrb:?} (left, top, right, bottom) of a {height}x{width} \
                         image overflows"
                    ),
                )
            })
    };
    let (out_height, out_width) = (side(height, top, bottom)?, side(width, left, right)?);
    check_pixel_count("pad", out_height, out_width, Some((height, width)))?;
    Ok((out_height, out_width))
}

/// Crop the `height × width` region at (`top`, `left`) and resize it to
/// `out_height × out_width` (torchvision's `resized_crop`, antialias off).
///
/// Errors: as [`resize`].
pub fn resized_crop(
    image: &Image,
    top: isize,
    left: isize,
    height: usize,
    width: usize,
    out_height: usize,
    out_width: usize,
) -> Result<Image> {
    check_pixel_count(
        "resized_crop",
        out_height,
        out_width,
        Some((image.height(), image.width())),
    )?;
    resize(
        &crop(image, top, left, height, width)?,
        out_height,
        out_width,
    )
}

fn flip_raster<R: Raster>(image: &R, horizontal: bool) -> Result<R> {
    let (channels, height, width) = image.dims();
    let op = if horizontal { "hflip" } else { "vflip" };
    R::build(op, channels, height, width, |channel, row, column| {
        if horizontal {
            image.value(channel, row, width - 1 - column)
        } else {
            image.value(channel, height - 1 - row, column)
        }
    })
}

/// Mirror left to right.
///
/// Errors: [`Error::OutOfMemory`] when the result cannot be allocated.
pub fn hflip(image: &Image) -> Result<Image> {
    Ok(on_raster!(image, |raster| flip_raster(raster, true)))
}

/// Mirror top to bottom.
///
/// Errors: [`Error::OutOfMemory`] when the result cannot be allocated.
pub fn vflip(image: &Image) -> Result<Image> {
    Ok(on_raster!(image, |raster| flip_raster(raster, false)))
}

/// Channel planes as `f32` (CHW), whatever the layout; and the largest value of the layout.
fn planes(image: &Image) -> Result<(Vec<f32>, usize, usize, f32)> {
    Ok(match image {
        Image::Chw(chw) => {
            let mut data = reserved(chw.data().len())?;
            data.extend_from_slice(chw.data());
            (data, chw.channels(), chw.height() * chw.width(), 1.0)
        }
        Image::Pixels(pixels) => {
            let (channels, area) = (pixels.channels(), pixels.height() * pixels.width());
            let mut data = filled(channels * area, 0.0)?;
            for (position, pixel) in pixels.data().chunks_exact(channels).enumerate() {
                for (channel, &value) in pixel.iter().enumerate() {
                    data[channel * area + position] = value as f32;
                }
            }
            (data, channels, area, 255.0)
        }
    })
}

/// Store blended CHW planes back into the layout of `like`: `f32` clamped to [0, 1], 8-bit
/// clamped to [0, 255] and truncated (torchvision's `_blend` followed by `.to(uint8)`).
fn from_planes(like: &Image, data: Vec<f32>) -> Result<Image> {
    match like {
        Image::Chw(chw) => Ok(Image::Chw(ChwImage::new(
            chw.channels(),
            chw.height(),
            chw.width(),
            data.into_iter().map(|v| v.clamp(0.0, 1.0)).collect(),
        )?)),
        Image::Pixels(pixels) => {
            let (channels, area) = (pixels.channels(), pixels.height() * pixels.width());
            let mut out = filled(channels * area, 0u8)?;
            for (position, pixel) in out.chunks_exact_mut(channels).enumerate() {
                for (channel, value) in pixel.iter_mut().enumerate() {
                    *value = data[channel * area + position].clamp(0.0, 255.0) as u8;
                }
            }
            Ok(Image::Pixels(PixelImage::new(
                pixels.height(),
                pixels.width(),
                channels,
                out,
            )?))
        }
    }
}

/// torchvision's `rgb_to_grayscale` of CHW planes: `0.2989 R + 0.587 G + 0.114 B`, truncated
/// for 8-bit images; a single channel is its own grey.
fn grey_plane(data: &[f32], channels: usize, area: usize, eight_bit: bool) -> Result<Vec<f32>> {
    if channels == 1 {
        let mut grey = reserved(data.len())?;
        grey.extend_from_slice(data);
        return Ok(grey);
    }
    let mut grey = reserved(area)?;
    grey.extend((0..area).map(|i| {
        let grey = 0.2989f32 * data[i] + 0.587f32 * data[area + i] + 0.114f32 * data[2 * area + i];
        if eight_bit {
            grey.trunc()
        } else {
            grey
        }
    }));
    Ok(grey)
}

/// `ratio · a + (1 − ratio) · b` in `f32` (clamping happens when storing).
fn blend(a: f32, b: f32, ratio: f64) -> f32 {
    ratio as f32 * a + (1.0 - ratio) as f32 * b
}

fn check_factor(op: &'static str, factor: f64) -> Result<()> {
    if factor >= 0.0 && factor.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("factor {factor} must be a finite non-negative number"),
        ))
    }
}

fn check_colour_channels(op: &'static str, channels: usize) -> Result<()> {
    if channels == 1 || channels == 3 {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("takes 1 (grey) or 3 (RGB) channels, got {channels}"),
        ))
    }
}

/// Multiply every value by `factor` (0: black, 1: unchanged), clamped to the range.
///
/// Errors: [`Error::InvalidArgument`] for a negative or non-finite factor.
pub fn adjust_brightness(image: &Image, factor: f64) -> Result<Image> {
    check_factor("adjust_brightness", factor)?;
    let (mut data, _, _, _) = planes(image)?;
    data.iter_mut().for_each(|v| *v = blend(*v, 0.0, factor));
    from_planes(image, data)
}

/// Blend with the mean grey level (0: flat grey, 1: unchanged).
///
/// Errors: [`Error::InvalidArgument`] for a negative or non-finite factor, or a channel
/// count other than 1 or 3.
pub fn adjust_contrast(image: &Image, factor: f64) -> Result<Image> {
    check_factor("adjust_contrast", factor)?;
    check_colour_channels("adjust_contrast", image.channels())?;
    let (mut data, channels, area, bound) = planes(image)?;
    let grey = grey_plane(&data, channels, area, bound > 1.0)?;
    let mean = (grey.iter().map(|&v| v as f64).sum::<f64>() / grey.len().max(1) as f64) as f32;
    data.iter_mut().for_each(|v| *v = blend(*v, mean, factor));
    from_planes(image, data)
}

/// Blend with the image's own grey version (0: grey, 1: unchanged); a grey image is
/// returned unchanged.
///
/// Errors: [`Error::InvalidArgument`] for a negative or non-finite factor, or a channel
/// count other than 1 or 3.
pub fn adjust_saturation(image: &Image, factor: f64) -> Result<Image> {
    check_factor("adjust_saturation", factor)?;
    check_colour_channels("adjust_saturation", image.channels())?;
    if image.channels() == 1 {
        return Ok(image.clone());
    }
    let (mut data, channels, area, bound) = planes(image)?;
    let grey = grey_plane(&data, channels, area, bound > 1.0)?;
    data.iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = blend(*v, grey[i % area], factor));
    from_planes(image, data)
}

/// Rotate the hue by `hue_factor` turns (−0.5..=0.5) through HSV, like torchvision's tensor
/// `adjust_hue`; a grey image is returned unchanged. 8-bit images are converted to [0, 1],
/// shifted, and scaled back with `convert_image_dtype`'s `trunc(x · 255.999)`.
///
/// Errors: [`Error::InvalidArgument`] for a factor outside [−0.5, 0.5] or a channel count
/// other than 1 or 3.
pub fn adjust_hue(image: &Image, hue_factor: f64) -> Result<Image> {
    if !(-0.5..=0.5).contains(&hue_factor) {
        return Err(Error::invalid(
            "adjust_hue",
            format!("hue_factor {hue_factor} must be in [-0.5, 0.5]"),
        ));
    }
    check_colour_channels("adjust_hue", image.channels())?;
    if image.channels() == 1 {
        return Ok(image.clone());
    }
    let (mut data, _, area, bound) = planes(image)?;
    // Back to 8 bits as torchvision's `convert_image_dtype` does: truncate(x · 255.999).
    let back = if bound > 1.0 { 256.0 - 1e-3 } else { 1.0 };
    for i in 0..area {
        let rgb = [
            data[i] / bound,
            data[area + i] / bound,
            data[2 * area + i] / bound,
        ];
        let (h, s, v) = rgb_to_hsv(rgb);
        let h = (h + hue_factor as f32).rem_euclid(1.0);
        let [r, g, b] = hsv_to_rgb(h, s, v);
        data[i] = r * back;
        data[area + i] = g * back;
        data[2 * area + i] = b * back;
    }
    from_planes(image, data)
}

/// RGB in [0, 1] to (hue in [0, 1), saturation, value), as torchvision's `_rgb2hsv`.
fn rgb_to_hsv([r, g, b]: [f32; 3]) -> (f32, f32, f32) {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let chroma = max - min;
    let equal = max == min;
    let chroma_divisor = if equal { 1.0 } else { chroma };
    let saturation = chroma / if equal { 1.0 } else { max };
    let rc = (max - r) / chroma_divisor;
    let gc = (max - g) / chroma_divisor;
    let bc = (max - b) / chroma_divisor;
    let hr = if max == r { bc - gc } else { 0.0 };
    let hg = if max == g && max != r {
        2.0 + rc - bc
    } else {
        0.0
    };
    let hb = if max != g && max != r {
        4.0 + gc - rc
    } else {
        0.0
    };
    let hue = ((hr + hg + hb) / 6.0 + 1.0).rem_euclid(1.0);
    (hue, saturation, max)
}

/// (hue, saturation, value) back to RGB, as torchvision's `_hsv2rgb`.
fn hsv_to_rgb(h: f32, s: f32, v: f32) -> [f32; 3] {
    let sector = (h * 6.0).floor();
    let f = h * 6.0 - sector;
    let sector = (sector as i32).rem_euclid(6);
    let p = (v * (1.0 - s)).clamp(0.0, 1.0);
    let q = (v * (1.0 - s * f)).clamp(0.0, 1.0);
    let t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0);
    match sector {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// 8-bit HWC pixels to `f32` CHW values in [0, 1] (`x / 255`, torchvision's `to_tensor`).
///
/// Errors: [`Error::OutOfMemory`] when the `f32` values (four times the bytes of the
/// pixels) cannot be allocated.
pub fn to_tensor(image: &PixelImage) -> Result<ChwImage> {
    let (channels, width, data) = (image.channels(), image.width(), image.data());
    <ChwImage as Raster>::build("to_tensor", channels, image.height(), width, |c, y, x| {
        data[(y * width + x) * channels + c] as f32 / 255.0
    })
}

/// `(x − mean[c]) / std[c]` per channel (torchvision's `normalize`); one mean and std may
/// serve every channel.
///
/// Errors: [`Error::InvalidArgument`] when `mean` or `std` has neither one value nor one
/// per channel, or a standard deviation is zero or not finite.
pub fn normalize(mut image: ChwImage, mean: &[f32], std: &[f32]) -> Result<ChwImage> {
    let channels = image.channels();
    for (what, values) in [("mean", mean), ("std", std)] {
        if values.len() != channels && values.len() != 1 {
            return Err(Error::invalid(
                "normalize",
                format!(
                    "{what} has {} values for a {channels}-channel image (give 1 or {channels})",
                    values.len()
                ),
            ));
        }
    }
    if let Some(bad) = std.iter().find(|s| **s == 0.0 || !s.is_finite()) {
        return Err(Error::invalid(
            "normalize",
            format!(
                "std {bad} would divide by zero or infinity; every std must be non-zero and finite"
            ),
        ));
    }
    let area = image.height() * image.width();
    if area == 0 {
        return Ok(image);
    }
    for (channel, plane) in image.data_mut().chunks_exact_mut(area).enumerate() {
        let m = mean[channel.min(mean.len() - 1)];
        let s = std[channel.min(std.len() - 1)];
        for value in plane {
            *value = (*value - m) / s;
        }
    }
    Ok(image)
}
