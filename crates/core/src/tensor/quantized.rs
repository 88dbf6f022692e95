//! [`QuantizedMatrix`]: a matrix kept in one of GGML's block formats (`QuantFormat`: how
//! llama.cpp's GGUF files store a model's weights) on a device, read in place by the
//! `quantized_matmul` and `dequantize_rows` primitives, and [`Tensor::linear_quantized`],
//! `x · Wᵀ` with such a matrix (differentiable in `x`: the matrix is frozen). A 4-bit matrix
//! takes about a seventh of its f32 bytes, and the decode kernels read only those bytes.

use std::sync::Arc;

use super::Tensor;
use crate::autograd::CustomBackward;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::quantization::QuantFormat;

/// Rows of input above which [`Tensor::linear_quantized`] dequantizes the matrix for a dense
/// product instead of reading it in place: on an H100, a 512-token prompt through
/// SmolLM2-135M's shapes ran at 1,076–1,092 tokens/s on the in-place tiled kernel and
/// 5,398–6,029 with every weight dense.
const DENSE_PRODUCT_ABOVE: usize = 64;

/// A `[rows, columns]` matrix in a block-quantized format on a device: its bytes exactly as
/// GGML lays them out (each row whole blocks), held in a U32 tensor. Cloning shares the data.
#[derive(Clone, Debug)]
pub struct QuantizedMatrix {
    format: QuantFormat,
    shape: [usize; 2],
    /// The bytes, row after row, and one word of padding (the kernels read any four bytes).
    words: Tensor,
}

impl QuantizedMatrix {
    /// The matrix of `rows` rows of `columns` values whose blocks are `bytes` (exactly
    /// `rows × format.row_bytes(columns)` bytes), on `device`.
    pub fn from_bytes(
        format: QuantFormat,
        [rows, columns]: [usize; 2],
        bytes: &[u8],
        device: &Device,
    ) -> Result<QuantizedMatrix> {
        const OP: &str = "QuantizedMatrix::from_bytes";
        let row_bytes = format.row_bytes(columns, OP)?;
        let expected = rows.checked_mul(row_bytes);
        if expected != Some(bytes.len()) {
            return Err(Error::invalid(
                OP,
                format!(
                    "{} bytes given; a {format} matrix of [{rows}, {columns}] has {} bytes",
                    bytes.len(),
                    expected.map_or("too many".to_string(), |b| b.to_string())
                ),
            ));
        }
        let mut words = vec![0u32; bytes.len().div_ceil(4) + 1];
        bytemuck::cast_slice_mut::<u32, u8>(&mut words)[..bytes.len()].copy_from_slice(bytes);
        let count = words.len();
        Ok(QuantizedMatrix {
            format,
            shape: [rows, columns],
            words: Tensor::from_vec(words, &[count], device)?,
        })
    }

    /// The block format.
    pub fn format(&self) -> QuantFormat {
        self.format
    }

    /// `[rows, columns]`.
    pub fn shape(&self) -> [usize; 2] {
        self.shape
    }

    /// The device holding the blocks.
    pub fn device(&self) -> &Device {
        self.words.device()
    }

    /// Bytes the matrix takes on its device.
    pub fn storage_bytes(&self) -> usize {
        self.words.numel() * 4
    }

    /// The same matrix on `device` (shared when already there).
    pub fn to_device(&self, device: &Device) -> Result<QuantizedMatrix> {
        Ok(QuantizedMatrix {
            format: self.format,
            shape: self.shape,
            words: self.words.to_device(device)?,
        })
    }

    /// The whole matrix as an f32 `[rows, columns]` tensor on its device.
    pub fn dequantize(&self) -> Result<Tensor> {
        let storage = self
            .words
            .storage()
            .dequantize_rows(self.format, self.shape, None)?;
        Ok(Tensor::from_storage(storage, &self.shape, None))
    }

    /// Rows of the matrix as f32: `[..indices.shape, columns]` for integer `indices` (an
    /// embedding lookup of token ids). An index outside `[0, rows)` is an error (on a GPU at
    /// the next readback).
    pub fn select_rows(&self, indices: &Tensor) -> Result<Tensor> {
        const OP: &str = "QuantizedMatrix::select_rows";
        if !indices.dtype().is_index() {
            return Err(Error::invalid(
                OP,
                format!("indices must be integers, got {}", indices.dtype()),
            ));
        }
        self.words.same_device(OP, indices)?;
        let indices = match indices.dtype() {
            DType::I32 | DType::U32 => indices.contiguous()?,
            _ => indices.to_dtype(DType::I32)?,
        };
        let storage = {
            let ids = indices.storage();
            self.words.storage().dequantize_rows(
                self.format,
                self.shape,
                Some((&ids, indices.layout())),
            )?
        };
        let mut shape = indices.shape().to_vec();
        shape.push(self.shape[1]);
        Ok(Tensor::from_storage(storage, &shape, None))
    }
}

impl Tensor {
    /// `self · Wᵀ` for `self` `[.., k]` and a quantized `weight` `[n, k]`: `[.., n]`, what
    /// `linear(weight.dequantize(), None)` computes, reading the matrix in place (each value
    /// summed in f32) for up to 64 rows of input; beyond, the matrix is dequantized for that
    /// product alone and the dense kernels run it. F32 and F16 inputs give their own dtype (autocast's low dtype first
    /// when autocast is on); F64 runs through the dequantized matrix. The gradient reaches
    /// `self`; the matrix is frozen.
    pub fn linear_quantized(&self, weight: &QuantizedMatrix) -> Result<Tensor> {
        const OP: &str = "linear_quantized";
        let [n, k] = weight.shape;
        if self.rank() == 0 || self.shape()[self.rank() - 1] != k {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: self.shape().to_vec(),
                rhs: vec![n, k],
                reason: "the input's last dim must be the matrix's columns".into(),
            });
        }
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("the input must be floats, got {}", self.dtype()),
            ));
        }
        self.same_device(OP, &weight.words)?;
        let input = match crate::amp::autocast_dtype() {
            Some(low) if self.dtype() != low => self.to_dtype(low)?,
            _ => self.clone(),
        };
        if input.dtype() == DType::F64 {
            let dense = weight.dequantize()?.to_dtype(DType::F64)?;
            return input.matmul(&dense.t()?);
        }
        let mut out_shape = input.shape().to_vec();
        let rows = out_shape[..out_shape.len() - 1].iter().product::<usize>();
        *out_shape.last_mut().expect("rank checked above") = n;
        if rows > DENSE_PRODUCT_ABOVE {
            // A prompt's product: the matrix dequantized for this product only (freed after
            // it), then the dense kernels (tiles, tensor cores), which the many rows repay.
            let dense = weight.dequantize()?.to_dtype(input.dtype())?;
            return input.matmul(&dense.t()?);
        }
        let flat = input.contiguous()?.reshape([rows, k])?;
        let storage = flat.storage().quantized_matmul(
            flat.layout(),
            &weight.words.storage(),
            weight.format,
            weight.shape,
        )?;
        let out = Tensor::from_storage(storage, &[rows, n], None);
        let backward = Arc::new(QuantizedLinearBackward {
            weight: weight.clone(),
        });
        Tensor::with_custom_backward(&out, &[&flat], backward).reshape(out_shape)
    }
}

/// The gradient of [`Tensor::linear_quantized`] in its input: `grad · W`, through the matrix
/// dequantized for the product (freed after it).
struct QuantizedLinearBackward {
    weight: QuantizedMatrix,
}

impl CustomBackward for QuantizedLinearBackward {
    fn backward(&self, _inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let dense = self.weight.dequantize()?.to_dtype(grad_output.dtype())?;
        Ok(vec![Some(grad_output.matmul(&dense)?)])
    }
}
