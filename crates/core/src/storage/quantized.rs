//! `Storage`'s dispatch of the block-quantized matrix primitives: products with a quantized
//! matrix and reads of its rows (the rules are on the `QuantizedMatrices` trait in
//! `backend/contract/`; `storage.rs` holds `dispatch` and `run!`).

use super::{dispatch, Call, Storage};
use crate::backend::contract::QuantizedMatrices;
use crate::error::Result;
use crate::layout::Layout;
use crate::quantization::QuantFormat;

impl Storage {
    /// `x · Wᵀ` for a block-quantized `W` of `shape` `[n, k]` held in `weights`
    /// (`QuantizedMatrices::quantized_matmul`).
    pub fn quantized_matmul(
        &self,
        layout: &Layout,
        weights: &Storage,
        format: QuantFormat,
        shape: [usize; 2],
    ) -> Result<Storage> {
        let whole = Layout::contiguous(&[weights.len()]);
        let call = Call::new("quantized_matmul", [(self, layout), (weights, &whole)]);
        run!(call, |x, w| QuantizedMatrices::quantized_matmul(
            x, layout, w, format, shape
        ))
    }

    /// F32 rows of the block-quantized matrix of `shape` in this storage: those named by
    /// `rows`, or all of them (`QuantizedMatrices::dequantize_rows`).
    pub fn dequantize_rows(
        &self,
        format: QuantFormat,
        shape: [usize; 2],
        rows: Option<(&Storage, &Layout)>,
    ) -> Result<Storage> {
        const OP: &str = "dequantize_rows";
        let whole = Layout::contiguous(&[self.len()]);
        match rows {
            None => {
                let call = Call::new(OP, [(self, &whole)]);
                run!(call, |w| QuantizedMatrices::dequantize_rows(
                    w, format, shape, None
                ))
            }
            Some((ids, ids_layout)) => {
                let call = Call::new(OP, [(self, &whole), (ids, ids_layout)]).indices(1);
                run!(call, |w, i| QuantizedMatrices::dequantize_rows(
                    w,
                    format,
                    shape,
                    Some((i, ids_layout))
                ))
            }
        }
    }
}
