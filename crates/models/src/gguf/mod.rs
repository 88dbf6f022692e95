//! GGUF files (llama.cpp's model format): the header, the metadata key/value pairs, the tensor
//! table and the tensor data, read and checked against the file's size before anything is
//! allocated, and the tensors dequantized to f32 on the CPU.
//!
//! - `cursor.rs`: [`ByteCursor`]: bounded little-endian reads that fail instead of panicking.
//! - `metadata.rs`: [`MetadataValue`]: every GGUF value type, arrays included.
//! - `tensor_info.rs`: [`GgmlType`] (block sizes and byte sizes) and [`TensorInfo`].
//! - `file.rs`: [`GgufFile`]: parsing a whole file, looking tensors up, reading them as f32.
//! - `dequantize.rs`: the dispatch over types, and the float types (F32, F16, BF16).
//! - `legacy_quants.rs`: the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
//! - `k_quants.rs`: the 256-element super-block types Q4_K, Q5_K, Q6_K.

mod cursor;
mod dequantize;
mod file;
mod k_quants;
mod legacy_quants;
mod metadata;
mod tensor_info;

pub use cursor::ByteCursor;
pub use dequantize::dequantize;
pub use file::{GgufFile, DEFAULT_ALIGNMENT, MAX_GGUF_BYTES};
pub use metadata::{MetadataValue, MetadataValueType};
pub use tensor_info::{GgmlType, TensorInfo};
