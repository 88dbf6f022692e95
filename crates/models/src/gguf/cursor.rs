//! [`ByteCursor`]: little-endian reads over a byte slice, each checked against the bytes left,
//! so a truncated or corrupt file is an error naming what was being read, never a panic.

use anygrad_core::{Error, Result};

/// A read position in a byte slice; every read checks the bytes left first.
pub struct ByteCursor<'a> {
    bytes: &'a [u8],
    position: usize,
    context: &'a str,
}

impl<'a> ByteCursor<'a> {
    /// A cursor at the start of `bytes`; `context` (the file name) prefixes its errors.
    pub fn new(bytes: &'a [u8], context: &'a str) -> ByteCursor<'a> {
        ByteCursor {
            bytes,
            position: 0,
            context,
        }
    }

    /// The offset of the next read.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Bytes left after the position.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// An error about the file at the current position.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::format(
            self.context,
            format!("at byte {}: {}", self.position, message.into()),
        )
    }

    /// The next `count` bytes; `what` names them in the error of a truncated file.
    pub fn take(&mut self, count: usize, what: &str) -> Result<&'a [u8]> {
        if count > self.remaining() {
            return Err(self.error(format!(
                "truncated file: {what} needs {count} bytes, {} left",
                self.remaining()
            )));
        }
        let slice = &self.bytes[self.position..self.position + count];
        self.position += count;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    /// A `u8`.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `f32`.
    pub fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `f64`.
    pub fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// A count stored as `u64`, refused when it could not fit in the bytes left even at
    /// `min_bytes_each` bytes per item (so no absurd count is ever allocated).
    pub fn count(&mut self, min_bytes_each: usize, what: &str) -> Result<usize> {
        let start = self.position;
        let count = self.u64(what)?;
        let most = (self.remaining() / min_bytes_each.max(1)) as u64;
        if count > most {
            self.position = start;
            return Err(self.error(format!(
                "{what} is {count}, more than the {} bytes left can hold",
                self.remaining()
            )));
        }
        Ok(count as usize)
    }

    /// A GGUF string: a `u64` length and that many bytes of UTF-8.
    pub fn string(&mut self, what: &str) -> Result<String> {
        let length = self.count(1, &format!("{what} (string length)"))?;
        let start = self.position;
        let bytes = self.take(length, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::format(
                self.context,
                format!("at byte {start}: {what} is not valid UTF-8"),
            )
        })
    }
}
