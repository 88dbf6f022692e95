//! Reader for the IDX file format of MNIST and Fashion-MNIST (LeCun's format: a big-endian
//! magic number `0x0000_08NN` whose low byte is the number of dimensions, one big-endian `u32`
//! per dimension, then the `u8` data in row-major order).
//!
//! Files may be raw or gzip-compressed; gzip is recognised by its magic bytes `1f 8b`, not by
//! the file name. Everything a file claims is checked against what it holds, so a truncated or
//! corrupt download gives [`Error::Format`] naming the file instead of garbage or a panic, and a
//! missing file gives [`Error::Io`] naming the path. A path that is not a regular file (a FIFO,
//! which would block the reader, or a device such as `/dev/zero`, which would be read until
//! memory runs out) is refused with [`Error::Format`] before it is opened.

use std::io::{BufRead, Read};
use std::path::Path;

use anygrad_core::files::{read_regular_file, regular_file_metadata};
use anygrad_core::{Error, Result};

use anygrad_core::host_memory::reserved;

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
/// A missing or unreadable file gives [`Error::Io`] naming the path; a path that is not a
/// regular file, a file (or decompressed content) larger than the largest IDX file
/// ([`MAX_IDX_DATA_BYTES`] plus a header), and a damaged gzip stream give [`Error::Format`].
pub fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>> {
    let context = path.display().to_string();
    let raw = read_regular_file(path, MAX_IDX_FILE_BYTES, "IDX file")?;
    decompress_if_gzip(raw, &context)
}

/// Decompress `bytes` when they start with the gzip magic bytes; otherwise return them as
/// they are. `context` names the source in error messages.
///
/// Errors: [`Error::Format`] for a damaged gzip stream, or one that expands beyond the
/// largest IDX file ([`MAX_IDX_DATA_BYTES`] plus a header); [`Error::OutOfMemory`] when the
/// output cannot be allocated.
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
    let mut decoded = reserved(size_hint)?;
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(MAX_IDX_FILE_BYTES + 1)
        .read_to_end(&mut decoded)
        .map_err(|error| {
            Error::format(
                context,
                format!("damaged gzip stream ({error}); download the file again"),
            )
        })?;
    if decoded.len() as u64 > MAX_IDX_FILE_BYTES {
        return Err(Error::format(
            context,
            format!(
                "the gzip stream expands beyond {MAX_IDX_FILE_BYTES} bytes, more than any IDX \
                 file holds"
            ),
        ));
    }
    Ok(decoded)
}

/// The most data bytes an IDX file may promise (16 GiB; MNIST's training images are 47 MB,
/// the largest IDX data sets a few GB). Headers promising more are refused as corrupt before
/// anything is allocated.
pub const MAX_IDX_DATA_BYTES: u64 = 16 << 30;

/// The largest IDX file: the most data plus the longest header (a magic number and 255
/// dimensions of 4 bytes each).
pub(crate) const MAX_IDX_FILE_BYTES: u64 = MAX_IDX_DATA_BYTES + 4 + 4 * 255;

/// The most a deflate stream can expand (a little over 1,032:1): a gzip file of `n` bytes
/// cannot hold more than this many times `n` bytes of data, so a header promising more is
/// refused before decompressing anything.
const MAX_DEFLATE_RATIO: u64 = 1_040;

/// Fill `buffer` from `reader`; returns how many bytes were read (fewer only at the end).
fn read_up_to(reader: &mut dyn Read, buffer: &mut [u8], context: &str) -> Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(read_error(error, context)),
        }
    }
    Ok(filled)
}

/// A read error: damaged gzip data is a format error, anything else an I/O error.
fn read_error(error: std::io::Error, context: &str) -> Error {
    match error.kind() {
        std::io::ErrorKind::InvalidInput
        | std::io::ErrorKind::InvalidData
        | std::io::ErrorKind::UnexpectedEof => Error::format(
            context,
            format!("damaged gzip stream ({error}); download the file again"),
        ),
        _ => Error::io(context.to_string(), error),
    }
}

/// Where the IDX bytes come from, and what that says about their size.
enum SizeBound {
    /// Exactly this many bytes (a raw file or an in-memory buffer).
    Exact(u64),
    /// At most this many bytes (a gzip stream of a known compressed size).
    AtMost(u64),
}

/// Read one IDX object from a stream: the header first (magic number, then one `u32` per
/// dimension), then exactly the data it promises, allocated only as it arrives (or exactly,
/// when the size is known). Trailing bytes, missing bytes, a bad magic number and absurd
/// dimensions are format errors; nothing is allocated for a file whose header is wrong.
fn read_idx_stream(
    reader: &mut dyn Read,
    expected_magic: u32,
    bound: SizeBound,
    context: &str,
) -> Result<(Vec<usize>, Vec<u8>)> {
    let rank = (expected_magic & 0xff) as usize;
    let header_len = 4 + 4 * rank;
    let mut header = vec![0u8; header_len];
    let got = read_up_to(reader, &mut header, context)?;
    if got < 4 {
        return Err(Error::format(
            context,
            format!("file is {got} bytes, too short for an IDX header"),
        ));
    }
    let field = |index: usize| {
        let bytes: [u8; 4] = [
            header[4 * index],
            header[4 * index + 1],
            header[4 * index + 2],
            header[4 * index + 3],
        ];
        u32::from_be_bytes(bytes)
    };
    let magic = field(0);
    if magic != expected_magic {
        return Err(Error::format(
            context,
            format!(
                "bad IDX magic number {magic:#010x}, expected {expected_magic:#010x} \
                 (is this the right file, or still compressed with something other than gzip?)"
            ),
        ));
    }
    if got < header_len {
        return Err(Error::format(
            context,
            "file ends inside the IDX header (truncated?)",
        ));
    }
    let dims: Vec<usize> = (1..=rank).map(|d| field(d) as usize).collect();
    let expected = dims
        .iter()
        .try_fold(1u64, |acc, &dim| acc.checked_mul(dim as u64))
        .filter(|&bytes| bytes <= MAX_IDX_DATA_BYTES)
        .ok_or_else(|| {
            Error::format(
                context,
                format!(
                    "IDX dimensions {dims:?} promise more than {MAX_IDX_DATA_BYTES} bytes \
                     (corrupt header?)"
                ),
            )
        })?;
    let mismatch = |actual: u64| {
        let what = if actual < expected {
            "truncated"
        } else {
            "has trailing bytes"
        };
        Error::format(
            context,
            format!(
                "IDX header promises {dims:?} = {expected} bytes of data but the file holds \
                 {actual} ({what}); download the file again"
            ),
        )
    };
    let mut data = Vec::new();
    match bound {
        SizeBound::Exact(total) => {
            let actual = total.saturating_sub(header_len as u64);
            if actual != expected {
                return Err(mismatch(actual));
            }
            data.try_reserve_exact(expected as usize).map_err(|_| {
                Error::format(
                    context,
                    format!("cannot allocate {expected} bytes for the IDX data"),
                )
            })?;
        }
        SizeBound::AtMost(compressed) => {
            if expected > compressed.saturating_mul(MAX_DEFLATE_RATIO) {
                return Err(Error::format(
                    context,
                    format!(
                        "IDX header promises {dims:?} = {expected} bytes, more than a \
                         {compressed}-byte gzip file can hold (corrupt header?)"
                    ),
                ));
            }
        }
    }
    // Read at most one byte more than promised: enough to see trailing data, never more.
    let read = reader
        .take(expected + 1)
        .read_to_end(&mut data)
        .map_err(|error| read_error(error, context))? as u64;
    if read != expected {
        return Err(mismatch(read));
    }
    Ok((dims, data))
}

/// Open an IDX file (raw, or gzip recognised by its magic bytes) and read one object from it.
fn read_idx_file(path: &Path, expected_magic: u32) -> Result<(Vec<usize>, Vec<u8>)> {
    let context = path.display().to_string();
    let io = |error: std::io::Error| Error::io(context.clone(), error);
    // Check before opening: opening a FIFO blocks until something writes to it. No size
    // bound here: the header is read first and then only the bytes it promises, so a huge
    // file with a wrong header gets the more useful error about its header.
    regular_file_metadata(path, u64::MAX, "IDX file")?;
    let file = std::fs::File::open(path).map_err(io)?;
    // And check what was opened: the path may have been replaced in between.
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        return Err(Error::format(
            &context,
            "not a regular file (it changed while being opened)",
        ));
    }
    let size = metadata.len();
    let mut reader = std::io::BufReader::new(file);
    let is_gzip = reader.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    if is_gzip {
        let mut decoder = flate2::bufread::MultiGzDecoder::new(reader);
        read_idx_stream(
            &mut decoder,
            expected_magic,
            SizeBound::AtMost(size),
            &context,
        )
    } else {
        read_idx_stream(
            &mut reader,
            expected_magic,
            SizeBound::Exact(size),
            &context,
        )
    }
}

/// Parse IDX image bytes (already decompressed). `context` names the source in errors.
pub fn parse_idx_images(bytes: &[u8], context: &str) -> Result<IdxImages> {
    let (dims, pixels) = read_idx_stream(
        &mut &bytes[..],
        IDX_IMAGES_MAGIC,
        SizeBound::Exact(bytes.len() as u64),
        context,
    )?;
    Ok(IdxImages {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels,
    })
}

/// Parse IDX label bytes (already decompressed). `context` names the source in errors.
pub fn parse_idx_labels(bytes: &[u8], context: &str) -> Result<Vec<u8>> {
    let (_dims, labels) = read_idx_stream(
        &mut &bytes[..],
        IDX_LABELS_MAGIC,
        SizeBound::Exact(bytes.len() as u64),
        context,
    )?;
    Ok(labels)
}

/// Read an IDX image file (`*-images-idx3-ubyte`, raw or gzip), streaming: the header is
/// checked first and exactly the promised data is read, so a wrong or huge file costs no
/// memory and a gzip bomb stops at what its header promises.
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] (naming the file)
/// when it is not an IDX image file, is truncated, has trailing bytes or absurd dimensions.
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<IdxImages> {
    let (dims, pixels) = read_idx_file(path.as_ref(), IDX_IMAGES_MAGIC)?;
    Ok(IdxImages {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels,
    })
}

/// Read an IDX label file (`*-labels-idx1-ubyte`, raw or gzip), streaming like
/// [`read_idx_images`].
///
/// Errors: [`Error::Io`] when the file cannot be read, [`Error::Format`] (naming the file)
/// when it is not an IDX label file, is truncated or has trailing bytes.
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    Ok(read_idx_file(path.as_ref(), IDX_LABELS_MAGIC)?.1)
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
