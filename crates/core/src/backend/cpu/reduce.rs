//! CPU reductions over any set of dims. The input view is split into "kept" positions (one per
//! output element) and "reduced" offsets (the block each output folds over); outputs are
//! computed in parallel when there are many. Float sums accumulate in f64.

use crate::backend::cpu::HostBuffer;
use rayon::prelude::*;

use super::{unsupported_dtype, CpuStorage, FloatElement, IntegerElement, PARALLEL_THRESHOLD};
use crate::backend::checks::{check_reduce_dims, check_view};
use crate::backend::contract::Reduction;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::ReduceOp;

/// The storage positions each output starts from, and the relative offsets it folds over.
fn split_positions(layout: &Layout, dims: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut kept = layout.clone();
    for &d in dims {
        kept.shape[d] = 1;
    }
    let reduced = Layout {
        shape: dims.iter().map(|&d| layout.shape[d]).collect(),
        strides: dims.iter().map(|&d| layout.strides[d]).collect(),
        offset: 0,
    };
    (kept.positions().collect(), reduced.positions().collect())
}

fn fold_outputs<T: Copy + Send + Sync, U: Send>(
    data: &[T],
    bases: &[usize],
    offsets: &[usize],
    fold: impl Fn(&mut dyn Iterator<Item = T>) -> U + Sync + Send,
) -> Vec<U> {
    let work = |&base: &usize| fold(&mut offsets.iter().map(|&o| data[base + o]));
    if bases.len() * offsets.len().max(1) >= PARALLEL_THRESHOLD && bases.len() > 1 {
        bases.par_iter().map(work).collect()
    } else {
        bases.iter().map(work).collect()
    }
}

/// Index of the winning element (first occurrence; NaN wins, as in PyTorch).
fn arg_best<C: PartialOrd + Copy>(
    values: &mut dyn Iterator<Item = C>,
    better: fn(C, C) -> bool,
    is_nan: fn(C) -> bool,
) -> i32 {
    let mut best: Option<(usize, C)> = None;
    for (i, v) in values.enumerate() {
        best = match best {
            None => Some((i, v)),
            Some((_, b)) if is_nan(b) => best,
            Some(_) if is_nan(v) => Some((i, v)),
            Some((_, b)) if better(v, b) => Some((i, v)),
            keep => keep,
        };
    }
    best.map(|(i, _)| i as i32).unwrap_or(0)
}

fn reduce_float<T: FloatElement>(
    data: &[T],
    bases: &[usize],
    offsets: &[usize],
    op: ReduceOp,
) -> CpuResult<T> {
    use num_traits::Float;
    match op {
        ReduceOp::Sum => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::from_f64(it.map(|x| x.up_f64()).sum::<f64>())
        })),
        ReduceOp::Mean => {
            let count = offsets.len() as f64;
            CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
                T::from_f64(it.map(|x| x.up_f64()).sum::<f64>() / count)
            }))
        }
        ReduceOp::Max => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::down(it.map(|x| x.up()).fold(T::Compute::neg_infinity(), |a, b| {
                if a.is_nan() || b.is_nan() {
                    T::Compute::nan()
                } else {
                    a.max(b)
                }
            }))
        })),
        ReduceOp::Min => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::down(it.map(|x| x.up()).fold(T::Compute::infinity(), |a, b| {
                if a.is_nan() || b.is_nan() {
                    T::Compute::nan()
                } else {
                    a.min(b)
                }
            }))
        })),
        ReduceOp::ArgMax => CpuResult::Indices(fold_outputs(data, bases, offsets, |it| {
            arg_best(&mut it.map(|x| x.up_f64()), |a, b| a > b, f64::is_nan)
        })),
        ReduceOp::ArgMin => CpuResult::Indices(fold_outputs(data, bases, offsets, |it| {
            arg_best(&mut it.map(|x| x.up_f64()), |a, b| a < b, f64::is_nan)
        })),
    }
}

fn reduce_integer<T: IntegerElement>(
    data: &[T],
    bases: &[usize],
    offsets: &[usize],
    op: ReduceOp,
) -> Option<CpuResult<T>> {
    let never_nan: fn(i64) -> bool = |_| false;
    Some(match op {
        ReduceOp::Sum => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::down(it.map(|x| x.up()).fold(0i64, i64::wrapping_add))
        })),
        // Integer means are refused (`CpuStorage::reduce`): PyTorch has no integer mean.
        ReduceOp::Mean => return None,
        ReduceOp::Max => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::down(it.map(|x| x.up()).max().unwrap_or(0))
        })),
        ReduceOp::Min => CpuResult::Values(fold_outputs(data, bases, offsets, |it| {
            T::down(it.map(|x| x.up()).min().unwrap_or(0))
        })),
        ReduceOp::ArgMax => CpuResult::Indices(fold_outputs(data, bases, offsets, |it| {
            arg_best(&mut it.map(|x| x.up()), |a, b| a > b, never_nan)
        })),
        ReduceOp::ArgMin => CpuResult::Indices(fold_outputs(data, bases, offsets, |it| {
            arg_best(&mut it.map(|x| x.up()), |a, b| a < b, never_nan)
        })),
    })
}

/// An integer reduction's result, or the refusal of the one it has none for (a mean).
fn integer<T>(result: Option<CpuResult<T>>, op: ReduceOp, dtype: DType) -> Result<CpuResult<T>> {
    result.ok_or_else(|| unsupported_dtype(op.name(), dtype))
}

enum CpuResult<T> {
    Values(Vec<T>),
    Indices(Vec<i32>),
}

macro_rules! wrap_reduce {
    ($result:expr, $variant:ident) => {
        match $result {
            CpuResult::Values(v) => CpuStorage::$variant(HostBuffer::from(v)),
            CpuResult::Indices(v) => CpuStorage::I32(HostBuffer::from(v)),
        }
    };
}

impl Reduction for CpuStorage {
    /// Reduce the view over `dims` (sorted, unique, in range); keepdim-shaped output.
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<CpuStorage> {
        check_view(op.name(), layout, self.len())?;
        check_reduce_dims(op.name(), layout, dims, op.is_arg())?;
        let reduced_count: usize = dims.iter().map(|&d| layout.shape[d]).product();
        // An empty sum is 0 and an empty mean NaN (0 / 0), as in PyTorch.
        let empty_allowed = matches!(op, ReduceOp::Sum | ReduceOp::Mean);
        if reduced_count == 0 && !empty_allowed && layout.numel() == 0 && !dims.is_empty() {
            return Err(Error::InvalidShape {
                op: op.name(),
                shape: layout.shape.clone(),
                message: "cannot reduce over an empty dim (no identity for this reduction)".into(),
            });
        }
        let (bases, offsets) = split_positions(layout, dims);
        Ok(match self {
            CpuStorage::F32(v) => wrap_reduce!(reduce_float(v, &bases, &offsets, op), F32),
            CpuStorage::F16(v) => wrap_reduce!(reduce_float(v, &bases, &offsets, op), F16),
            CpuStorage::F64(v) => wrap_reduce!(reduce_float(v, &bases, &offsets, op), F64),
            CpuStorage::I32(v) => {
                wrap_reduce!(
                    integer(reduce_integer(v, &bases, &offsets, op), op, self.dtype())?,
                    I32
                )
            }
            CpuStorage::U32(v) => {
                wrap_reduce!(
                    integer(reduce_integer(v, &bases, &offsets, op), op, self.dtype())?,
                    U32
                )
            }
            CpuStorage::U8(v) => {
                wrap_reduce!(
                    integer(reduce_integer(v, &bases, &offsets, op), op, self.dtype())?,
                    U8
                )
            }
            CpuStorage::BF16(_) | CpuStorage::Bool(_) => {
                return Err(unsupported_dtype(op.name(), self.dtype()))
            }
        })
    }
}
