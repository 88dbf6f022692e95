//! GGUF files (llama.cpp's model format): the header, the metadata key/value pairs, the tensor
//! table and the tensor data, read and checked against the file's size before anything is
//! allocated, and the tensors dequantized to f32 on the CPU.
//!
//! - `cursor.rs`: [`ByteCursor`]: bounded little-endian reads that fail instead of panicking.
//! - `metadata.rs`: [`MetadataValue`]: every GGUF value type, arrays included.
//! - `tensor_info.rs`: [`GgmlType`] (block sizes and byte sizes) and [`TensorInfo`].
//! - `file.rs`: [`GgufFile`]: parsing a whole file, looking tensors up, reading them as f32.
//! - `dequantize.rs`: the dispatch over types, and the float types (F32, F16, BF16); the
//!   block types are the core's (`anygrad_core::quantization`).

mod cursor;
mod dequantize;
mod file;
mod metadata;
mod tensor_info;

pub use cursor::ByteCursor;
pub use dequantize::dequantize;
pub use file::{GgufFile, DEFAULT_ALIGNMENT, MAX_GGUF_BYTES};
pub use metadata::{MetadataValue, MetadataValueType};
pub use tensor_info::{GgmlType, TensorInfo};
