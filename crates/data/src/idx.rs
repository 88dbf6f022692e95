//! Reader for the IDX file format of MNIST and Fashion-MNIST (LeCun's format: a big-endian
//! magic number `0x0000_08NN` whose low byte is the number of dimensions, one big-endian `u32`
//! per dimension, then the `u8` data in row-major order).
//!
//! Files may be raw or gzip-compressed; gzip is recognised by its magic bytes `1f 8b`, not by
//! the file name. Everything a file claims is checked against what it holds, so a truncated or
//! corrupt download gives [`Error::Format`] naming the file instead of garbage or a panic, and a
//! missing file gives [`Error::Io`] naming the path.

use std::io::Read;
use std::path::Path;

use anygrad_core::{Error, Result};

/// Magic number of an IDX file of unsigned bytes with three dimensions (images).
pub const IDX_IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned bytes with one dimension (labels).
pub const IDX_LABELS_MAGIC: u32 = 0x0000_0801;

/// Images read from an IDX file: `count` images of `rows × cols` `u8` pixels, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxImages {
    /// Number of images.
    pub count: usize,
    /// Pixel rows per image (28 for MNIST).
    pub rows: usize,
    /// Pixel columns per image (28 for MNIST).
    pub cols: usize,
    /// `count * rows * cols` pixels, image after image, each row-major; 0 = background.
    pub pixels: Vec<u8>,
}

/// Read a whole file, decompressing it when it starts with the gzip magic bytes `1f 8b`.
///
/// A missing or unreadable file gives [`Error::Io`] naming the path; a damaged gzip stream
/// gives [`Error::Format`].
pub fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>> {
    let context = path.display().to_string();
    let raw = std::fs::read(path).map_err(|error| Error::io(context.clone(), error))?;
    decompress_if_gzip(raw, &context)
}

/// Decompress `bytes` when they start with the gzip magic bytes; otherwise return them as
/// they are. `context` names the source in error messages.
pub fn decompress_if_gzip(bytes: Vec<u8>, context: &str) -> Result<Vec<u8>> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes);
    }
    // The gzip trailer stores the uncompressed size modulo 2^32: a good capacity hint.
    let size_hint = bytes
        .len()
        .checked_sub(4)
        .and_then(|start| bytes.get(start..))
        .and_then(|tail| tail.try_into().ok())
        .map(|tail: [u8; 4]| u32::from_le_bytes(tail) as usize)
        .unwrap_or(0)
        .min(1 << 30);
    let mut decoded = Vec::with_capacity(size_hint);
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut decoded)
        .map_err(|error| {
            Error::format(
                context,
                format!("damaged gzip stream ({error}); download the file again"),
            )
        })?;
    Ok(decoded)
}

/// Parse the IDX header: check the magic number and return the dimensions and the offset of
/// the data. Also checks that the data length equals the product of the dimensions.
fn parse_header(bytes: &[u8], expected_magic: u32, context: &str) -> Result<(Vec<usize>, usize)> {
    let read_u32 = |offset: usize| -> Option<u32> {
        let field: [u8; 4] = bytes.get(offset..offset + 4)?.try_into().ok()?;
        Some(u32::from_be_bytes(field))
    };
    let magic = read_u32(0).ok_or_else(|| {
        Error::format(
            context,
            format!("file is {} bytes, too short for an IDX header", bytes.len()),
        )
    })?;
    if magic != expected_magic {
        return Err(Error::format(
            context,
            format!(
                "bad IDX magic number {magic:#010x}, expected {expected_magic:#010x} \
                 (is this the right file, or still compressed with something other than gzip?)"
            ),
        ));
    }
    let rank = (expected_magic & 0xff) as usize;
    let mut dims = Vec::with_capacity(rank);
    for d in 0..rank {
        let dim = read_u32(4 + 4 * d).ok_or_else(|| {
            Error::format(context, "file ends inside the IDX header (truncated?)")
        })?;
        dims.push(dim as usize);
    }
    let header = 4 + 4 * rank;
    let expected = dims
        .iter()
        .try_fold(1usize, |acc, &dim| acc.checked_mul(dim))
        .ok_or_else(|| Error::format(context, format!("IDX dimensions {dims:?} overflow")))?;
    let actual = bytes.len() - header;
    if actual != expected {
        let what = if actual < expected {
            "truncated"
        } else {
            "has trailing bytes"
        };
        return Err(Error::format(
            context,
            format!(
                "IDX header promises {dims:?} = {expected} bytes of data but the file holds \
                 {actual} ({what}); download the file again"
            ),
        ));
    }
    Ok((dims, header))
}

/// Parse IDX image bytes (already decompressed). `context` names the source in errors.
pub fn parse_idx_images(bytes: &[u8], context: &str) -> Result<IdxImages> {
    let (dims, header) = parse_header(bytes, IDX_IMAGES_MAGIC, context)?;
    Ok(IdxImages {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels: bytes[header..].to_vec(),
    })
}

/// Parse IDX label bytes (already decompressed). `context` names the source in errors.
pub fn parse_idx_labels(bytes: &[u8], context: &str) -> Result<Vec<u8>> {
    let (_dims, header) = parse_header(bytes, IDX_LABELS_MAGIC, context)?;
    Ok(bytes[header..].to_vec())
}

/// Read an IDX image file (`*-images-idx3-ubyte`, raw or gzip).
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] (naming the file)
/// when it is not an IDX image file or is truncated.
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<IdxImages> {
    let path = path.as_ref();
    let bytes = read_maybe_gzip(path)?;
    parse_idx_images(&bytes, &path.display().to_string())
}

/// Read an IDX label file (`*-labels-idx1-ubyte`, raw or gzip).
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] (naming the file)
/// when it is not an IDX label file or is truncated.
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let bytes = read_maybe_gzip(path)?;
    parse_idx_labels(&bytes, &path.display().to_string())
}

/// Encode images as IDX bytes (uncompressed). Used by tests and handy for writing small
/// fixture files.
pub fn encode_idx_images(images: &IdxImages) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(16 + images.pixels.len());
    bytes.extend_from_slice(&IDX_IMAGES_MAGIC.to_be_bytes());
    for dim in [images.count, images.rows, images.cols] {
        bytes.extend_from_slice(&(dim as u32).to_be_bytes());
    }
    bytes.extend_from_slice(&images.pixels);
    bytes
}

/// Encode labels as IDX bytes (uncompressed).
pub fn encode_idx_labels(labels: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(8 + labels.len());
    bytes.extend_from_slice(&IDX_LABELS_MAGIC.to_be_bytes());
    bytes.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    bytes.extend_from_slice(labels);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IdxImages {
        IdxImages {
            count: 2,
            rows: 2,
            cols: 3,
            pixels: (0..12).collect(),
        }
    }

    #[test]
    fn round_trip_images_and_labels() {
        let images = sample();
        let parsed = parse_idx_images(&encode_idx_images(&images), "mem").unwrap();
        assert_eq!(parsed, images);
        let labels = parse_idx_labels(&encode_idx_labels(&[3, 1, 4]), "mem").unwrap();
        assert_eq!(labels, vec![3, 1, 4]);
    }

    #[test]
    fn wrong_magic_is_format_error() {
        let bytes = encode_idx_labels(&[1, 2]);
        let error = parse_idx_images(&bytes, "labels.idx").unwrap_err();
        assert!(matches!(error, Error::Format { ref context, .. } if context == "labels.idx"));
    }

    #[test]
    fn truncated_and_padded_are_format_errors() {
        let bytes = encode_idx_images(&sample());
        for cut in [0, 3, 7, 15, bytes.len() - 1] {
            let error = parse_idx_images(&bytes[..cut], "x").unwrap_err();
            assert!(matches!(error, Error::Format { .. }), "cut {cut}: {error}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(matches!(
            parse_idx_images(&padded, "x"),
            Err(Error::Format { .. })
        ));
    }

    #[test]
    fn overflowing_dims_are_format_errors() {
        let mut bytes = IDX_IMAGES_MAGIC.to_be_bytes().to_vec();
        for _ in 0..3 {
            bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        }
        assert!(matches!(
            parse_idx_images(&bytes, "x"),
            Err(Error::Format { .. })
        ));
    }

    #[test]
    fn gzip_is_detected_by_magic() {
        use std::io::Write;
        let raw = encode_idx_labels(&[7; 100]);
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&raw).unwrap();
        let gz = encoder.finish().unwrap();
        assert_eq!(decompress_if_gzip(gz.clone(), "x").unwrap(), raw);
        assert_eq!(decompress_if_gzip(raw.clone(), "x").unwrap(), raw);
        let damaged = gz[..gz.len() / 2].to_vec();
        assert!(matches!(
            decompress_if_gzip(damaged, "x"),
            Err(Error::Format { .. })
        ));
    }
}
