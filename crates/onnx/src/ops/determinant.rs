//! Det (opset 11+): the determinants of the square matrices in the last two dims of `X`
//! (`[*, M, M]` to `[*]`), by Gaussian elimination with partial pivoting composed from tensor
//! ops. Each step picks, per matrix, the row with the largest magnitude in the first column
//! (`argmax`), swaps it to the top (`gather`; a swap flips the sign), multiplies the
//! determinant by the pivot and continues on the Schur complement of the pivot. A zero pivot
//! (a zero column) makes the determinant zero without dividing by it.

use anygrad_core::{DType, Tensor};

use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The determinant operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "Det",
    min_opset: 11,
    max_opset: i64::MAX,
    run: determinant,
}];

/// One elimination step on `matrices` `[B, m, m]`: the pivots `[B]` times the swap signs, and
/// the `[B, m - 1, m - 1]` Schur complements.
fn eliminate(matrices: &Tensor) -> anygrad_core::Result<(Tensor, Tensor)> {
    let (batch, size) = (matrices.shape()[0], matrices.shape()[1]);
    let device = matrices.device();
    let dtype = matrices.dtype();
    // The pivot row of each matrix, `[B, 1]`.
    let pivot_rows = matrices
        .narrow(2, 0, 1)?
        .abs()?
        .argmax(1, false)?
        .to_dtype(DType::I32)?;
    let rows = Tensor::from_vec((0..size as i32).collect::<Vec<_>>(), &[1, size], device)?;
    let top = Tensor::zeros(&[], DType::I32, device)?;
    // Rows 0 and the pivot row swap places; the others stay.
    let order = Tensor::where_(
        &rows.eq(&top)?,
        &pivot_rows,
        &Tensor::where_(&rows.eq(&pivot_rows)?, &top, &rows)?,
    )?;
    let order = order
        .unsqueeze(2)?
        .expand(&[batch, size, size])?
        .contiguous()?;
    let swapped = matrices.gather(1, &order)?;
    let pivots = swapped.narrow(1, 0, 1)?.narrow(2, 0, 1)?;
    let one = Tensor::full(&[], 1.0, dtype, device)?;
    let minus_one = Tensor::full(&[], -1.0, dtype, device)?;
    let signs = Tensor::where_(&pivot_rows.eq(&top)?, &one, &minus_one)?;
    let factor = pivots.reshape([batch])?.mul(&signs.reshape([batch])?)?;
    let safe = Tensor::where_(&pivots.eq_scalar(0.0)?, &one, &pivots)?;
    let below = swapped
        .narrow(1, 1, size - 1)?
        .narrow(2, 0, 1)?
        .div(&safe)?;
    let right = swapped.narrow(1, 0, 1)?.narrow(2, 1, size - 1)?;
    let rest = swapped.narrow(1, 1, size - 1)?.narrow(2, 1, size - 1)?;
    Ok((factor, rest.sub(&below.mul(&right)?)?))
}

/// Det: `[*, M, M]` to `[*]`.
fn determinant(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.tensor(0)?;
    let shape = input.shape().to_vec();
    let rank = shape.len();
    if rank < 2 || shape[rank - 1] != shape[rank - 2] {
        return Err(ctx.error(format!(
            "X must hold square matrices in its last two dims, got shape {shape:?}"
        )));
    }
    if !matches!(input.dtype(), DType::F32 | DType::F16 | DType::F64) {
        return Err(ctx.error(format!("X must be a float tensor, got {:?}", input.dtype())));
    }
    let size = shape[rank - 1];
    let batch_shape = shape[..rank - 2].to_vec();
    let batch: usize = batch_shape.iter().product();
    let dtype = input.dtype();
    let work = if dtype == DType::F16 {
        DType::F32
    } else {
        dtype
    };
    let result = ctx.core((|| {
        let mut matrices = input.to_dtype(work)?.reshape([batch, size, size])?;
        let mut result = Tensor::full(&[batch], 1.0, work, input.device())?;
        for _ in 0..size {
            let (factor, rest) = eliminate(&matrices)?;
            result = result.mul(&factor)?;
            matrices = rest;
        }
        result.reshape(batch_shape.clone())?.to_dtype(dtype)
    })())?;
    single(result)
}
