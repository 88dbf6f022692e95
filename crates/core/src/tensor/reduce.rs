//! Reductions over any set of dims with PyTorch's `keepdim`. The primitive always keeps dims;
//! `keepdim = false` is a reshape afterwards (a view), so autograd needs one rule per reduction.

use super::Tensor;
use crate::autograd::GradFn;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::op::ReduceOp;
use crate::shape::resolve_dim;

impl Tensor {
    /// Resolve, sort and deduplicate dims; an empty list means every dim.
    pub(super) fn reduce_dims(&self, op: &'static str, dims: &[isize]) -> Result<Vec<usize>> {
        if dims.is_empty() {
            return Ok((0..self.rank()).collect());
        }
        let mut resolved = dims
            .iter()
            .map(|&d| resolve_dim(op, d, self.rank(), self.shape()))
            .collect::<Result<Vec<_>>>()?;
        resolved.sort_unstable();
        resolved.dedup();
        Ok(resolved)
    }

    /// Apply a reduction primitive over `dims`.
    pub fn reduce(&self, op: ReduceOp, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if op == ReduceOp::Sum {
            if let Some(wide) = self.upcast_if_autocast()? {
                return wide.reduce(op, dims, keepdim);
            }
            // PyTorch sums Bool and uint8 into its default integer dtype (int64; I32 here),
            // so that `pred.eq(&target)?.sum_all()` counts matches and never wraps at 255.
            if matches!(self.dtype(), DType::Bool | DType::U8) {
                return self.to_dtype(DType::I32)?.reduce(op, dims, keepdim);
            }
        }
        let dims = self.reduce_dims(op.name(), dims)?;
        if op.is_arg() && dims.len() != 1 && self.rank() > 0 {
            return Err(Error::invalid(op.name(), "reduces over exactly one dim"));
        }
        let mut kept_shape = self.shape().to_vec();
        for &d in &dims {
            kept_shape[d] = 1;
        }
        let storage = self.storage().reduce(self.layout(), op, &dims)?;
        let result_dtype = if op.is_arg() {
            DType::I32
        } else {
            self.dtype()
        };
        let grad_fn = Tensor::record(&[self], result_dtype, || GradFn::Reduce {
            input: self.clone(),
            op,
            dims: dims.clone(),
        });
        let kept = Tensor::from_storage(storage, &kept_shape, grad_fn);
        if keepdim {
            return Ok(kept);
        }
        let squeezed: Vec<usize> = self
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !dims.contains(i))
            .map(|(_, &s)| s)
            .collect();
        kept.reshape(squeezed)
    }

    /// Sum over `dims` (empty = all). Bool and U8 tensors sum into I32 (PyTorch: int64), so
    /// `pred.eq(&target)?.sum_all()` counts the matches.
    pub fn sum(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, dims, keepdim)
    }

    /// Sum of every element (a zero-dim tensor).
    pub fn sum_all(&self) -> Result<Tensor> {
        self.sum(&[], false)
    }

    /// Mean over `dims` (empty = all). Floats in one pass that keeps their dtype (under
    /// autocast too, as PyTorch's `mean`; the sum accumulates in f32 or wider); integer
    /// dtypes as their sum divided by the count. A Bool tensor is an error, as in PyTorch
    /// (there is no dtype to infer for the result): convert it first, as in
    /// `pred.eq(&target)?.to_dtype(DType::F32)?.mean_all()` (PyTorch's `.float().mean()`).
    pub fn mean(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if self.dtype().is_float() {
            return self.reduce(ReduceOp::Mean, dims, keepdim);
        }
        if self.dtype() == DType::Bool {
            return Err(Error::Unsupported {
                op: "mean",
                dtype: DType::Bool,
                device: self.device().to_string(),
                hint: " (as in PyTorch, a bool mean has no result dtype); convert first: \
                       .to_dtype(DType::F32)?.mean(..), PyTorch's .float().mean()"
                    .into(),
            });
        }
        let resolved = self.reduce_dims("mean", dims)?;
        let count: usize = resolved.iter().map(|&d| self.shape()[d]).product();
        self.sum(dims, keepdim)?.div_scalar(count.max(1) as f64)
    }

    /// Mean of every element.
    pub fn mean_all(&self) -> Result<Tensor> {
        self.mean(&[], false)
    }

    /// Maximum over `dims` (PyTorch's `amax`; ties share the gradient).
    pub fn max(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, dims, keepdim)
    }

    /// Minimum over `dims` (PyTorch's `amin`).
    pub fn min(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, dims, keepdim)
    }

    /// Largest element.
    pub fn max_all(&self) -> Result<Tensor> {
        self.max(&[], false)
    }

    /// Smallest element.
    pub fn min_all(&self) -> Result<Tensor> {
        self.min(&[], false)
    }

    /// Index (I32) of the largest element along `dim` (first occurrence).
    pub fn argmax(&self, dim: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::ArgMax, &[dim], keepdim)
    }

    /// Index (I32) of the smallest element along `dim` (first occurrence).
    pub fn argmin(&self, dim: isize, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::ArgMin, &[dim], keepdim)
    }

    /// Variance over `dims`; `unbiased` divides by `n - 1` (PyTorch's default).
    pub fn var(&self, dims: &[isize], keepdim: bool, unbiased: bool) -> Result<Tensor> {
        let resolved = self.reduce_dims("var", dims)?;
        let count: usize = resolved.iter().map(|&d| self.shape()[d]).product();
        let centered = self.sub(&self.mean(dims, true)?)?;
        let divisor = if unbiased {
            count.saturating_sub(1)
        } else {
            count
        };
        centered
            .square()?
            .sum(dims, keepdim)?
            .div_scalar(divisor as f64)
    }
}
