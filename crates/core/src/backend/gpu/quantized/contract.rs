//! `GpuStorage`'s part of the backend contract for this family: `QuantizedMatrices` — the
//! products (the vector kernel for up to `vector::ROWS` rows, the tiled kernel beyond) and the
//! row reads, each one dispatch over the matrix's words in place.

use crate::backend::checks::{check_quantized_input, check_quantized_matrix, check_view};
use crate::backend::contract::QuantizedMatrices;
use crate::backend::gpu::quantized::kernel::QuantizedKernel;
use crate::backend::gpu::quantized::{tiled, vector, DequantizeParams, ProductParams};
use crate::backend::gpu::runtime::context::INDEX_SLOT_WORD;
use crate::backend::gpu::runtime::operands::{same_device, unsupported};
use crate::backend::gpu::runtime::params::{word, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::quantization::QuantFormat;

// The context writes the flag slot at word `INDEX_SLOT_WORD` of an index kernel's params.
const _: () = assert!(std::mem::offset_of!(DequantizeParams, flag_slot) == 4 * INDEX_SLOT_WORD);

impl QuantizedMatrices for GpuStorage {
    fn quantized_matmul(
        &self,
        layout: &Layout,
        weights: &GpuStorage,
        format: QuantFormat,
        shape: [usize; 2],
    ) -> Result<GpuStorage> {
        const OP: &str = "quantized_matmul";
        same_device(OP, self, weights)?;
        let row_bytes = check_quantized_matrix(OP, (weights.len, weights.dtype), format, shape)?;
        let [n, k] = shape;
        let m = check_quantized_input(OP, layout, (self.len, self.dtype), k)?;
        let out = GpuStorage::allocate(&self.device, OP, m * n, self.dtype)?;
        if m * n == 0 {
            return Ok(out);
        }
        let header = ProductParams {
            m: word(m)?,
            n: word(n)?,
            k: word(k)?,
            x_offset: word(layout.offset)?,
            x_row_stride: word(if m > 1 { layout.strides[0] } else { k })?,
            row_bytes: word(row_bytes)?,
        };
        // Byte addresses of the matrix are u32.
        word(weights.len * 4)?;
        let context = self.device.context();
        let (key, grid) = if m <= vector::ROWS {
            let workgroups = word(n.div_ceil(vector::COLUMNS))?;
            (
                QuantizedKernel::Vector {
                    format,
                    dtype: self.dtype,
                },
                context.grid(workgroups),
            )
        } else {
            let max = context.limits.max_compute_workgroups_per_dimension as usize;
            let (tiles_n, tiles_m) = (n.div_ceil(tiled::TILE), m.div_ceil(tiled::TILE));
            if tiles_n > max || tiles_m > max {
                return Err(Error::invalid(
                    OP,
                    format!("a {m}x{n} output needs more than {max} tiles per dimension"),
                ));
            }
            (
                QuantizedKernel::Tiled {
                    format,
                    dtype: self.dtype,
                },
                (tiles_n as u32, tiles_m as u32, 1),
            )
        };
        context.dispatch(
            &key,
            Params::with_header(&header, 0).words(),
            &[weights.raw()?, self.raw()?, out.raw()?],
            grid,
        )?;
        Ok(out)
    }

    fn dequantize_rows(
        &self,
        format: QuantFormat,
        shape: [usize; 2],
        rows: Option<(&GpuStorage, &Layout)>,
    ) -> Result<GpuStorage> {
        const OP: &str = "dequantize_rows";
        let row_bytes = check_quantized_matrix(OP, (self.len, self.dtype), format, shape)?;
        let [n, k] = shape;
        let (count, index_offset, index_stride) = match rows {
            None => (n, 0, 0),
            Some((indices, layout)) => {
                same_device(OP, self, indices)?;
                check_view(OP, layout, indices.len)?;
                if !matches!(indices.dtype, DType::I32 | DType::U32) {
                    return Err(unsupported(OP, indices.dtype, &self.device));
                }
                if layout.is_contiguous() {
                    (layout.numel(), layout.offset, 1)
                } else if layout.rank() == 1 {
                    (layout.shape[0], layout.offset, layout.strides[0])
                } else {
                    return Err(Error::invalid(
                        OP,
                        format!("row indices must be contiguous or 1-D, got {layout:?}"),
                    ));
                }
            }
        };
        let out = GpuStorage::allocate(&self.device, OP, count * k, DType::F32)?;
        if count * k == 0 {
            return Ok(out);
        }
        word(self.len * 4)?;
        let header = DequantizeParams {
            rows: word(count)?,
            k: word(k)?,
            row_bytes: word(row_bytes)?,
            matrix_rows: word(n)?,
            index_offset: word(index_offset)?,
            index_stride: word(index_stride)?,
            flag_slot: 0, // filled in by the context
        };
        let key = QuantizedKernel::Dequantize {
            format,
            index: rows.map(|(indices, _)| indices.dtype),
        };
        let params = Params::with_header(&header, 0);
        let units = count * (k / 8);
        match rows {
            None => GpuStorage::launch(
                &self.device,
                &key,
                &params,
                &[self.raw()?, out.raw()?],
                units,
            )?,
            Some((indices, _)) => {
                let context = self.device.context();
                GpuStorage::launch_checked(
                    &self.device,
                    &key,
                    &params,
                    &[
                        self.raw()?,
                        indices.raw()?,
                        out.raw()?,
                        context.index_flags(),
                    ],
                    units,
                    Some(OP),
                )?
            }
        }
        Ok(out)
    }
}
