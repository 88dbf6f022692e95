//! [`GgufFile`]: a whole GGUF file (version 2 or 3, little-endian) parsed and checked: the
//! magic, the version, the metadata key/value pairs, the tensor table, the alignment
//! (`general.alignment`, default 32) and the data section. Every count is checked against
//! the bytes left before anything is allocated for it, every tensor's shape against
//! overflow and its data against the end of the file, so a truncated or corrupt file is an
//! error naming the file and what is wrong with it.

use std::collections::BTreeMap;
use std::path::Path;

use anygrad_core::files::read_regular_file;
use anygrad_core::{Device, Error, Result, Tensor};

use super::cursor::ByteCursor;
use super::dequantize::dequantize;
use super::metadata::{metadata_error, MetadataValue};
use super::tensor_info::{GgmlType, TensorInfo};

/// The largest GGUF file read: 64 GiB.
pub const MAX_GGUF_BYTES: u64 = 64 << 30;
/// The alignment of the data section and of every tensor when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// `"GGUF"` as the first four bytes.
const MAGIC: &[u8; 4] = b"GGUF";
/// The most entries reserved ahead of reading them (more grow as they are read).
pub(crate) const RESERVE_LIMIT: usize = 4096;
/// GGML's largest tensor rank.
const MAX_DIMS: usize = 4;

/// A parsed GGUF file with its bytes.
pub struct GgufFile {
    context: String,
    /// The format version (2 or 3).
    pub version: u32,
    /// The metadata, in file order.
    pub metadata: Vec<(String, MetadataValue)>,
    metadata_index: BTreeMap<String, usize>,
    /// The tensor table, in file order.
    pub tensors: Vec<TensorInfo>,
    tensor_index: BTreeMap<String, usize>,
    /// The alignment of the data section and tensors.
    pub alignment: usize,
    /// The offset of the data section from the start of the file.
    pub data_offset: usize,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("context", &self.context)
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .field("alignment", &self.alignment)
            .field("data_offset", &self.data_offset)
            .finish()
    }
}

impl GgufFile {
    /// Read and parse the GGUF file at `path` (a regular file of at most [`MAX_GGUF_BYTES`]).
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref();
        let bytes = read_regular_file(path, MAX_GGUF_BYTES, "GGUF file")?;
        GgufFile::parse(bytes, &path.display().to_string())
    }

    /// Parse a GGUF file's bytes; `context` (its name) prefixes every error.
    pub fn parse(bytes: Vec<u8>, context: &str) -> Result<GgufFile> {
        let mut cursor = ByteCursor::new(&bytes, context);
        let magic = cursor.take(4, "the magic")?;
        if magic != MAGIC {
            return Err(Error::format(
                context,
                format!("not a GGUF file: the magic is {magic:02x?}, expected \"GGUF\""),
            ));
        }
        let version = cursor.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(Error::format(
                context,
                format!("GGUF version {version} is not supported (2 and 3 are; a big-endian file reads as a huge version)"),
            ));
        }
        // A tensor entry takes at least 24 bytes (name length, rank, type, offset); a
        // metadata pair at least 13 (key length, type, one byte).
        let tensor_count = cursor.count(24, "the tensor count")?;
        let metadata_count = cursor.count(13, "the metadata count")?;

        // Reserve little up front: the counts were checked against the bytes left, but one
        // byte of file can become tens of bytes of entries.
        let mut metadata = Vec::with_capacity(metadata_count.min(RESERVE_LIMIT));
        let mut metadata_index = BTreeMap::new();
        for index in 0..metadata_count {
            let key = cursor.string(&format!("metadata key {index}"))?;
            let tag = cursor.u32(&format!("metadata `{key}` (value type)"))?;
            let value = MetadataValue::read(&mut cursor, tag, &key)?;
            if metadata_index.insert(key.clone(), index).is_some() {
                return Err(cursor.error(format!("metadata key `{key}` appears twice")));
            }
            metadata.push((key, value));
        }

        let alignment = match metadata_index.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(&index) => {
                let value = &metadata[index].1;
                match value.as_u64() {
                    Some(a) if a > 0 && a.is_power_of_two() && a <= 1 << 20 => a as usize,
                    _ => {
                        return Err(Error::format(
                            context,
                            format!(
                            "general.alignment must be a power of two up to 1 MiB, got {value:?}"
                        ),
                        ))
                    }
                }
            }
        };

        let mut tensors = Vec::with_capacity(tensor_count.min(RESERVE_LIMIT));
        let mut tensor_index = BTreeMap::new();
        for index in 0..tensor_count {
            let name = cursor.string(&format!("tensor {index}'s name"))?;
            let rank = cursor.u32(&format!("tensor `{name}`'s rank"))? as usize;
            if rank == 0 || rank > MAX_DIMS {
                return Err(cursor.error(format!(
                    "tensor `{name}` has rank {rank} (GGML tensors have 1 to {MAX_DIMS} dims)"
                )));
            }
            let mut dims = Vec::with_capacity(rank);
            let mut elements: usize = 1;
            for _ in 0..rank {
                let dim = cursor.u64(&format!("tensor `{name}`'s dims"))?;
                let dim = usize::try_from(dim)
                    .ok()
                    .filter(|&d| d <= bytes.len().max(1) * 8);
                let Some(dim) = dim else {
                    return Err(cursor.error(format!(
                        "tensor `{name}` has a dim larger than the file could hold"
                    )));
                };
                elements = elements.checked_mul(dim).ok_or_else(|| {
                    cursor.error(format!("tensor `{name}`: the element count overflows"))
                })?;
                dims.push(dim);
            }
            let ggml_type = GgmlType::from_id(cursor.u32(&format!("tensor `{name}`'s type"))?);
            let offset = cursor.u64(&format!("tensor `{name}`'s offset"))?;
            if offset % alignment as u64 != 0 {
                return Err(cursor.error(format!(
                    "tensor `{name}`'s offset {offset} is not a multiple of the alignment {alignment}"
                )));
            }
            if tensor_index.insert(name.clone(), index).is_some() {
                return Err(cursor.error(format!("tensor `{name}` appears twice")));
            }
            // Known types must have whole blocks (checked now; unknown types when read).
            if ggml_type.block_layout().is_some() {
                ggml_type
                    .byte_size(elements, &name)
                    .map_err(|e| Error::format(context, e.to_string()))?;
            }
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
            });
        }

        let data_offset = cursor.position().div_ceil(alignment) * alignment;
        let file = GgufFile {
            context: context.to_string(),
            version,
            metadata,
            metadata_index,
            tensors,
            tensor_index,
            alignment,
            data_offset,
            bytes,
        };
        for info in &file.tensors {
            if info.ggml_type.block_layout().is_some() {
                file.data_range(info)?;
            }
        }
        Ok(file)
    }

    /// The name of the file (what errors start with).
    pub fn context(&self) -> &str {
        &self.context
    }

    /// The metadata value of `key`.
    pub fn metadata_value(&self, key: &str) -> Option<&MetadataValue> {
        self.metadata_index
            .get(key)
            .map(|&index| &self.metadata[index].1)
    }

    /// The metadata value of `key` as an unsigned integer; missing or mistyped is an error.
    pub fn metadata_u64(&self, key: &str) -> Result<u64> {
        self.metadata_value(key)
            .and_then(MetadataValue::as_u64)
            .ok_or_else(|| metadata_error(&self.context, key, "a non-negative integer"))
    }

    /// The metadata value of `key` as a float (floats and integers); missing or mistyped is an
    /// error.
    pub fn metadata_f64(&self, key: &str) -> Result<f64> {
        self.metadata_value(key)
            .and_then(MetadataValue::as_f64)
            .ok_or_else(|| metadata_error(&self.context, key, "a number"))
    }

    /// The metadata value of `key` as a string; missing or mistyped is an error.
    pub fn metadata_str(&self, key: &str) -> Result<&str> {
        self.metadata_value(key)
            .and_then(MetadataValue::as_str)
            .ok_or_else(|| metadata_error(&self.context, key, "a string"))
    }

    /// The tensor table entry of `name`.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index
            .get(name)
            .map(|&index| &self.tensors[index])
    }

    /// The byte range of a tensor's data in the file, checked against its end.
    fn data_range(&self, info: &TensorInfo) -> Result<std::ops::Range<usize>> {
        let size = info
            .ggml_type
            .byte_size(info.element_count(), &info.name)
            .map_err(|e| Error::format(&self.context, e.to_string()))?;
        let start = usize::try_from(info.offset)
            .ok()
            .and_then(|offset| offset.checked_add(self.data_offset));
        let range = start.and_then(|start| start.checked_add(size).map(|end| start..end));
        match range {
            Some(range) if range.end <= self.bytes.len() => Ok(range),
            _ => Err(Error::format(
                &self.context,
                format!(
                    "tensor `{}` ({} bytes at data offset {}) reaches past the end of the file ({} bytes, data section at {})",
                    info.name,
                    size,
                    info.offset,
                    self.bytes.len(),
                    self.data_offset
                ),
            )),
        }
    }

    /// The stored bytes of tensor `name`.
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let info = self.require(name)?;
        let range = self.data_range(info)?;
        Ok(&self.bytes[range])
    }

    fn require(&self, name: &str) -> Result<&TensorInfo> {
        self.tensor_info(name)
            .ok_or_else(|| Error::format(&self.context, format!("the file has no tensor `{name}`")))
    }

    /// Tensor `name` dequantized to f32, with its row-major shape (GGML's dims reversed).
    pub fn tensor_f32(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>)> {
        let info = self.require(name)?;
        let bytes = self.tensor_bytes(name)?;
        let values = dequantize(info.ggml_type, bytes, info.element_count(), name)
            .map_err(|e| Error::format(&self.context, e.to_string()))?;
        Ok((values, info.shape()))
    }

    /// Tensor `name` dequantized to an f32 [`Tensor`] on `device`.
    pub fn tensor(&self, name: &str, device: &Device) -> Result<Tensor> {
        let (values, shape) = self.tensor_f32(name)?;
        Tensor::from_vec(values, &shape, device)
    }

    /// Tensor `name` in the dtype it is stored in, on `device`: an F16 tensor is F16 and a
    /// BF16 tensor BF16 (their bits unchanged), an F32 tensor F32; the block-quantized types,
    /// which no tensor dtype holds, are dequantized to F32 as by [`GgufFile::tensor`].
    pub fn tensor_stored(&self, name: &str, device: &Device) -> Result<Tensor> {
        let info = self.require(name)?;
        let shape = info.shape();
        let halves = |bytes: &[u8]| -> Vec<u16> {
            bytes
                .chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect()
        };
        match info.ggml_type {
            GgmlType::F16 => {
                let bits = halves(self.tensor_bytes(name)?);
                let values: Vec<half::f16> = bits.into_iter().map(half::f16::from_bits).collect();
                check_count(&self.context, name, values.len(), info.element_count())?;
                Tensor::from_vec(values, &shape, device)
            }
            GgmlType::BF16 => {
                let bits = halves(self.tensor_bytes(name)?);
                let values: Vec<half::bf16> = bits.into_iter().map(half::bf16::from_bits).collect();
                check_count(&self.context, name, values.len(), info.element_count())?;
                Tensor::from_vec(values, &shape, device)
            }
            _ => self.tensor(name, device),
        }
    }
}

/// `Error::Format` unless tensor `name` holds `expected` values (`found` were read).
fn check_count(context: &str, name: &str, found: usize, expected: usize) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        Err(Error::format(
            context,
            format!("tensor `{name}`: {found} values stored, {expected} expected"),
        ))
    }
}
