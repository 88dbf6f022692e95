//! [`WeightsHeader`]: the tensor names, dtypes and shapes of a safetensors file, read from its
//! header alone (the 8-byte header length and the JSON that follows it), without reading the
//! tensor data. A model's configuration is checked against it before anything is allocated
//! (see `bert/consistency.rs`).
//!
//! The header is checked as far as it can be without the data: its length lies within the
//! file (and under safetensors' own 100 MB limit), every entry names a known dtype, and the
//! bytes its shape needs are exactly the byte range it claims, inside the file's data. So the
//! shapes of a header that passes are bounded by the size of the file.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use anygrad_core::files::regular_file_metadata;
use anygrad_core::{Error, Result};
use serde::Deserialize;

/// The largest header safetensors itself accepts (`safetensors::tensor::MAX_HEADER_SIZE`).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// One tensor's entry in a safetensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderEntry {
    /// The safetensors dtype name (`F32`, `BF16`, `I64`, ...).
    pub dtype: String,
    /// The tensor's shape.
    pub shape: Vec<usize>,
}

/// The tensors a safetensors file declares, by name, read without their data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WeightsHeader {
    /// Every tensor of the file (the `__metadata__` entry excluded).
    pub tensors: BTreeMap<String, HeaderEntry>,
}

#[derive(Deserialize)]
struct RawEntry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: (u64, u64),
}

/// Bytes of one element of a safetensors dtype, or `None` for a name safetensors does not
/// define.
fn element_bytes(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" | "C64" => 8,
        _ => return None,
    })
}

impl WeightsHeader {
    /// Read the header of the safetensors file `path`, which must be a regular file of at most
    /// `max_bytes` bytes; `what` names the file in errors ("model weights").
    pub fn read(path: &Path, max_bytes: u64, what: &str) -> Result<WeightsHeader> {
        let metadata = regular_file_metadata(path, max_bytes, what)?;
        let context = format!("{what} {}", path.display());
        let invalid = |message: String| {
            Error::format(
                context.clone(),
                format!("not a valid safetensors file: {message}"),
            )
        };
        let file = std::fs::File::open(path)
            .map_err(|error| Error::io(format!("reading {context}"), error))?;
        // The path may have been replaced by a pipe between the check and the open.
        let opened = file
            .metadata()
            .map_err(|error| Error::io(format!("reading {context}"), error))?;
        if !opened.is_file() {
            return Err(Error::format(
                context,
                "not a regular file (it changed while being opened)",
            ));
        }
        let file_bytes = metadata.len();
        if file_bytes < 8 {
            return Err(invalid(format!(
                "{file_bytes} bytes is too short for the 8-byte header length"
            )));
        }
        let mut reader = file.take(file_bytes);
        let mut length = [0u8; 8];
        reader
            .read_exact(&mut length)
            .map_err(|error| Error::io(format!("reading {context}"), error))?;
        let header_bytes = u64::from_le_bytes(length);
        if header_bytes > MAX_HEADER_BYTES || header_bytes > file_bytes - 8 {
            return Err(invalid(format!(
                "the header claims {header_bytes} bytes, but the file has {} after the length \
                 (and at most {MAX_HEADER_BYTES} are allowed)",
                file_bytes - 8
            )));
        }
        let mut text = Vec::with_capacity(header_bytes as usize);
        reader
            .by_ref()
            .take(header_bytes)
            .read_to_end(&mut text)
            .map_err(|error| Error::io(format!("reading {context}"), error))?;
        if text.len() as u64 != header_bytes {
            return Err(invalid(format!(
                "the header is cut short ({} of {header_bytes} bytes)",
                text.len()
            )));
        }
        let raw: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&text)
            .map_err(|error| invalid(format!("the header is not a JSON object: {error}")))?;
        let data_bytes = file_bytes - 8 - header_bytes;
        let mut tensors = BTreeMap::new();
        for (name, value) in raw {
            if name == "__metadata__" {
                continue;
            }
            let entry: RawEntry = serde_json::from_value(value)
                .map_err(|error| invalid(format!("tensor `{name}`: {error}")))?;
            let Some(size) = element_bytes(&entry.dtype) else {
                return Err(invalid(format!(
                    "tensor `{name}`: unknown dtype `{}`",
                    entry.dtype
                )));
            };
            let needed = entry
                .shape
                .iter()
                .try_fold(size, |bytes, &dim| bytes.checked_mul(dim as u64));
            let (begin, end) = entry.data_offsets;
            if end < begin || end > data_bytes || needed != Some(end - begin) {
                return Err(invalid(format!(
                    "tensor `{name}`: shape {:?} of {} does not fit its byte range {begin}..{end} \
                     (the file holds {data_bytes} bytes of data)",
                    entry.shape, entry.dtype
                )));
            }
            tensors.insert(
                name,
                HeaderEntry {
                    dtype: entry.dtype,
                    shape: entry.shape,
                },
            );
        }
        Ok(WeightsHeader { tensors })
    }

    /// The shape of tensor `name`, if the file has it.
    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.tensors.get(name).map(|entry| entry.shape.as_slice())
    }
}
