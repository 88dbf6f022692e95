//! The view checks every primitive of both backends runs before it touches data, so that a
//! layout that does not fit its storage (strides or offset reaching past the end, sizes and
//! strides of different lengths), a dim out of range or operands of incompatible shapes (also
//! `index_add`'s base, indices and src) is an
//! `Error` naming the op on the CPU and the GPU alike, never a panic, a wrong read or (in the
//! CPU's raw-pointer `gemm` call) an out-of-bounds read.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::BinaryOp;
use crate::quantization::QuantFormat;

/// Check that a view only touches elements `0..len` of its storage. The reach is computed with
/// checked arithmetic, so absurd strides are refused rather than wrapped.
pub(crate) fn check_view(op: &'static str, layout: &Layout, len: usize) -> Result<()> {
    if layout.strides.len() != layout.shape.len() {
        return Err(Error::invalid(
            op,
            format!(
                "layout has {} sizes but {} strides",
                layout.shape.len(),
                layout.strides.len()
            ),
        ));
    }
    if layout.shape.contains(&0) {
        return Ok(());
    }
    let reach = layout.shape.iter().zip(&layout.strides).try_fold(
        layout.offset,
        |sum, (&size, &stride)| {
            (size - 1)
                .checked_mul(stride)
                .and_then(|step| sum.checked_add(step))
        },
    );
    match reach {
        Some(last) if last < len => Ok(()),
        Some(last) => Err(Error::invalid(
            op,
            format!("view {layout:?} reaches element {last} of a storage of {len}"),
        )),
        None => Err(Error::invalid(
            op,
            format!("view {layout:?} reaches past the addressable range"),
        )),
    }
}

/// Check that two operands of an elementwise op have the same shape (the tensor layer
/// broadcasts first).
pub(crate) fn check_same_shape(op: &'static str, lhs: &Layout, rhs: &Layout) -> Result<()> {
    if lhs.shape != rhs.shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: lhs.shape.clone(),
            rhs: rhs.shape.clone(),
            reason: "must have the same shape".into(),
        });
    }
    Ok(())
}

/// Check that `dim` is a dim of `layout`.
pub(crate) fn check_dim(op: &'static str, layout: &Layout, dim: usize) -> Result<()> {
    if dim >= layout.rank() {
        return Err(Error::InvalidShape {
            op,
            shape: layout.shape.clone(),
            message: format!("dim {dim} is out of range for rank {}", layout.rank()),
        });
    }
    Ok(())
}

/// The extents of an `index_add` seen as `[outer, size, inner]` around `dim`: checks that `dim`
/// is a dim of the base, the indices are 1-D, and `src` has the base's shape with `dim`
/// replaced by the number of indices. Returns `(outer, size, inner, count)`.
pub(crate) fn check_index_add_shapes(
    base: &Layout,
    indices: &Layout,
    src: &Layout,
    dim: usize,
) -> Result<(usize, usize, usize, usize)> {
    const OP: &str = "index_add";
    check_dim(OP, base, dim)?;
    if indices.rank() != 1 {
        return Err(Error::InvalidShape {
            op: OP,
            shape: indices.shape.clone(),
            message: "indices must be 1-D".into(),
        });
    }
    let count = indices.shape[0];
    let mut expected = base.shape.clone();
    expected[dim] = count;
    if src.shape != expected {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: base.shape.clone(),
            rhs: src.shape.clone(),
            reason: format!(
                "src must have the base's shape with dim {dim} replaced by the {count} indices \
                 ({expected:?})"
            ),
        });
    }
    let outer = base.shape[..dim].iter().product();
    let inner = base.shape[dim + 1..].iter().product();
    Ok((outer, base.shape[dim], inner, count))
}

/// Check the dims of a reduction: each in range, and exactly one for an arg reduction.
pub(crate) fn check_reduce_dims(
    op: &'static str,
    layout: &Layout,
    dims: &[usize],
    is_arg: bool,
) -> Result<()> {
    for &dim in dims {
        check_dim(op, layout, dim)?;
    }
    if is_arg && dims.len() != 1 {
        return Err(Error::invalid(op, "argmax/argmin reduce exactly one dim"));
    }
    Ok(())
}

/// Check the operands of a batched matmul: `[batch, m, k]` and `[batch, k, n]`.
pub(crate) fn check_matmul_shapes(lhs: &Layout, rhs: &Layout) -> Result<()> {
    if lhs.rank() != 3
        || rhs.rank() != 3
        || lhs.shape[0] != rhs.shape[0]
        || lhs.shape[2] != rhs.shape[1]
    {
        return Err(Error::ShapeMismatch {
            op: "matmul",
            lhs: lhs.shape.clone(),
            rhs: rhs.shape.clone(),
            reason: "must be [batch, m, k] and [batch, k, n]".into(),
        });
    }
    Ok(())
}

/// The epilogue operands of `conv2d_epilogue` against the convolution's output shape and
/// dtype, on both backends: `scale` and `shift` F32 `[o]`, the residual of the output's shape
/// and dtype, every view inside its storage (`len` of each).
pub(crate) fn check_epilogue(
    op: &'static str,
    output_shape: &[usize; 4],
    dtype: DType,
    scale: (&Layout, DType, usize),
    shift: (&Layout, DType, usize),
    residual: Option<(&Layout, DType, usize)>,
) -> Result<()> {
    for (name, (layout, operand_dtype, len)) in [("scale", scale), ("shift", shift)] {
        if operand_dtype != DType::F32 {
            return Err(Error::invalid(
                op,
                format!("the epilogue's {name} must be float32, got {operand_dtype}"),
            ));
        }
        if layout.shape != [output_shape[1]] {
            return Err(Error::ShapeMismatch {
                op,
                lhs: vec![output_shape[1]],
                rhs: layout.shape.clone(),
                reason: format!("the epilogue's {name} needs one value per output channel"),
            });
        }
        check_view(op, layout, len)?;
    }
    if let Some((layout, operand_dtype, len)) = residual {
        if operand_dtype != dtype {
            return Err(Error::DTypeMismatch {
                op,
                lhs: dtype,
                rhs: operand_dtype,
            });
        }
        if layout.shape != output_shape {
            return Err(Error::ShapeMismatch {
                op,
                lhs: output_shape.to_vec(),
                rhs: layout.shape.clone(),
                reason: "the residual must have the convolution's output shape".into(),
            });
        }
        check_view(op, layout, len)?;
    }
    Ok(())
}

/// The row length of a row primitive (`softmax_last`, `layer_norm_last`): the view's last
/// dim; a rank-0 view is refused.
pub(crate) fn check_rows(op: &'static str, layout: &Layout) -> Result<usize> {
    layout
        .shape
        .last()
        .copied()
        .ok_or_else(|| Error::InvalidShape {
            op,
            shape: layout.shape.clone(),
            message: "needs at least one dim (the rows are the last)".into(),
        })
}

/// The op name of `softmax_last_backward` in errors and profiles: log-softmax's or softmax's.
pub(crate) fn softmax_backward_name(log: bool) -> &'static str {
    if log {
        "log_softmax_backward"
    } else {
        "softmax_backward"
    }
}

/// The two views of a row primitive over two operands (`softmax_last_backward`'s output and
/// gradient) have the same shape.
pub(crate) fn check_same_rows(op: &'static str, layout: &Layout, other: &Layout) -> Result<()> {
    if layout.shape != other.shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: layout.shape.clone(),
            rhs: other.shape.clone(),
            reason: "the output and its gradient must have the same shape".into(),
        });
    }
    Ok(())
}

/// The affine weight and bias of `layer_norm_last`: `[length]` views of the input's dtype
/// inside their storages (`len` of each).
pub(crate) fn check_affine(
    op: &'static str,
    length: usize,
    dtype: DType,
    weight: (&Layout, DType, usize),
    bias: (&Layout, DType, usize),
) -> Result<()> {
    check_row_parameter(op, "weight", length, dtype, weight)?;
    check_row_parameter(op, "bias", length, dtype, bias)
}

/// A row primitive's per-element parameter (`name`: "weight", "bias"): a view of `[length]`
/// values of the input's `dtype`, inside its storage of `len` elements.
pub(crate) fn check_row_parameter(
    op: &'static str,
    name: &str,
    length: usize,
    dtype: DType,
    (layout, operand_dtype, len): (&Layout, DType, usize),
) -> Result<()> {
    if operand_dtype != dtype {
        return Err(Error::DTypeMismatch {
            op,
            lhs: dtype,
            rhs: operand_dtype,
        });
    }
    if layout.shape != [length] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: vec![length],
            rhs: layout.shape.clone(),
            reason: format!("the {name} needs one value per normalized element"),
        });
    }
    check_view(op, layout, len)
}

/// The operands of `rotary_last`: the view is `[.., positions, head_dim]` (rank at least 2);
/// `cos` and `sin` are `[positions, rotary_dim]` views of the input's dtype inside their
/// storages (`len` of each), `rotary_dim` even, nonzero and at most `head_dim`. Returns
/// `(positions, head_dim, rotary_dim)`.
pub(crate) fn check_rotary(
    op: &'static str,
    layout: &Layout,
    dtype: DType,
    cos: (&Layout, DType, usize),
    sin: (&Layout, DType, usize),
) -> Result<(usize, usize, usize)> {
    let rank = layout.shape.len();
    if rank < 2 {
        return Err(Error::InvalidShape {
            op,
            shape: layout.shape.clone(),
            message: "needs [.., positions, head_dim]".into(),
        });
    }
    let (positions, head_dim) = (layout.shape[rank - 2], layout.shape[rank - 1]);
    for (name, (table, table_dtype, len)) in [("cos", cos), ("sin", sin)] {
        if table_dtype != dtype {
            return Err(Error::DTypeMismatch {
                op,
                lhs: dtype,
                rhs: table_dtype,
            });
        }
        let rotary_dim = table.shape.last().copied().unwrap_or(0);
        if table.shape.len() != 2
            || table.shape[0] != positions
            || rotary_dim == 0
            || rotary_dim % 2 != 0
            || rotary_dim > head_dim
        {
            return Err(Error::ShapeMismatch {
                op,
                lhs: layout.shape.clone(),
                rhs: table.shape.clone(),
                reason: format!(
                    "the {name} table must be [positions, rotary_dim] for x [.., positions, \
                     head_dim], rotary_dim even, nonzero and at most head_dim"
                ),
            });
        }
        check_view(op, table, len)?;
    }
    if cos.0.shape != sin.0.shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: cos.0.shape.clone(),
            rhs: sin.0.shape.clone(),
            reason: "cos and sin must have the same shape".into(),
        });
    }
    Ok((positions, head_dim, cos.0.shape[1]))
}

/// `(n, c, rest)` of a batch-norm view `[n, c, ...]` (rank at least 2; `rest` the product of
/// the dims after the channels).
pub(crate) fn check_channels(op: &'static str, layout: &Layout) -> Result<(usize, usize, usize)> {
    match layout.shape.as_slice() {
        [n, c, rest @ ..] => Ok((*n, *c, rest.iter().product())),
        _ => Err(Error::InvalidShape {
            op,
            shape: layout.shape.clone(),
            message: "needs [n, c, ...] (channels in dim 1)".into(),
        }),
    }
}

/// The operands of `batch_norm_backward_input`: the gradient and the input of one shape
/// `[n, c, ...]` and dtype (F32 or F16), the coefficients an F32 `[4, c]`. Returns `(n, c,
/// rest)`.
pub(crate) fn check_batch_norm_input(
    op: &'static str,
    (layout, dtype): (&Layout, DType),
    (input_layout, input_dtype): (&Layout, DType),
    (coefficients_layout, coefficients_dtype): (&Layout, DType),
) -> Result<(usize, usize, usize)> {
    let (n, c, rest) = check_channels(op, layout)?;
    if input_layout.shape != layout.shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: layout.shape.clone(),
            rhs: input_layout.shape.clone(),
            reason: "the gradient and the input must have one shape".into(),
        });
    }
    if input_dtype != dtype {
        return Err(Error::DTypeMismatch {
            op,
            lhs: dtype,
            rhs: input_dtype,
        });
    }
    if coefficients_layout.shape != [4, c] || coefficients_dtype != DType::F32 {
        return Err(Error::invalid(
            op,
            format!(
                "the coefficients must be float32 [4, {c}], got {coefficients_dtype} {:?}",
                coefficients_layout.shape
            ),
        ));
    }
    Ok((n, c, rest))
}

/// The operands of `sgd_step` — parameter, gradient and (with momentum) buffer, each as
/// `(view, storage length, dtype)` — checked: one float dtype, one shape, every view
/// contiguous and inside its storage, a buffer where the step has momentum.
/// Returns the number of elements.
pub(crate) fn check_sgd_step(
    parameter: (&Layout, usize, DType),
    gradient: (&Layout, usize, DType),
    buffer: Option<(&Layout, usize, DType)>,
    step: &crate::update::SgdStep,
) -> Result<usize> {
    const OP: &str = "sgd_step";
    if step.uses_buffer() && buffer.is_none() {
        return Err(Error::invalid(
            OP,
            "a step with momentum needs a momentum buffer",
        ));
    }
    check_step_operands(OP, parameter, [Some(gradient), buffer])
}

/// The operands of `adam_step` — parameter, gradient, first and second moments and (with
/// `amsgrad`) the running maximum, each as `(view, storage length, dtype)` — checked: one
/// float dtype, one shape, every view contiguous and inside its storage, a maximum where the
/// step has `amsgrad`. Returns the number of elements.
pub(crate) fn check_adam_step(
    parameter: (&Layout, usize, DType),
    operands: [Option<(&Layout, usize, DType)>; 4],
    step: &crate::update::AdamStep,
) -> Result<usize> {
    const OP: &str = "adam_step";
    if step.amsgrad && operands[3].is_none() {
        return Err(Error::invalid(
            OP,
            "an AMSGrad step needs the running maximum of the second moment",
        ));
    }
    check_step_operands(OP, parameter, operands)
}

/// The operands of an optimizer step `op` (the parameter and those given), checked: a float
/// parameter, every view inside its storage, contiguous and of the parameter's shape and
/// dtype. Returns the number of elements.
fn check_step_operands<const N: usize>(
    op: &'static str,
    parameter: (&Layout, usize, DType),
    operands: [Option<(&Layout, usize, DType)>; N],
) -> Result<usize> {
    for (layout, len, dtype) in std::iter::once(Some(parameter)).chain(operands).flatten() {
        check_view(op, layout, len)?;
        check_same_shape(op, parameter.0, layout)?;
        if dtype != parameter.2 {
            return Err(Error::DTypeMismatch {
                op,
                lhs: parameter.2,
                rhs: dtype,
            });
        }
        if !layout.is_contiguous() {
            return Err(Error::invalid(
                op,
                format!("operands must be contiguous, got {layout:?}"),
            ));
        }
    }
    if !parameter.2.is_float() {
        return Err(Error::invalid(
            op,
            format!("a parameter of dtype {:?} cannot be stepped", parameter.2),
        ));
    }
    Ok(parameter.0.numel())
}

/// The operands of `class_pick` (`backward`: of its gradient, `scores` then being the `[n]`
/// gradient and `classes` given) — each as `(view, storage length, dtype)` — checked: a
/// contiguous `[n, c]` float view (`[n]` for the gradient), `n` integer targets, `[c]`
/// contiguous weights of the scores' dtype. Returns `(n, c)`.
pub(crate) fn check_class_pick(
    scores: (&Layout, usize, DType),
    target: (&Layout, usize, DType),
    weight: Option<(&Layout, usize, DType)>,
    classes: Option<usize>,
) -> Result<(usize, usize)> {
    const OP: &str = "class_pick";
    check_view(OP, scores.0, scores.1)?;
    check_view(OP, target.0, target.1)?;
    let rank = if classes.is_some() { 1 } else { 2 };
    if scores.0.rank() != rank || !scores.0.is_contiguous() {
        return Err(Error::invalid(
            OP,
            format!(
                "expected a contiguous {rank}-D float view, got {:?}",
                scores.0
            ),
        ));
    }
    if !scores.2.is_float() {
        return Err(Error::invalid(
            OP,
            format!("scores must be floats, got {}", scores.2),
        ));
    }
    if !target.2.is_index() {
        return Err(Error::invalid(
            OP,
            format!("targets must be integers, got {}", target.2),
        ));
    }
    let rows = scores.0.shape[0];
    let classes = classes.unwrap_or_else(|| scores.0.shape[1]);
    if target.0.rank() != 1 || target.0.shape[0] != rows {
        return Err(Error::ShapeMismatch {
            op: OP,
            lhs: vec![rows],
            rhs: target.0.shape.clone(),
            reason: "one target per row".into(),
        });
    }
    if let Some((layout, len, dtype)) = weight {
        check_view(OP, layout, len)?;
        if layout.shape != [classes] || !layout.is_contiguous() || dtype != scores.2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "class weights must be a contiguous [{classes}] {} view, got {dtype} {:?}",
                    scores.2, layout
                ),
            ));
        }
    }
    Ok((rows, classes))
}

/// The skip flag of `sgd_step`: a U32 storage of at least one element (its first is read).
pub(crate) fn check_skip_flag(len: usize, dtype: DType) -> Result<()> {
    if dtype != DType::U32 || len == 0 {
        return Err(Error::invalid(
            "sgd_step",
            format!("the skip flag must be a U32 storage of at least one element, got {dtype:?} of {len}"),
        ));
    }
    Ok(())
}

/// The operands of `unscale`: a contiguous float view inside its storage and a U32 flag of
/// at least one element. Returns the number of elements.
pub(crate) fn check_unscale(
    (layout, len, dtype): (&Layout, usize, DType),
    (found_len, found_dtype): (usize, DType),
) -> Result<usize> {
    const OP: &str = "unscale";
    check_view(OP, layout, len)?;
    if !dtype.is_float() || !layout.is_contiguous() {
        return Err(Error::invalid(
            OP,
            format!("expected a contiguous float gradient, got {dtype:?} {layout:?}"),
        ));
    }
    if found_dtype != DType::U32 || found_len == 0 {
        return Err(Error::invalid(
            OP,
            format!("the flag must be U32 [1], got {found_dtype:?} of {found_len} elements"),
        ));
    }
    Ok(layout.numel())
}

/// `Err(Unsupported)` for a bit operator on float data: they are defined on integers and Bool
/// only, as in PyTorch.
pub(crate) fn check_bitwise_dtype(op: BinaryOp, dtype: DType, device: &str) -> Result<()> {
    if op.is_bitwise() && dtype.is_float() {
        return Err(Error::Unsupported {
            op: op.name(),
            dtype,
            device: device.to_string(),
            hint: "; bit operators take integer or bool tensors".into(),
        });
    }
    Ok(())
}

/// A quantized matrix of `format` and `shape` `[n, k]` in a U32 storage of `words` words
/// (`contract/quantized_matrices.rs`): whole blocks per row and room for every row's bytes
/// plus one word; returns the bytes of one row.
pub(crate) fn check_quantized_matrix(
    op: &'static str,
    (words, dtype): (usize, DType),
    format: QuantFormat,
    [rows, columns]: [usize; 2],
) -> Result<usize> {
    if dtype != DType::U32 {
        return Err(Error::invalid(
            op,
            format!("a quantized matrix is held in U32 words, got {dtype}"),
        ));
    }
    let row_bytes = format.row_bytes(columns, op)?;
    let needed = rows
        .checked_mul(row_bytes)
        .map(|bytes| bytes.div_ceil(4) + 1)
        .ok_or_else(|| Error::invalid(op, format!("{rows} rows of {columns} overflow")))?;
    if words < needed {
        return Err(Error::invalid(
            op,
            format!(
                "a {format} matrix of [{rows}, {columns}] needs {needed} words, the storage holds {words}"
            ),
        ));
    }
    Ok(row_bytes)
}

/// The input of a quantized product: a rank-2 F32 or F16 view inside its storage of `len`
/// elements, `k` columns adjacent in memory; returns its rows.
pub(crate) fn check_quantized_input(
    op: &'static str,
    layout: &Layout,
    (len, dtype): (usize, DType),
    k: usize,
) -> Result<usize> {
    check_view(op, layout, len)?;
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(Error::invalid(
            op,
            format!("the input must be F32 or F16, got {dtype}"),
        ));
    }
    if layout.rank() != 2 || layout.shape[1] != k || (k > 1 && layout.strides[1] != 1) {
        return Err(Error::invalid(
            op,
            format!("the input must be a [m, {k}] view with adjacent columns, got {layout:?}"),
        ));
    }
    Ok(layout.shape[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_inside_their_storage_pass() {
        let layout = Layout::contiguous(&[2, 3]);
        assert!(check_view("test", &layout, 6).is_ok());
        assert!(check_view("test", &layout.permute(&[1, 0]), 6).is_ok());
        assert!(check_view("test", &Layout::contiguous(&[0, 5]), 0).is_ok());
    }

    #[test]
    fn views_outside_their_storage_fail() {
        let layout = Layout::contiguous(&[2, 3]);
        assert!(check_view("test", &layout, 5).is_err());
        let shifted = Layout {
            offset: 1,
            ..layout.clone()
        };
        assert!(check_view("test", &shifted, 6).is_err());
        let huge = Layout {
            shape: vec![3],
            strides: vec![usize::MAX / 2],
            offset: 0,
        };
        assert!(check_view("test", &huge, 6).is_err());
        let ragged = Layout {
            shape: vec![2, 3],
            strides: vec![3],
            offset: 0,
        };
        assert!(check_view("test", &ragged, 6).is_err());
    }
}
