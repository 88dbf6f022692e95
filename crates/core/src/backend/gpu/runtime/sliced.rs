//! Primitives on tensors above one buffer. A kernel binds whole buffers, each at most the adapter's
//! largest storage binding (2 GiB on an H200, 128 MiB on lavapipe); a larger tensor lives in pieces
//! (`runtime/parts.rs`). Every contract method (each family's `contract.rs`) goes through a `Plan`:
//! when an operand is in pieces or the output would exceed one binding, the primitive runs on
//! slices of one dim (batch slices for convolutions and matmuls, outer-dim slices for elementwise
//! ops and reductions), each slice's operands bound as one piece (or a merged copy of the range it
//! reads), and the slices' results are concatenated (pieces again when large) or, for a dim that
//! the primitive sums over, added. Small calls run directly.

use std::ops::Range;

use super::parts::too_large;
use super::storage::GpuStorage;
use super::wgsl::gpu_element_size;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp};

/// How an operand follows the slices.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Follow {
    /// Narrowed along this dim to each slice's rows.
    Sliced(usize),
    /// Used whole by every slice.
    Whole,
}

/// How the slices' results form the output.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Combine {
    /// Concatenated in order: the sliced dim is the output's first dim above size 1, so the
    /// contiguous output is the slices' outputs one after the other.
    Concatenate,
    /// Results of one shape, folded with this op (`Add` for a dim the primitive sums over) by
    /// the elementwise family's binary op (`Hooks::fold`).
    Fold(BinaryOp),
}

/// One call of a primitive, described so that it can run in slices.
pub(crate) struct Plan<'a, const N: usize> {
    /// The op's name (errors).
    pub(crate) op: &'static str,
    /// The operands, their views and how each follows the slices.
    pub(crate) operands: [(&'a GpuStorage, &'a Layout, Follow); N],
    /// Extent of the sliced dim (1 when no operand is sliced).
    pub(crate) rows: usize,
    /// Output elements per row (`Concatenate`) or of the whole output (`Fold`).
    pub(crate) output_elements: usize,
    pub(crate) combine: Combine,
    /// Elementwise plans only: when one row of the sliced dim is still too large, each row
    /// is computed by its own plan along the next dim.
    pub(crate) nests: bool,
}

/// The first dim of `shape` above size 1.
pub(crate) fn first_wide_dim(shape: &[usize]) -> Option<usize> {
    shape.iter().position(|&size| size > 1)
}

/// Elements between the first and the last position a view reads (0 when empty).
fn span(layout: &Layout) -> usize {
    if layout.numel() == 0 {
        0
    } else {
        layout.extent() - layout.offset
    }
}

/// The view of operand `layout` for rows `range`.
fn narrowed(layout: &Layout, follow: Follow, range: &Range<usize>) -> Layout {
    match follow {
        Follow::Sliced(dim) => layout.narrow(dim, range.start, range.len()),
        Follow::Whole => layout.clone(),
    }
}

/// The output bytes a slice may produce (4 per element: no GPU dtype is wider).
fn output_bytes(elements: usize) -> u64 {
    (elements as u64).saturating_mul(4)
}

impl<'a, const N: usize> Plan<'a, N> {
    /// A plan for ops whose output has the operands' shape element for element (unary,
    /// binary, where, cast, copies): slices of the first dim above size 1.
    pub(crate) fn elementwise(
        op: &'static str,
        operands: [(&'a GpuStorage, &'a Layout); N],
    ) -> Self {
        let shape = &operands[0].1.shape;
        let numel: usize = shape.iter().product();
        let (follow, rows) = match first_wide_dim(shape) {
            Some(dim) => (Follow::Sliced(dim), shape[dim]),
            None => (Follow::Whole, 1),
        };
        Plan {
            op,
            operands: operands.map(|(storage, layout)| (storage, layout, follow)),
            rows,
            output_elements: numel / rows.max(1),
            combine: Combine::Concatenate,
            nests: true,
        }
    }

    /// Whether the slices' results will be folded (a reduction over the sliced dim).
    pub(crate) fn folds(&self) -> bool {
        matches!(self.combine, Combine::Fold(_)) && self.needed()
    }

    /// Whether slicing is needed: an operand in pieces, or an output above one binding.
    fn needed(&self) -> bool {
        let device = self.operands[0].0.device();
        let total = match self.combine {
            Combine::Concatenate => self.output_elements.saturating_mul(self.rows),
            Combine::Fold(_) => self.output_elements,
        };
        self.operands.iter().any(|(s, _, _)| s.parts().is_some())
            || output_bytes(total) > device.context().binding_limit()
    }

    /// Whether slices of `rows` rows fit: each output and each operand range in pieces at
    /// most one binding.
    fn fits(&self, rows: usize) -> bool {
        let limit = self.operands[0].0.device().context().binding_limit();
        let output = match self.combine {
            Combine::Concatenate => self.output_elements.saturating_mul(rows),
            Combine::Fold(_) => self.output_elements,
        };
        output_bytes(output) <= limit
            && self.operands.iter().all(|&(storage, layout, follow)| {
                storage.parts().is_none() || {
                    let view = narrowed(layout, follow, &(0..rows));
                    (span(&view) as u64).saturating_mul(gpu_element_size(storage.dtype())) <= limit
                }
            })
    }

    /// Run the primitive: directly when nothing exceeds one binding, otherwise slice by
    /// slice. `compute` gets single-buffer operands with their views and the rows of the
    /// slice (all rows when not sliced). A slice whose kernel needs a larger internal buffer
    /// than one binding (`Error::BufferTooLarge`) is retried in halves.
    pub(crate) fn run(
        self,
        mut compute: impl FnMut([(&GpuStorage, &Layout); N], Range<usize>) -> Result<GpuStorage>,
    ) -> Result<GpuStorage> {
        self.run_with(&mut compute)
    }

    /// `run` with the computation borrowed (nested plans share it).
    fn run_with<F>(self, compute: &mut F) -> Result<GpuStorage>
    where
        F: FnMut([(&GpuStorage, &Layout); N], Range<usize>) -> Result<GpuStorage>,
    {
        let mut rows_per_slice = self.rows.max(1);
        if !self.needed() {
            let operands = self.operands.map(|(storage, layout, _)| (storage, layout));
            match compute(operands, 0..self.rows) {
                Err(Error::BufferTooLarge { .. }) if self.rows > 1 => {
                    // A kernel's own buffer exceeded one binding: halves next, not the whole
                    // range again.
                    self.operands[0].0.device().context().note_sliced_retry();
                    rows_per_slice = self.rows.div_ceil(2);
                }
                other => return other,
            }
        }
        self.check_sliced_dims()?;
        while rows_per_slice > 1 && !self.fits(rows_per_slice) {
            rows_per_slice = rows_per_slice.div_ceil(2);
        }
        if !self.fits(rows_per_slice) {
            return self.nested(compute);
        }
        let mut results = Vec::new();
        let mut start = 0;
        loop {
            let range = start..(start + rows_per_slice).min(self.rows);
            match self.slice(compute, range.clone()) {
                Ok(result) => results.push(result),
                Err(Error::BufferTooLarge { .. }) if range.len() > 1 => {
                    self.operands[0].0.device().context().note_sliced_retry();
                    rows_per_slice = range.len().div_ceil(2);
                    continue;
                }
                Err(error) => return Err(error),
            }
            start = range.end;
            if start >= self.rows {
                break;
            }
        }
        self.combine(results)
    }

    /// One row at a time, each row an elementwise plan of its own along the next dim above
    /// size 1 (a permuted view of a large tensor reads far apart even within one row of its
    /// first dim); an error when the plan does not nest or no dim is left.
    fn nested<F>(&self, compute: &mut F) -> Result<GpuStorage>
    where
        F: FnMut([(&GpuStorage, &Layout); N], Range<usize>) -> Result<GpuStorage>,
    {
        let (storage, layout, _) = self.operands[0];
        let refuse = || too_large(storage.device(), self.op, layout.numel(), storage.dtype());
        if !self.nests || first_wide_dim(&layout.shape).is_none() {
            return Err(refuse());
        }
        let mut results = Vec::with_capacity(self.rows);
        for row in 0..self.rows {
            let views: Vec<Layout> = self
                .operands
                .iter()
                .map(|&(_, layout, follow)| narrowed(layout, follow, &(row..row + 1)))
                .collect();
            let operands = std::array::from_fn(|i| (self.operands[i].0, &views[i]));
            let plan = Plan::elementwise(self.op, operands);
            if first_wide_dim(&views[0].shape).is_none() {
                return Err(refuse());
            }
            results.push(plan.run_with(compute)?);
        }
        self.combine(results)
    }

    /// `Err` unless every sliced operand has at least `rows` entries along its sliced dim.
    fn check_sliced_dims(&self) -> Result<()> {
        for &(_, layout, follow) in &self.operands {
            if let Follow::Sliced(dim) = follow {
                if layout.shape.get(dim).is_none_or(|&size| size < self.rows) {
                    return Err(Error::invalid(
                        self.op,
                        format!(
                            "operand of shape {:?} does not have {} entries along dim {dim}",
                            layout.shape, self.rows
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Compute rows `range`: each operand's view narrowed to them and bound as one buffer.
    fn slice(
        &self,
        compute: &mut impl FnMut([(&GpuStorage, &Layout); N], Range<usize>) -> Result<GpuStorage>,
        range: Range<usize>,
    ) -> Result<GpuStorage> {
        let mut windows = Vec::with_capacity(N);
        let mut layouts = Vec::with_capacity(N);
        for &(storage, layout, follow) in &self.operands {
            let mut view = narrowed(layout, follow, &range);
            let window = if view.numel() == 0 {
                view.offset = 0;
                storage.window(self.op, 0, 0)?
            } else {
                storage.window(self.op, view.offset, view.extent())?
            };
            view.offset -= window.start();
            windows.push(window);
            layouts.push(view);
        }
        let operands = std::array::from_fn(|i| (windows[i].storage(), &layouts[i]));
        compute(operands, range)
    }

    /// The output from the slices' results.
    fn combine(&self, results: Vec<GpuStorage>) -> Result<GpuStorage> {
        let device = self.operands[0].0.device().clone();
        let mut results = results.into_iter();
        let Some(mut total) = results.next() else {
            return Err(Error::invalid(self.op, "no slice was computed"));
        };
        match self.combine {
            Combine::Concatenate => {
                let dtype = total.dtype();
                let mut pieces = vec![total];
                pieces.extend(results);
                GpuStorage::from_pieces(&device, dtype, pieces)
            }
            Combine::Fold(op) => {
                for partial in results {
                    let flat = Layout::contiguous(&[total.len()]);
                    total = device.context().fold(&total, &flat, &partial, &flat, op)?;
                }
                Ok(total)
            }
        }
    }
}

/// The plan of a reduction over `dims`: slices of the input's first dim above size 1,
/// concatenated when that dim is kept, added (or maxed, minned) when it is reduced.
pub(crate) fn reduction<'a>(
    storage: &'a GpuStorage,
    layout: &'a Layout,
    op: ReduceOp,
    dims: &[usize],
) -> Result<Plan<'a, 1>> {
    let numel = layout.numel();
    let reduced: usize = dims
        .iter()
        .map(|&d| layout.shape.get(d).copied().unwrap_or(1))
        .product();
    let output = numel.checked_div(reduced).unwrap_or(numel);
    let Some(dim) = first_wide_dim(&layout.shape) else {
        return Ok(Plan {
            op: op.name(),
            operands: [(storage, layout, Follow::Whole)],
            rows: 1,
            output_elements: output,
            combine: Combine::Concatenate,
            nests: false,
        });
    };
    let rows = layout.shape[dim];
    let combine = if !dims.contains(&dim) {
        Combine::Concatenate
    } else {
        match op {
            // A mean's slices are summed and divided once (`reduce/contract.rs`).
            ReduceOp::Sum | ReduceOp::Mean => Combine::Fold(BinaryOp::Add),
            ReduceOp::Max => Combine::Fold(BinaryOp::Maximum),
            ReduceOp::Min => Combine::Fold(BinaryOp::Minimum),
            ReduceOp::ArgMax | ReduceOp::ArgMin => {
                // Index results of slices cannot be folded; only refuse when slicing is needed.
                let plan = Plan {
                    op: op.name(),
                    operands: [(storage, layout, Follow::Whole)],
                    rows: 1,
                    output_elements: output,
                    combine: Combine::Concatenate,
                    nests: false,
                };
                return if plan.needed() {
                    Err(Error::invalid(
                        op.name(),
                        format!(
                            "an arg reduction over dim {dim} of a {:?} tensor larger than one GPU buffer is not supported; reduce a smaller view",
                            layout.shape
                        ),
                    ))
                } else {
                    Ok(plan)
                };
            }
        }
    };
    Ok(Plan {
        op: op.name(),
        operands: [(storage, layout, Follow::Sliced(dim))],
        rows,
        output_elements: match combine {
            Combine::Concatenate => output / rows,
            Combine::Fold(_) => output,
        },
        combine,
        nests: false,
    })
}

/// The plan of a primitive that needs each whole line along `dim` (`op`: `argsort`, `cumsum`):
/// slices of the first dim above size 1 when that is not `dim` (lines are independent, the
/// slices' results concatenate); a tensor that would need slicing along `dim` itself is
/// refused (a line's pieces cannot be combined here), like the arg reductions.
pub(crate) fn whole_lines<'a>(
    op: &'static str,
    storage: &'a GpuStorage,
    layout: &'a Layout,
    dim: usize,
) -> Result<Plan<'a, 1>> {
    let numel = layout.numel();
    match first_wide_dim(&layout.shape) {
        Some(wide) if wide != dim => Ok(Plan {
            op,
            operands: [(storage, layout, Follow::Sliced(wide))],
            rows: layout.shape[wide],
            output_elements: numel / layout.shape[wide],
            combine: Combine::Concatenate,
            nests: false,
        }),
        _ => {
            let plan = Plan {
                op,
                operands: [(storage, layout, Follow::Whole)],
                rows: 1,
                output_elements: numel,
                combine: Combine::Concatenate,
                nests: false,
            };
            if plan.needed() {
                Err(Error::invalid(
                    op,
                    format!(
                        "{op} along dim {dim} of a {:?} tensor larger than one GPU buffer is not supported; use a smaller view or another dim",
                        layout.shape
                    ),
                ))
            } else {
                Ok(plan)
            }
        }
    }
}

/// Copy the view `layout` of `source` into the view `dst_layout` of `destination`, either or
/// both in pieces: the region is halved along its first dim above size 1 until the part of
/// the destination it writes lies in one piece and the source range it reads fits one
/// binding; `copy` does each single-buffer copy.
pub(crate) fn copy_into(
    source: &GpuStorage,
    layout: &Layout,
    destination: &mut GpuStorage,
    dst_layout: &Layout,
    copy: &mut impl FnMut(&GpuStorage, &Layout, &mut GpuStorage, &Layout) -> Result<()>,
) -> Result<()> {
    if source.parts().is_none() && destination.parts().is_none() {
        return copy(source, layout, destination, dst_layout);
    }
    if layout.numel() == 0 {
        return Ok(());
    }
    let limit = source.device().context().binding_limit();
    let source_fits =
        (span(layout) as u64).saturating_mul(gpu_element_size(source.dtype())) <= limit;
    let piece = match destination.parts() {
        None => Some((0, None)),
        Some(parts) => {
            let index = parts
                .starts
                .partition_point(|&start| start <= dst_layout.offset)
                .saturating_sub(1);
            let start = parts.starts[index];
            (dst_layout.extent() <= start + parts.pieces[index].len())
                .then_some((start, Some(index)))
        }
    };
    if let (true, Some((start, index))) = (source_fits, piece) {
        let window = source.window("copy", layout.offset, layout.extent())?;
        let mut view = layout.clone();
        view.offset -= window.start();
        let mut dst_view = dst_layout.clone();
        dst_view.offset -= start;
        return match index {
            None => copy(window.storage(), &view, destination, &dst_view),
            Some(index) => {
                let parts = destination
                    .parts
                    .as_mut()
                    .and_then(std::sync::Arc::get_mut)
                    .ok_or_else(|| {
                        Error::invalid(
                            "copy",
                            "the destination in pieces is shared; copy into a fresh tensor",
                        )
                    })?;
                copy(window.storage(), &view, &mut parts.pieces[index], &dst_view)
            }
        };
    }
    let Some(dim) = first_wide_dim(&layout.shape) else {
        return Err(too_large(
            source.device(),
            "copy",
            layout.numel(),
            source.dtype(),
        ));
    };
    let half = layout.shape[dim] / 2;
    let size = layout.shape[dim];
    for range in [0..half, half..size] {
        copy_into(
            source,
            &layout.narrow(dim, range.start, range.len()),
            destination,
            &dst_layout.narrow(dim, range.start, range.len()),
            copy,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::tests::support::gpu_device;
    use crate::DType;

    /// A computation whose own buffer is too large for more than three rows at a time (as a
    /// kernel's internal buffer can be) runs whole once, then in halves until its slices fit,
    /// each refusal counted once, and the slices' results concatenate to the whole.
    #[test]
    fn refused_computations_are_retried_in_halves() {
        let Some(device) = gpu_device() else { return };
        let data: Vec<f32> = (0..60).map(|i| i as f32 * 0.5 - 7.0).collect();
        let storage = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(data.clone())),
        )
        .unwrap();
        let layout = Layout::contiguous(&[12, 5]);
        let retries_before = device.context().memory_stats().sliced_retries;
        let mut attempts = Vec::new();
        let result = Plan::elementwise("copy", [(&storage, &layout)])
            .run(|[(slice, view)], rows| {
                attempts.push(rows.clone());
                if rows.len() > 3 {
                    return Err(too_large(
                        slice.device(),
                        "copy",
                        rows.len() * 1000,
                        DType::F32,
                    ));
                }
                let CpuStorage::F32(values) = slice.to_cpu()? else {
                    unreachable!("an f32 storage reads back as f32")
                };
                let start = view.offset;
                let copy = values[start..start + view.numel()].to_vec();
                GpuStorage::from_cpu(
                    slice.device(),
                    &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(copy)),
                )
            })
            .unwrap();
        assert_eq!(attempts, [0..12, 0..6, 0..3, 3..6, 6..9, 9..12]);
        assert_eq!(
            device.context().memory_stats().sliced_retries - retries_before,
            2
        );
        assert_eq!(
            result.to_cpu().unwrap(),
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(data))
        );

        // One element refused cannot be sliced: the refusal is the answer, and other errors
        // are never retried.
        let row = Layout::contiguous(&[1, 1]);
        let mut calls = 0;
        let refused = Plan::elementwise("copy", [(&storage, &row)]).run(|[(slice, _)], _| {
            calls += 1;
            Err(too_large(slice.device(), "copy", 1 << 40, DType::F32))
        });
        assert!(
            matches!(refused, Err(Error::BufferTooLarge { .. })),
            "{refused:?}"
        );
        assert_eq!(calls, 1);
        let mut calls = 0;
        let failed = Plan::elementwise("copy", [(&storage, &layout)]).run(|_, _| {
            calls += 1;
            Err(Error::invalid("copy", "not a size problem"))
        });
        assert!(
            matches!(failed, Err(Error::InvalidArgument { .. })),
            "{failed:?}"
        );
        assert_eq!(calls, 1);
    }
}
