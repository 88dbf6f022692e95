//! Products and running sums written as composites of existing primitives, so they run on
//! every backend and take their gradients from the primitives' rules:
//! - `prod` multiplies the two halves of each reduced dim until one slot is left (a tree of
//!   `log2(n)` elementwise products). Its gradient is the product rule through that tree, so
//!   it is exact when inputs hold zeros (one zero or several), with no division by the input.
//! - `cumsum` and `cumprod` are Hillis–Steele scans: `log2(n)` steps of `x op shifted(x)`,
//!   each the size of the input (O(n) memory per step, O(n log n) work), in place of an
//!   `n × n` triangular matrix. `cumsum`'s gradient is the reversed running sum of the output
//!   gradient (each step's adjoint is a shift the other way); `cumprod`'s goes through the
//!   products, so zeros need no division either.

use super::Tensor;
use crate::error::{Error, Result};
use crate::shape::resolve_dim;

/// Which scan `scan` runs.
#[derive(Clone, Copy)]
enum Scan {
    Sum,
    Product,
}

impl Tensor {
    /// Product over `dims` (all dims when empty), `torch.prod`. The gradient is exact when
    /// the input holds zeros. An empty dim gives 1.
    pub fn prod(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        let resolved = self.reduce_dims("prod", dims)?;
        let mut result = self.clone();
        for &d in &resolved {
            result = result.prod_dim_keep(d)?;
        }
        if !keepdim {
            for &d in resolved.iter().rev() {
                result = result.squeeze(d as isize)?;
            }
        }
        Ok(result)
    }

    /// The product along `dim`, keeping it with size 1 (halving tree).
    fn prod_dim_keep(&self, dim: usize) -> Result<Tensor> {
        let signed = dim as isize;
        let size = self.shape()[dim];
        if size == 0 {
            let mut shape = self.shape().to_vec();
            shape[dim] = 1;
            return Tensor::ones(&shape, self.dtype(), self.device());
        }
        let mut current = self.clone();
        let mut length = size;
        while length > 1 {
            let half = length / 2;
            let paired = current
                .narrow(signed, 0, half)?
                .mul(&current.narrow(signed, half, half)?)?;
            current = if length % 2 == 1 {
                Tensor::cat(&[&paired, &current.narrow(signed, length - 1, 1)?], signed)?
            } else {
                paired
            };
            length = current.shape()[dim];
        }
        Ok(current)
    }

    /// Running sum along `dim` (`torch.cumsum`), for float tensors.
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        self.scan("cumsum", dim, Scan::Sum)
    }

    /// Running product along `dim` (`torch.cumprod`), for float tensors; the gradient is
    /// exact when the input holds zeros.
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        self.scan("cumprod", dim, Scan::Product)
    }

    /// Hillis–Steele inclusive scan: after the step with shift `s`, slot `i` combines slots
    /// `i - 2s + 1 ..= i`.
    fn scan(&self, op: &'static str, dim: isize, scan: Scan) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                op,
                format!(
                    "supports float tensors, got {}; convert with .to_dtype() first",
                    self.dtype()
                ),
            ));
        }
        if self.rank() == 0 {
            return Ok(self.clone());
        }
        let d = resolve_dim(op, dim, self.rank(), self.shape())?;
        let signed = d as isize;
        let length = self.shape()[d];
        let identity = match scan {
            Scan::Sum => 0.0,
            Scan::Product => 1.0,
        };
        let mut current = self.clone();
        let mut shift = 1;
        while shift < length {
            let mut fill_shape = self.shape().to_vec();
            fill_shape[d] = shift;
            let fill = Tensor::full(&fill_shape, identity, self.dtype(), self.device())?;
            let shifted = Tensor::cat(
                &[&fill, &current.narrow(signed, 0, length - shift)?],
                signed,
            )?;
            current = match scan {
                Scan::Sum => current.add(&shifted)?,
                Scan::Product => current.mul(&shifted)?,
            };
            shift *= 2;
        }
        Ok(current)
    }
}
