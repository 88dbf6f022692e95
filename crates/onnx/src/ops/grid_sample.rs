//! GridSample (opset 16+) and AffineGrid (opset 20+): thin readers of the nodes' attributes
//! over the core's `Tensor::grid_sample` and `Tensor::affine_grid`, which hold the sampling
//! itself (PyTorch's semantics, on every device, with autograd).
//!
//! GridSample's modes are `bilinear`, `nearest`, `bicubic` in opsets 16 to 19 and `linear`,
//! `nearest`, `cubic` from opset 20 (which also allows N-D inputs: the core samples 4-D and
//! 5-D ones, cubic 4-D only). An input `X` whose type differs from the grid's is sampled in
//! the grid's type and cast back.

use anygrad_core::{GridSampleMode, GridSamplePadding, Tensor};

use super::{single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The grid operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    OperatorEntry {
        op_type: "GridSample",
        min_opset: 16,
        max_opset: i64::MAX,
        run: grid_sample,
    },
    OperatorEntry {
        op_type: "AffineGrid",
        min_opset: 20,
        max_opset: i64::MAX,
        run: affine_grid,
    },
];

/// The `mode` attribute as the core's mode, by the names of the node's opset.
fn sample_mode(ctx: &NodeContext) -> Result<GridSampleMode> {
    let (default, names) = if ctx.opset >= 20 {
        ("linear", ["linear", "nearest", "cubic"])
    } else {
        ("bilinear", ["bilinear", "nearest", "bicubic"])
    };
    let mode = ctx.attr_string("mode", default)?;
    if !names.contains(&mode.as_str()) {
        return Err(ctx.error(format!(
            "mode {mode:?} is not one of {names:?} (opset {})",
            ctx.opset
        )));
    }
    ctx.core(GridSampleMode::parse(&mode))
}

/// `align_corners`: 0 or 1.
fn align_corners(ctx: &NodeContext) -> Result<bool> {
    match ctx.attr_int("align_corners", 0)? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(ctx.error(format!("align_corners must be 0 or 1, got {other}"))),
    }
}

/// GridSample: `Y = grid_sample(X, grid)`.
fn grid_sample(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.tensor(0)?;
    let grid = ctx.tensor(1)?;
    let mode = sample_mode(ctx)?;
    let padding = ctx.core(GridSamplePadding::parse(
        &ctx.attr_string("padding_mode", "zeros")?,
    ))?;
    let align_corners = align_corners(ctx)?;
    let output_dtype = input.dtype();
    let input = ctx.core(input.to_dtype(grid.dtype()))?;
    let sampled = ctx.core(input.grid_sample(&grid, mode, padding, align_corners))?;
    single(ctx.core(sampled.to_dtype(output_dtype))?)
}

/// AffineGrid: the grid of `theta` over the int64 `size` `[N, C, H, W]` or `[N, C, D, H, W]`.
fn affine_grid(ctx: &NodeContext) -> Result<Vec<Value>> {
    let theta = ctx.tensor(0)?;
    let size = ctx.ints(1)?;
    if size
        .iter()
        .any(|&s| s < 0 || s > crate::value::MAX_ELEMENTS as i64)
    {
        return Err(ctx.error(format!("size {size:?} must hold non-negative sizes")));
    }
    let size: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    let align_corners = align_corners(ctx)?;
    single(ctx.core(Tensor::affine_grid(&theta, &size, align_corners))?)
}
