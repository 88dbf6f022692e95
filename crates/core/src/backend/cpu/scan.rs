//! CPU running sums (`Scan::cumsum`): each line along the dim summed in order, floats in their
//! compute type (f32 for F16), I32 and U32 wrapping; lines in parallel when large. The
//! reference of the GPU's `scan/` kernels.

use crate::backend::cpu::HostBuffer;
use rayon::prelude::*;

use super::{unsupported_dtype, CpuStorage, FloatElement, PARALLEL_THRESHOLD};
use crate::backend::checks::{check_dim, check_view};
use crate::backend::contract::Scan;
use crate::error::Result;
use crate::layout::Layout;

/// The view's values with `dim` moved last (row-major), and the line length.
fn lines_last<T: Copy>(data: &[T], layout: &Layout, dim: usize) -> (Vec<T>, usize) {
    let last = layout.rank() - 1;
    let mut permutation: Vec<usize> = (0..layout.rank()).collect();
    permutation.swap(dim, last);
    let moved = layout.permute(&permutation);
    (
        moved.positions().map(|at| data[at]).collect(),
        layout.shape[dim],
    )
}

/// `values` (lines of `length`, `dim` last) back in the view's own row-major order.
fn restore<T: Copy>(values: Vec<T>, layout: &Layout, dim: usize) -> Vec<T> {
    let last = layout.rank() - 1;
    if dim == last {
        return values;
    }
    let mut permutation: Vec<usize> = (0..layout.rank()).collect();
    permutation.swap(dim, last);
    let mut moved_shape = layout.shape.clone();
    moved_shape.swap(dim, last);
    // Position of each element of the view (row-major) in the moved order.
    let back = Layout::contiguous(&moved_shape).permute(&permutation);
    back.positions().map(|at| values[at]).collect()
}

/// Run `line_op` on every line, in parallel when large.
fn each_line<T: Send>(values: &mut [T], length: usize, line_op: impl Fn(&mut [T]) + Send + Sync) {
    if length == 0 {
        return;
    }
    if values.len() >= PARALLEL_THRESHOLD {
        values.par_chunks_mut(length).for_each(line_op);
    } else {
        values.chunks_mut(length).for_each(line_op);
    }
}

fn float_cumsum<T: FloatElement>(data: &[T], layout: &Layout, dim: usize) -> Vec<T> {
    let (mut values, length) = lines_last(data, layout, dim);
    each_line(&mut values, length, |line| {
        let mut running = <T::Compute as num_traits::Zero>::zero();
        for slot in line {
            running = running + slot.up();
            *slot = T::down(running);
        }
    });
    restore(values, layout, dim)
}

fn wrapping_cumsum<T: Copy + Default + Send + Sync>(
    data: &[T],
    layout: &Layout,
    dim: usize,
    add: fn(T, T) -> T,
) -> Vec<T> {
    let (mut values, length) = lines_last(data, layout, dim);
    each_line(&mut values, length, |line| {
        let mut running = T::default();
        for slot in line {
            running = add(running, *slot);
            *slot = running;
        }
    });
    restore(values, layout, dim)
}

impl Scan for CpuStorage {
    fn cumsum(&self, layout: &Layout, dim: usize) -> Result<CpuStorage> {
        const OP: &str = "cumsum";
        check_view(OP, layout, self.len())?;
        check_dim(OP, layout, dim)?;
        Ok(match self {
            CpuStorage::F32(data) => {
                CpuStorage::F32(HostBuffer::from(float_cumsum(data, layout, dim)))
            }
            CpuStorage::F64(data) => {
                CpuStorage::F64(HostBuffer::from(float_cumsum(data, layout, dim)))
            }
            CpuStorage::F16(data) => {
                CpuStorage::F16(HostBuffer::from(float_cumsum(data, layout, dim)))
            }
            CpuStorage::I32(data) => CpuStorage::I32(HostBuffer::from(wrapping_cumsum(
                data,
                layout,
                dim,
                i32::wrapping_add,
            ))),
            CpuStorage::U32(data) => CpuStorage::U32(HostBuffer::from(wrapping_cumsum(
                data,
                layout,
                dim,
                u32::wrapping_add,
            ))),
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }
}
