//! TensorScatter (opset 24+): a key/value-cache update. Each batch entry's `update`
//! (`sequence_length` positions along `axis`) is written into `past_cache` (`max_sequence_length`
//! positions) from that entry's write index on (`write_indices`, zeros when absent), wrapping
//! around in `circular` mode. Per batch entry the host works out which position of
//! `[past, update]` (joined along the axis) each cache position takes, and the device picks them.

use anygrad_core::Tensor;

use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The tensor scatter operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "TensorScatter",
    min_opset: 24,
    max_opset: i64::MAX,
    run: tensor_scatter,
}];

/// TensorScatter: the present cache.
fn tensor_scatter(ctx: &NodeContext) -> Result<Vec<Value>> {
    let past = ctx.tensor(0)?;
    let update = ctx.tensor(1)?;
    let circular = match ctx.attr_string("mode", "linear")?.as_str() {
        "linear" => false,
        "circular" => true,
        other => return Err(ctx.error(format!("mode {other:?} is not one of linear, circular"))),
    };
    let rank = past.rank();
    let axis = ctx.axis(ctx.attr_int("axis", -2)?, rank)?;
    if axis == 0 {
        return Err(ctx.error("axis must not be the batch dim 0"));
    }
    if update.rank() != rank || (0..rank).any(|d| d != axis && update.shape()[d] != past.shape()[d])
    {
        return Err(ctx.error(format!(
            "update's shape {:?} must match past_cache's {:?} outside axis {axis}",
            update.shape(),
            past.shape()
        )));
    }
    if past.dtype() != update.dtype() {
        return Err(ctx.error("past_cache and update must have the same type"));
    }
    let batch = past.shape()[0];
    let capacity = past.shape()[axis];
    let length = update.shape()[axis];
    if length > capacity {
        return Err(ctx.error(format!(
            "the update's {length} positions exceed the cache's {capacity}"
        )));
    }
    let writes = match ctx.optional_ints(2)? {
        Some(writes) if writes.len() == batch => writes,
        Some(writes) => {
            return Err(ctx.error(format!(
                "write_indices holds {} values for a batch of {batch}",
                writes.len()
            )))
        }
        None => vec![0; batch],
    };
    let device = past.device();
    let mut entries = Vec::with_capacity(batch);
    for (entry, &start) in writes.iter().enumerate() {
        if start < 0 || (!circular && start as usize + length > capacity) {
            return Err(ctx.error(format!(
                "write index {start} of batch entry {entry} does not leave room for {length} positions in {capacity}"
            )));
        }
        // Position `p` of the cache takes position `picks[p]` of `[past, update]`.
        let mut picks: Vec<i32> = (0..capacity as i32).collect();
        for step in 0..length {
            let mut position = start as usize + step;
            if circular {
                position %= capacity.max(1);
            }
            picks[position] = (capacity + step) as i32;
        }
        let picked = ctx.core((|| {
            let joined = Tensor::cat(
                &[&past.narrow(0, entry, 1)?, &update.narrow(0, entry, 1)?],
                axis as isize,
            )?;
            joined.index_select(
                axis as isize,
                &Tensor::from_vec(picks, &[capacity], device)?,
            )
        })())?;
        entries.push(picked);
    }
    let parts: Vec<&Tensor> = entries.iter().collect();
    if parts.is_empty() {
        return single(past);
    }
    single(ctx.core(Tensor::cat(&parts, 0))?)
}
