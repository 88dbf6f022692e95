//! `CpuStorage`'s `QuantizedMatrices` (`backend/contract/quantized_matrices.rs`): products with
//! a block-quantized matrix and reads of its rows, decoding one weight row at a time into a
//! small buffer (the whole matrix is never widened), rows spread over threads; the reference
//! of the GPU kernels (`backend/gpu/quantized/`).

use half::f16;
use rayon::prelude::*;

use super::alloc::{filled, reserved};
use super::{CpuStorage, HostBuffer};
use crate::backend::checks::{check_quantized_input, check_quantized_matrix, check_view};
use crate::backend::contract::QuantizedMatrices;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::quantization::{decode_into, decode_whole_blocks, QuantFormat};

/// Weight rows one task decodes and multiplies.
const ROWS_PER_TASK: usize = 16;

/// The bytes of a U32 storage (checked by `check_quantized_matrix`).
fn matrix_bytes<'a>(weights: &'a CpuStorage, op: &'static str) -> Result<&'a [u8]> {
    match weights {
        CpuStorage::U32(words) => Ok(bytemuck::cast_slice(words)),
        other => Err(Error::invalid(
            op,
            format!(
                "a quantized matrix is held in U32 words, got {}",
                other.dtype()
            ),
        )),
    }
}

/// `Σ a[i]·b[i]` in f32 over eight running sums (whole rows of blocks: a multiple of 32).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a
        .chunks_exact(8)
        .remainder()
        .iter()
        .zip(b.chunks_exact(8).remainder())
        .map(|(x, y)| x * y)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

/// The `[m, k]` rows of the view `layout` of an F32 or F16 storage, as dense f32.
fn input_rows(x: &CpuStorage, layout: &Layout, m: usize, k: usize) -> Result<Vec<f32>> {
    let mut rows = reserved(m * k)?;
    let row_stride = layout.strides[0];
    for r in 0..m {
        let start = layout.offset + r * row_stride;
        match x {
            CpuStorage::F32(v) => rows.extend_from_slice(&v[start..start + k]),
            CpuStorage::F16(v) => rows.extend(v[start..start + k].iter().map(|h| h.to_f32())),
            _ => {}
        }
    }
    Ok(rows)
}

impl QuantizedMatrices for CpuStorage {
    fn quantized_matmul(
        &self,
        layout: &Layout,
        weights: &CpuStorage,
        format: QuantFormat,
        shape: [usize; 2],
    ) -> Result<CpuStorage> {
        const OP: &str = "quantized_matmul";
        let row_bytes =
            check_quantized_matrix(OP, (weights.len(), weights.dtype()), format, shape)?;
        let [n, k] = shape;
        let m = check_quantized_input(OP, layout, (self.len(), self.dtype()), k)?;
        let bytes = matrix_bytes(weights, OP)?;
        // Output column j (weight row j) for every input row, then transposed to [m, n].
        let mut columns = filled(n * m, 0f32)?;
        if m > 0 && n > 0 {
            let x = input_rows(self, layout, m, k)?;
            columns
                .par_chunks_mut(m * ROWS_PER_TASK)
                .enumerate()
                .for_each(|(task, out)| {
                    let mut row = vec![0f32; k];
                    for (i, column) in out.chunks_mut(m).enumerate() {
                        let start = (task * ROWS_PER_TASK + i) * row_bytes;
                        decode_into(format, &bytes[start..start + row_bytes], &mut row);
                        for (r, value) in column.iter_mut().enumerate() {
                            *value = dot(&row, &x[r * k..(r + 1) * k]);
                        }
                    }
                });
        }
        let mut out = reserved(m * n)?;
        for r in 0..m {
            out.extend((0..n).map(|j| columns[j * m + r]));
        }
        Ok(match self.dtype() {
            DType::F16 => CpuStorage::F16(HostBuffer::from(
                out.into_iter().map(f16::from_f32).collect::<Vec<_>>(),
            )),
            _ => CpuStorage::F32(HostBuffer::from(out)),
        })
    }

    fn dequantize_rows(
        &self,
        format: QuantFormat,
        shape: [usize; 2],
        rows: Option<(&CpuStorage, &Layout)>,
    ) -> Result<CpuStorage> {
        const OP: &str = "dequantize_rows";
        let row_bytes = check_quantized_matrix(OP, (self.len(), self.dtype()), format, shape)?;
        let [n, k] = shape;
        let bytes = matrix_bytes(self, OP)?;
        let picked: Vec<usize> = match rows {
            None => (0..n).collect(),
            Some((ids, layout)) => {
                check_view(OP, layout, ids.len())?;
                if !ids.dtype().is_index() {
                    return Err(Error::invalid(
                        OP,
                        format!("row indices must be integers, got {}", ids.dtype()),
                    ));
                }
                ids.to_f64_vec(layout)?
                    .into_iter()
                    .map(|id| {
                        if id < 0.0 || id >= n as f64 {
                            Err(Error::invalid(
                                OP,
                                format!("row {id} is out of range for a matrix of {n} rows"),
                            ))
                        } else {
                            Ok(id as usize)
                        }
                    })
                    .collect::<Result<_>>()?
            }
        };
        let mut out = reserved(picked.len() * k)?;
        for row in picked {
            let start = row * row_bytes;
            decode_whole_blocks(format, &bytes[start..start + row_bytes], &mut out);
        }
        Ok(CpuStorage::F32(HostBuffer::from(out)))
    }
}
