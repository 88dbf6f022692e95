//! The quantized family's key: [`QuantizedKernel`], per block format, input dtype and variant.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::dtype::DType;
use crate::quantization::QuantFormat;

/// The identity of one kernel over a block-quantized matrix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum QuantizedKernel {
    /// A few rows of F32 or F16 `x` times the matrix's transpose, 32 invocations splitting k
    /// for each output (`quantized/vector.rs`): a language model's decode step.
    Vector { format: QuantFormat, dtype: DType },
    /// Any rows of `x` times the matrix's transpose in 64 x 64 tiles, the matrix decoded into
    /// workgroup memory (`quantized/tiled.rs`): a prompt.
    Tiled { format: QuantFormat, dtype: DType },
    /// Rows of the matrix to F32 (`quantized/dequantize.rs`), every row or those named by an
    /// `index` (I32 or U32) binding: an embedding lookup, or a gradient's product.
    Dequantize {
        format: QuantFormat,
        index: Option<DType>,
    },
}

/// The input dtypes of the products.
const INPUT_DTYPES: [DType; 2] = [DType::F32, DType::F16];

impl Kernel for QuantizedKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            QuantizedKernel::Vector { format, dtype } => {
                enable_f16_if(dtype == DType::F16, super::vector::source(format, dtype))
            }
            QuantizedKernel::Tiled { format, dtype } => {
                enable_f16_if(dtype == DType::F16, super::tiled::source(format, dtype))
            }
            QuantizedKernel::Dequantize { format, index } => {
                super::dequantize::source(format, index)
            }
        }
    }

    /// wgpu's bounds checks stay on: the readers take words at computed byte addresses.
    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        !matches!(self, QuantizedKernel::Dequantize { .. })
    }

    fn catalogue() -> Vec<QuantizedKernel> {
        let mut keys = Vec::new();
        for format in QuantFormat::ALL {
            for dtype in INPUT_DTYPES {
                keys.push(QuantizedKernel::Vector { format, dtype });
                keys.push(QuantizedKernel::Tiled { format, dtype });
            }
            for index in [None, Some(DType::I32), Some(DType::U32)] {
                keys.push(QuantizedKernel::Dequantize { format, index });
            }
        }
        keys
    }
}
