//! MaxUnpool (opset 9+): the inverse of MaxPool with indices. The values `X` `[N, C, *in]`
//! go to the flat positions `I` of a zero tensor of the size MaxPool would have read
//! (`(in - 1) * stride - pad_begin - pad_end + kernel` per spatial dim); with `output_shape`
//! that tensor is padded with zeros at the end of each dim. When positions repeat, the last
//! value written wins. The positions are checked and placed on the host; the device picks the
//! values and adds them at their places (`index_add`).

use anygrad_core::Tensor;

use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{Value, MAX_ELEMENTS};

/// The unpooling operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "MaxUnpool",
    min_opset: 9,
    max_opset: i64::MAX,
    run: max_unpool,
}];

/// MaxUnpool: the unpooled tensor.
fn max_unpool(ctx: &NodeContext) -> Result<Vec<Value>> {
    let values = ctx.tensor(0)?;
    let positions = ctx.int64(1)?;
    let shape = values.shape().to_vec();
    if shape.len() < 3 {
        return Err(ctx.error("X must be [N, C, spatial...]"));
    }
    if positions.shape != shape {
        return Err(ctx.error(format!(
            "I has shape {:?}, X has {shape:?}",
            positions.shape
        )));
    }
    let spatial = shape.len() - 2;
    let kernel = ctx
        .attr_ints("kernel_shape")?
        .ok_or_else(|| ctx.error("attribute kernel_shape is required"))?;
    let strides = ctx
        .attr_ints("strides")?
        .unwrap_or_else(|| vec![1; spatial]);
    let pads = ctx
        .attr_ints("pads")?
        .unwrap_or_else(|| vec![0; 2 * spatial]);
    if kernel.len() != spatial
        || strides.len() != spatial
        || pads.len() != 2 * spatial
        || kernel.iter().chain(&strides).any(|&v| v < 1)
        || pads.iter().any(|&p| p < 0)
        || kernel
            .iter()
            .chain(&strides)
            .chain(&pads)
            .any(|&v| v > MAX_ELEMENTS as i64)
    {
        return Err(ctx.error(format!(
            "kernel_shape {kernel:?}, strides {strides:?}, pads {pads:?} do not fit {spatial} spatial dims"
        )));
    }
    // The size MaxPool read, per dim.
    let mut inferred = shape[..2].to_vec();
    for d in 0..spatial {
        let size = (shape[d + 2] as i64 - 1) * strides[d] - pads[d] - pads[d + spatial] + kernel[d];
        if size < 0 || size as u64 > MAX_ELEMENTS {
            return Err(ctx.error(format!(
                "the unpooled size {size} of spatial dim {d} is invalid"
            )));
        }
        inferred.push(size as usize);
    }
    let output = match ctx.optional_ints(2)? {
        Some(requested) => {
            if requested.len() != inferred.len()
                || requested
                    .iter()
                    .zip(&inferred)
                    .any(|(&r, &i)| r < i as i64 || r as u64 > MAX_ELEMENTS)
            {
                return Err(ctx.error(format!(
                    "output_shape {requested:?} must have rank {} and cover {inferred:?}",
                    inferred.len()
                )));
            }
            requested.iter().map(|&r| r as usize).collect()
        }
        None => inferred.clone(),
    };
    let output_count = output
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&c| c as u64 <= MAX_ELEMENTS)
        .ok_or_else(|| ctx.error(format!("output shape {output:?} is too large")))?;
    // Each dim of `output` covers the inferred one, so this fits too.
    let inferred_count: usize = inferred.iter().product();
    // (target position in the inferred tensor, source), sorted by target: the last source of
    // each target wins.
    let mut writes = Vec::with_capacity(positions.data.len());
    for (source, &position) in positions.data.iter().enumerate() {
        if position < 0 || position as usize >= inferred_count {
            return Err(ctx.error(format!(
                "index {position} is outside the {inferred_count} unpooled positions"
            )));
        }
        writes.push((position as usize, source));
    }
    writes.sort_by_key(|&(position, _)| position);
    let mut sources = Vec::new();
    let mut targets = Vec::new();
    for (k, &(position, source)) in writes.iter().enumerate() {
        if writes.get(k + 1).is_some_and(|&(next, _)| next == position) {
            continue;
        }
        let mut rest = position;
        let mut target = 0usize;
        let mut scale = 1usize;
        for d in (0..inferred.len()).rev() {
            target += (rest % inferred[d]) * scale;
            rest /= inferred[d];
            scale *= output[d];
        }
        sources.push(source as i32);
        targets.push(target as i32);
    }
    let device = values.device();
    let count = sources.len();
    let result = ctx.core((|| {
        let sources = Tensor::from_vec(sources, &[count], device)?;
        let targets = Tensor::from_vec(targets, &[count], device)?;
        let picked = values
            .reshape([values.numel()])?
            .index_select(0, &sources)?;
        Tensor::zeros(&[output_count], values.dtype(), device)?
            .index_add(0, &targets, &picked)?
            .reshape(output.clone())
    })())?;
    single(result)
}
