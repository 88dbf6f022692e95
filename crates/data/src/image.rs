//! Host images: what a decoder produces and what transforms work on before a batch exists.
//!
//! Two layouts, matching the two stages of a torchvision pipeline:
//!
//! - [`PixelImage`]: 8-bit pixels, height × width × channels (HWC), what PNG/JPEG decoding
//!   yields — torchvision's PIL image. Geometric and colour transforms work on it.
//! - [`ChwImage`]: `f32` values, channels × height × width (CHW), what
//!   [`ToTensor`](crate::transforms::ToTensor) makes (values in [0, 1]) — torchvision's
//!   tensor image. [`Normalize`](crate::transforms::Normalize) needs it; geometric
//!   transforms work on it too.
//!
//! [`Image`] holds either, so that a [`Compose`](crate::transforms::Compose) pipeline can
//! change the layout half-way, exactly where `ToTensor` sits in a torchvision `Compose`.
//! Decoding (PNG and JPEG, through the `image` crate) and PNG encoding live here as well.
//!
//! **Bounds.** Image files are read only when they are regular files of at most
//! [`MAX_IMAGE_FILE_BYTES`]; decoded images and the results of every transform have at most
//! [`MAX_IMAGE_PIXELS`] pixels. A tiny file can promise an enormous image (a one-bit PNG of
//! 1 × 100,000,000 pixels is 12 KB) and a resize of a thin image to a fixed shorter side
//! multiplies its area, so sizes are checked before anything is allocated, and buffers are
//! allocated fallibly: an absurd image is an error, never an abort.

use std::io::Cursor;
use std::path::Path;

use anygrad_core::files::read_regular_file;
use anygrad_core::{Error, Result};

use anygrad_core::host_memory::reserved;

/// The largest image file read: 256 MiB. A PNG or JPEG of the largest image allowed
/// ([`MAX_IMAGE_PIXELS`] RGB pixels, 384 MiB raw) compresses below this for any photograph
/// or scan; a bigger file is not a training image but something else (a disk image, a video,
/// `/dev/zero` behind a link) and is refused before it is read.
pub const MAX_IMAGE_FILE_BYTES: u64 = 256 << 20;

/// The most pixels (height × width) a decoded image or a transform's result may have:
/// 2^27 = 134,217,728, e.g. 16384 × 8192. That is above the largest camera sensors (100 to
/// 150 megapixels) and far above any training resolution, while one such image stays within
/// 384 MiB as 8-bit RGB and 1.5 GiB as `f32` (after `ToTensor`), so that a hostile or
/// mistaken size is refused instead of asking the allocator for tens of gigabytes.
pub const MAX_IMAGE_PIXELS: usize = 1 << 27;

/// Check that a `height × width` image made by `op` stays within [`MAX_IMAGE_PIXELS`];
/// `input` is the size of the image it is made from, for the message.
///
/// Errors: [`Error::InvalidArgument`] naming `op`, the result's size and the input's.
pub(crate) fn check_pixel_count(
    op: &'static str,
    height: usize,
    width: usize,
    input: Option<(usize, usize)>,
) -> Result<()> {
    let pixels = height.checked_mul(width);
    if pixels.is_some_and(|pixels| pixels <= MAX_IMAGE_PIXELS) {
        return Ok(());
    }
    let pixels = pixels.map_or_else(|| "more than 2^64".to_string(), |p| p.to_string());
    let from = input.map_or_else(String::new, |(h, w)| format!(" of a {h}x{w} image"));
    Err(Error::invalid(
        op,
        format!(
            "the {height}x{width} result{from} would have {pixels} pixels, more than the \
             {MAX_IMAGE_PIXELS} an image may have; choose a smaller size (or shrink the image \
             first)"
        ),
    ))
}

/// An 8-bit image in height × width × channels order (1 channel: grey, 3: RGB).
#[derive(Clone, PartialEq, Eq)]
pub struct PixelImage {
    height: usize,
    width: usize,
    channels: usize,
    data: Vec<u8>,
}

impl std::fmt::Debug for PixelImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PixelImage {{ height: {}, width: {}, channels: {} }}",
            self.height, self.width, self.channels
        )
    }
}

/// Check that `data_len` values fill a `channels × height × width` image.
fn check_size(
    op: &'static str,
    channels: usize,
    height: usize,
    width: usize,
    data_len: usize,
) -> Result<()> {
    if channels == 0 {
        return Err(Error::invalid(op, "an image needs at least one channel"));
    }
    let expected = channels
        .checked_mul(height)
        .and_then(|n| n.checked_mul(width));
    if expected != Some(data_len) {
        return Err(Error::InvalidShape {
            op,
            shape: vec![channels, height, width],
            message: format!("{data_len} values do not fill the image"),
        });
    }
    Ok(())
}

impl PixelImage {
    /// An image from `height × width × channels` bytes (row after row, the channels of a
    /// pixel side by side).
    ///
    /// Errors: [`Error::InvalidShape`] when `data` has the wrong length,
    /// [`Error::InvalidArgument`] for zero channels.
    pub fn new(height: usize, width: usize, channels: usize, data: Vec<u8>) -> Result<Self> {
        check_size("PixelImage::new", channels, height, width, data.len())?;
        Ok(PixelImage {
            height,
            width,
            channels,
            data,
        })
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Channels per pixel.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The pixels, HWC.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The pixels, HWC, consuming the image.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Channel `channel` of the pixel at (`row`, `column`), or `None` outside the image.
    pub fn at(&self, row: usize, column: usize, channel: usize) -> Option<u8> {
        if row >= self.height || column >= self.width || channel >= self.channels {
            return None;
        }
        self.data
            .get((row * self.width + column) * self.channels + channel)
            .copied()
    }

    /// Decode PNG or JPEG bytes (the format is recognised from the content). Grey images
    /// keep one channel, everything else becomes RGB: an alpha channel is dropped, palettes
    /// are expanded, 16-bit samples are reduced to 8 bits. `context` (usually the path) names
    /// the source in errors. The size in the header is checked against
    /// [`MAX_IMAGE_PIXELS`] before any pixel is decoded.
    ///
    /// Errors: [`Error::Format`] naming `context` for bytes that are not a complete PNG or
    /// JPEG image, for an image of more than [`MAX_IMAGE_PIXELS`] pixels, or one too large
    /// for the decoder's 512 MiB allocation limit.
    pub fn decode(bytes: &[u8], context: &str) -> Result<Self> {
        let reader = || -> Result<image::io::Reader<Cursor<&[u8]>>> {
            let reader = image::io::Reader::new(Cursor::new(bytes))
                .with_guessed_format()
                .map_err(|error| Error::format(context, error.to_string()))?;
            if reader.format().is_none() {
                return Err(Error::format(
                    context,
                    "not a PNG or JPEG image (unrecognised file signature)",
                ));
            }
            Ok(reader)
        };
        // The header alone gives the size: refuse a huge image before decoding it.
        let (width, height) = reader()?
            .into_dimensions()
            .map_err(|error| Error::format(context, error.to_string()))?;
        let pixels = u64::from(width) * u64::from(height);
        if pixels > MAX_IMAGE_PIXELS as u64 {
            return Err(Error::format(
                context,
                format!(
                    "the image is {width}x{height} ({pixels} pixels), more than the \
                     {MAX_IMAGE_PIXELS} pixels an image may have; shrink it first"
                ),
            ));
        }
        let decoded = reader()?
            .decode()
            .map_err(|error| Error::format(context, error.to_string()))?;
        let (width, height) = (decoded.width() as usize, decoded.height() as usize);
        let (channels, data) = if decoded.color().has_color() {
            (3, decoded.into_rgb8().into_raw())
        } else {
            (1, decoded.into_luma8().into_raw())
        };
        PixelImage::new(height, width, channels, data)
    }

    /// Read and decode the PNG or JPEG file at `path` (see [`decode`](Self::decode)). The
    /// path must name a regular file (or a link to one) of at most
    /// [`MAX_IMAGE_FILE_BYTES`]: a FIFO, a device or a directory is refused before anything
    /// is read.
    ///
    /// Errors: [`Error::Io`] naming the path when it cannot be read, [`Error::Format`] naming
    /// it when it is not a regular file, is too large, or is not a valid image.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = read_regular_file(path, MAX_IMAGE_FILE_BYTES, "image")?;
        PixelImage::decode(&bytes, &path.display().to_string())
    }

    /// The image with three channels: grey is repeated into R, G and B (PIL's
    /// `convert("RGB")`); an RGB image is returned as it is.
    ///
    /// Errors: [`Error::InvalidArgument`] for a channel count other than 1 or 3,
    /// [`Error::OutOfMemory`] when the three channels cannot be allocated.
    pub fn into_rgb(self) -> Result<Self> {
        match self.channels {
            3 => Ok(self),
            1 => {
                let mut data = reserved(self.data.len().saturating_mul(3))?;
                data.extend(self.data.iter().flat_map(|&v| [v, v, v]));
                PixelImage::new(self.height, self.width, 3, data)
            }
            channels => Err(Error::invalid(
                "PixelImage::into_rgb",
                format!("cannot convert a {channels}-channel image to RGB (1 or 3 channels)"),
            )),
        }
    }

    /// The image with one grey channel. RGB is converted like PIL's `convert("L")`:
    /// `(19595 R + 38470 G + 7471 B + 32768) >> 16`, i.e. ITU-R 601 luma rounded to nearest.
    ///
    /// Errors: [`Error::InvalidArgument`] for a channel count other than 1 or 3.
    pub fn into_gray(self) -> Result<Self> {
        match self.channels {
            1 => Ok(self),
            3 => {
                let mut data = reserved(self.data.len() / 3)?;
                data.extend(self.data.chunks_exact(3).map(|p| {
                    let luma = 19595 * p[0] as u32 + 38470 * p[1] as u32 + 7471 * p[2] as u32;
                    ((luma + 0x8000) >> 16) as u8
                }));
                PixelImage::new(self.height, self.width, 1, data)
            }
            channels => Err(Error::invalid(
                "PixelImage::into_gray",
                format!("cannot convert a {channels}-channel image to grey (1 or 3 channels)"),
            )),
        }
    }

    /// Encode as PNG (8-bit grey or RGB).
    ///
    /// Errors: [`Error::InvalidArgument`] for a channel count other than 1 or 3 or a side
    /// beyond `u32`; [`Error::Format`] when the encoder fails.
    pub fn encode_png(&self) -> Result<Vec<u8>> {
        let color = match self.channels {
            1 => image::ColorType::L8,
            3 => image::ColorType::Rgb8,
            channels => {
                return Err(Error::invalid(
                    "PixelImage::encode_png",
                    format!("PNG output takes 1 or 3 channels, not {channels}"),
                ))
            }
        };
        let side = |value: usize| {
            u32::try_from(value).map_err(|_| {
                Error::invalid(
                    "PixelImage::encode_png",
                    format!("side {value} is too large"),
                )
            })
        };
        let mut bytes = Vec::new();
        image::ImageEncoder::write_image(
            image::codecs::png::PngEncoder::new(&mut bytes),
            &self.data,
            side(self.width)?,
            side(self.height)?,
            color,
        )
        .map_err(|error| Error::format("PNG encoder", error.to_string()))?;
        Ok(bytes)
    }

    /// Write the image as a PNG file at `path`.
    ///
    /// Errors: as [`encode_png`](Self::encode_png), and [`Error::Io`] naming the path when
    /// it cannot be written.
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.encode_png()?;
        std::fs::write(path, bytes).map_err(|error| Error::io(path.display().to_string(), error))
    }
}

/// An `f32` image in channels × height × width order: torchvision's tensor image.
#[derive(Clone, PartialEq)]
pub struct ChwImage {
    channels: usize,
    height: usize,
    width: usize,
    data: Vec<f32>,
}

impl std::fmt::Debug for ChwImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ChwImage {{ channels: {}, height: {}, width: {} }}",
            self.channels, self.height, self.width
        )
    }
}

impl ChwImage {
    /// An image from `channels × height × width` values (plane after plane).
    ///
    /// Errors: [`Error::InvalidShape`] when `data` has the wrong length,
    /// [`Error::InvalidArgument`] for zero channels.
    pub fn new(channels: usize, height: usize, width: usize, data: Vec<f32>) -> Result<Self> {
        check_size("ChwImage::new", channels, height, width, data.len())?;
        Ok(ChwImage {
            channels,
            height,
            width,
            data,
        })
    }

    /// Channels (planes).
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Columns.
    pub fn width(&self) -> usize {
        self.width
    }

    /// `[channels, height, width]`, the shape of the tensor it becomes.
    pub fn shape(&self) -> [usize; 3] {
        [self.channels, self.height, self.width]
    }

    /// The values, CHW.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// The values, CHW, consuming the image.
    pub fn into_data(self) -> Vec<f32> {
        self.data
    }

    /// Mutable access to the values, CHW.
    pub fn data_mut(&mut self) -> &mut [f32] {
        &mut self.data
    }
}

/// A host image in either layout; what a [`Transform`](crate::transforms::Transform) takes
/// and returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Image {
    /// 8-bit HWC pixels (before `ToTensor`).
    Pixels(PixelImage),
    /// `f32` CHW values (after `ToTensor`).
    Chw(ChwImage),
}

impl Image {
    /// Rows.
    pub fn height(&self) -> usize {
        match self {
            Image::Pixels(image) => image.height(),
            Image::Chw(image) => image.height(),
        }
    }

    /// Columns.
    pub fn width(&self) -> usize {
        match self {
            Image::Pixels(image) => image.width(),
            Image::Chw(image) => image.width(),
        }
    }

    /// Channels.
    pub fn channels(&self) -> usize {
        match self {
            Image::Pixels(image) => image.channels(),
            Image::Chw(image) => image.channels(),
        }
    }

    /// The CHW image, or an [`Error::InvalidArgument`] naming `op` when it is still 8-bit
    /// pixels (the hint: add `ToTensor` first).
    pub fn into_chw(self, op: &'static str) -> Result<ChwImage> {
        match self {
            Image::Chw(image) => Ok(image),
            Image::Pixels(image) => Err(Error::invalid(
                op,
                format!(
                    "needs a CHW f32 image but got 8-bit pixels ({}x{}x{}); put ToTensor before it",
                    image.height(),
                    image.width(),
                    image.channels()
                ),
            )),
        }
    }
}

impl From<PixelImage> for Image {
    fn from(image: PixelImage) -> Self {
        Image::Pixels(image)
    }
}

impl From<ChwImage> for Image {
    fn from(image: ChwImage) -> Self {
        Image::Chw(image)
    }
}

/// Uniform access to both layouts for the geometric operations, which only move values
/// around (crop, pad, flip) or interpolate them (resize) and are written once for both.
pub(crate) trait Raster: Sized {
    /// One stored value (`u8` or `f32`).
    type Value: Copy + Send + Sync;

    /// `(channels, height, width)`.
    fn dims(&self) -> (usize, usize, usize);

    /// The value of `channel` at (`row`, `column`); the caller keeps them in range.
    fn value(&self, channel: usize, row: usize, column: usize) -> Self::Value;

    /// An image of the given size filled by `f(channel, row, column)`, made by `op`.
    ///
    /// Errors: [`Error::InvalidArgument`] naming `op` beyond [`MAX_IMAGE_PIXELS`],
    /// [`Error::OutOfMemory`] when the values cannot be allocated.
    fn build(
        op: &'static str,
        channels: usize,
        height: usize,
        width: usize,
        f: impl FnMut(usize, usize, usize) -> Self::Value,
    ) -> Result<Self>;

    /// A value as `f32` (for interpolation).
    fn to_f32(value: Self::Value) -> f32;

    /// An interpolated value stored back: `u8` rounds to nearest and saturates (like
    /// torchvision's resize of a `uint8` tensor), `f32` is kept.
    fn from_f32_rounded(value: f32) -> Self::Value;
}

impl Raster for PixelImage {
    type Value = u8;

    fn dims(&self) -> (usize, usize, usize) {
        (self.channels, self.height, self.width)
    }

    fn value(&self, channel: usize, row: usize, column: usize) -> u8 {
        self.data[(row * self.width + column) * self.channels + channel]
    }

    fn build(
        op: &'static str,
        channels: usize,
        height: usize,
        width: usize,
        mut f: impl FnMut(usize, usize, usize) -> u8,
    ) -> Result<Self> {
        check_pixel_count(op, height, width, None)?;
        let mut data = reserved(channels.saturating_mul(height * width))?;
        for row in 0..height {
            for column in 0..width {
                for channel in 0..channels {
                    data.push(f(channel, row, column));
                }
            }
        }
        Ok(PixelImage {
            height,
            width,
            channels,
            data,
        })
    }

    fn to_f32(value: u8) -> f32 {
        value as f32
    }

    fn from_f32_rounded(value: f32) -> u8 {
        value.round().clamp(0.0, 255.0) as u8
    }
}

impl Raster for ChwImage {
    type Value = f32;

    fn dims(&self) -> (usize, usize, usize) {
        (self.channels, self.height, self.width)
    }

    fn value(&self, channel: usize, row: usize, column: usize) -> f32 {
        self.data[(channel * self.height + row) * self.width + column]
    }

    fn build(
        op: &'static str,
        channels: usize,
        height: usize,
        width: usize,
        mut f: impl FnMut(usize, usize, usize) -> f32,
    ) -> Result<Self> {
        check_pixel_count(op, height, width, None)?;
        let mut data = reserved(channels.saturating_mul(height * width))?;
        for channel in 0..channels {
            for row in 0..height {
                for column in 0..width {
                    data.push(f(channel, row, column));
                }
            }
        }
        Ok(ChwImage {
            channels,
            height,
            width,
            data,
        })
    }

    fn to_f32(value: f32) -> f32 {
        value
    }

    fn from_f32_rounded(value: f32) -> f32 {
        value
    }
}
