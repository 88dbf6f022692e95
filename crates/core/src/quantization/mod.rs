//! Block-quantized number formats (GGML's, as llama.cpp's GGUF files store weights): the
//! formats and their host decoding, below every other layer so that the backends' kernels and
//! the tensor layer's `QuantizedMatrix` (`tensor/quantized.rs`) share one definition.
//!
//! - `format.rs`: [`QuantFormat`] (block sizes, row sizes) and [`dequantize_blocks`].
//! - `legacy_blocks.rs`: the 32-value block formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
//! - `k_blocks.rs`: the 256-value super-block formats Q4_K, Q5_K, Q6_K.

mod format;
mod k_blocks;
mod legacy_blocks;

pub(crate) use format::{decode_into, decode_whole_blocks};
pub use format::{dequantize_blocks, QuantFormat};
