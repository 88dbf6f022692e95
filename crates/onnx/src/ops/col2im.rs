//! Col2Im (opset 18+): column blocks `[N, C * prod(block), L]` folded back into an image
//! `[N, C, *image_shape]` (PyTorch's `fold`, N-D), with strides, dilations and pads. The
//! placement of every (block offset, block) pair is computed on the host; the device picks
//! the pairs that land inside the image and adds them at their pixels (`index_add`, where
//! overlapping blocks sum).

use anygrad_core::Tensor;

use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{Value, MAX_ELEMENTS};

/// The column-to-image operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[OperatorEntry {
    op_type: "Col2Im",
    min_opset: 18,
    max_opset: i64::MAX,
    run: col2im,
}];

/// An INTS attribute of `count` values, each at least `minimum`, or `default` repeated.
fn spatial_attribute(
    ctx: &NodeContext,
    name: &str,
    count: usize,
    default: i64,
    minimum: i64,
) -> Result<Vec<i64>> {
    let values = ctx.attr_ints(name)?.unwrap_or_else(|| vec![default; count]);
    if values.len() != count
        || values
            .iter()
            .any(|&v| v < minimum || v > MAX_ELEMENTS as i64)
    {
        return Err(ctx.error(format!(
            "attribute {name} {values:?} must hold {count} values from {minimum} to {MAX_ELEMENTS}"
        )));
    }
    Ok(values)
}

/// The product of `sizes`, refused (naming `what`) above [`MAX_ELEMENTS`].
fn checked_product(
    ctx: &NodeContext,
    what: &str,
    sizes: impl IntoIterator<Item = usize>,
) -> Result<usize> {
    sizes
        .into_iter()
        .try_fold(1usize, |product, size| product.checked_mul(size))
        .filter(|&product| product as u64 <= MAX_ELEMENTS)
        .ok_or_else(|| ctx.error(format!("{what} hold more than {MAX_ELEMENTS} elements")))
}

/// The multi-index of `flat` in a row-major array of `dims`.
fn unravel(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        index[d] = flat % dims[d];
        flat /= dims[d];
    }
    index
}

/// Col2Im: the folded image.
fn col2im(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.tensor(0)?;
    let image = ctx.ints(1)?;
    let block = ctx.ints(2)?;
    let spatial = image.len();
    if spatial == 0 || block.len() != spatial {
        return Err(ctx.error(format!(
            "image_shape {image:?} and block_shape {block:?} must have the same non-zero length"
        )));
    }
    let limit = MAX_ELEMENTS as i64;
    if image.iter().chain(&block).any(|&v| v <= 0 || v > limit) {
        return Err(ctx.error(format!(
            "image_shape {image:?} and block_shape {block:?} must hold positive sizes"
        )));
    }
    let strides = spatial_attribute(ctx, "strides", spatial, 1, 1)?;
    let dilations = spatial_attribute(ctx, "dilations", spatial, 1, 1)?;
    let pads = spatial_attribute(ctx, "pads", 2 * spatial, 0, 0)?;
    let &[batch, rows, length] = input.shape() else {
        return Err(ctx.error("input must be 3-D [N, C * prod(block_shape), L]"));
    };
    let block_size = checked_product(ctx, "block_shape", block.iter().map(|&b| b as usize))?;
    if block_size == 0 || !rows.is_multiple_of(block_size) {
        return Err(ctx.error(format!(
            "the input's dim 1 ({rows}) is not a multiple of the block size {block_size}"
        )));
    }
    let channels = rows / block_size;
    // Blocks along each spatial dim.
    let mut blocks = Vec::with_capacity(spatial);
    for d in 0..spatial {
        let extent = image[d] + pads[d] + pads[d + spatial] - dilations[d] * (block[d] - 1) - 1;
        if extent < 0 {
            return Err(ctx.error(format!(
                "the dilated block {} does not fit the padded image along spatial dim {d}",
                block[d]
            )));
        }
        blocks.push((extent / strides[d] + 1) as usize);
    }
    let block_count = checked_product(ctx, "the blocks", blocks.iter().copied())?;
    if block_count != length {
        return Err(ctx.error(format!(
            "the input holds {length} blocks, the image and block shapes make {blocks:?} = {block_count}"
        )));
    }
    let block_dims: Vec<usize> = block.iter().map(|&b| b as usize).collect();
    let image_dims: Vec<usize> = image.iter().map(|&v| v as usize).collect();
    let pixels = checked_product(ctx, "image_shape", image_dims.iter().copied())?;
    checked_product(ctx, "the columns", [block_size, length])?;
    // Column entry `offset * L + block` lands at pixel `target` when inside the image.
    let mut sources = Vec::new();
    let mut targets = Vec::new();
    for offset in 0..block_size {
        let offset_index = unravel(offset, &block_dims);
        for position in 0..length {
            let block_index = unravel(position, &blocks);
            let mut target = 0i64;
            let mut inside = true;
            for d in 0..spatial {
                let pixel = block_index[d] as i64 * strides[d]
                    + offset_index[d] as i64 * dilations[d]
                    - pads[d];
                if pixel < 0 || pixel >= image[d] {
                    inside = false;
                    break;
                }
                target = target * image[d] + pixel;
            }
            if inside {
                sources.push((offset * length + position) as i32);
                targets.push(target as i32);
            }
        }
    }
    let device = input.device();
    let mut output_shape = vec![batch, channels];
    output_shape.extend(&image_dims);
    let count = sources.len();
    let output = ctx.core((|| {
        let sources = Tensor::from_vec(sources, &[count], device)?;
        let targets = Tensor::from_vec(targets, &[count], device)?;
        let columns = input
            .reshape([batch, channels, block_size * length])?
            .index_select(2, &sources)?;
        Tensor::zeros(&[batch, channels, pixels], input.dtype(), device)?
            .index_add(2, &targets, &columns)?
            .reshape(output_shape.clone())
    })())?;
    single(output)
}
