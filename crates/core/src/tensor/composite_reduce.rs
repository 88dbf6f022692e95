//! Reductions written as composites of existing primitives, so they run on every backend and
//! take their gradients from the primitives' rules: `max_dim`/`min_dim` (values and indices),
//! `any`/`all`, `std`, `norm` (the scans `cumsum`, `cumprod` and `prod`: `composite_scan.rs`).

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};

impl Tensor {
    /// Largest values along `dim` and their `I32` indices (`torch.max(x, dim)`); the first
    /// occurrence wins on ties. The gradient flows through the values.
    pub fn max_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        Ok((self.max(&[dim], keepdim)?, self.argmax(dim, keepdim)?))
    }

    /// Smallest values along `dim` and their `I32` indices (`torch.min(x, dim)`).
    pub fn min_dim(&self, dim: isize, keepdim: bool) -> Result<(Tensor, Tensor)> {
        Ok((self.min(&[dim], keepdim)?, self.argmin(dim, keepdim)?))
    }

    /// Nonzero elements as an F32 tensor of 0/1 (NaN counts as nonzero, as in PyTorch).
    fn nonzero_indicator(&self) -> Result<Tensor> {
        let as_float = if self.dtype().is_float() {
            self.detach()
        } else {
            self.to_dtype(DType::F32)?
        };
        as_float.ne_scalar(0.0)?.to_dtype(DType::F32)
    }

    /// Whether any element over `dims` (all dims when empty) is nonzero: a Bool tensor
    /// (`torch.any`).
    pub fn any(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.nonzero_indicator()?.max(dims, keepdim)?.gt_scalar(0.5)
    }

    /// Whether every element over `dims` (all dims when empty) is nonzero: a Bool tensor
    /// (`torch.all`).
    pub fn all(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        self.nonzero_indicator()?.min(dims, keepdim)?.gt_scalar(0.5)
    }

    /// Standard deviation over `dims`: `sqrt(var)`; `unbiased` divides by `n - 1`.
    pub fn std(&self, dims: &[isize], unbiased: bool, keepdim: bool) -> Result<Tensor> {
        self.var(dims, keepdim, unbiased)?.sqrt()
    }

    /// The vector `p`-norm over `dims` (all dims when empty), `torch.linalg.vector_norm`:
    /// `p = 1` sums magnitudes, `p = 2` is Euclidean, `p = f64::INFINITY` the largest
    /// magnitude, any other `p > 0` is `(Σ|x|^p)^(1/p)`.
    pub fn norm(&self, p: f64, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if p.is_nan() || p <= 0.0 {
            return Err(Error::invalid(
                "norm",
                format!("order p must be positive (1, 2, inf, ...), got {p}"),
            ));
        }
        if p == f64::INFINITY {
            self.abs()?.max(dims, keepdim)
        } else if p == 1.0 {
            self.abs()?.sum(dims, keepdim)
        } else if p == 2.0 {
            self.square()?.sum(dims, keepdim)?.sqrt()
        } else {
            self.abs()?
                .pow_scalar(p)?
                .sum(dims, keepdim)?
                .pow_scalar(1.0 / p)
        }
    }
}
