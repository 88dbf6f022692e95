//! Products and running products written as composites of existing primitives, so they run
//! on every backend and take their gradients from the primitives' rules, and the running sum's
//! entry point:
//! - `prod` multiplies the two halves of each reduced dim until one slot is left (a tree of
//!   `log2(n)` elementwise products). Its gradient is the product rule through that tree, so
//!   it is exact when inputs hold zeros (one zero or several), with no division by the input.
//! - `cumprod` is a Hillis–Steele scan: `log2(n)` steps of `x * shifted(x)`, each the size of
//!   the input (O(n) memory per step, O(n log n) work), in place of an `n × n` triangular
//!   matrix; its gradient goes through the products, so zeros need no division.
//! - `cumsum` is the `cumsum` primitive (the scan family: one GPU kernel) with its own
//!   gradient rule, `GradFn::Cumsum`.

use super::Tensor;
use crate::autograd::GradFn;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::resolve_dim;

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

    /// Running sum along `dim` (`torch.cumsum`): one primitive (one GPU kernel), with its own
    /// gradient (the reversed running sum of the output gradient). Floats keep their dtype
    /// (under autocast F16 sums in f32 and gives f32, as PyTorch's autocast does); I32 and U32
    /// wrap; Bool and U8 are summed as I32 (PyTorch gives int64).
    pub fn cumsum(&self, dim: isize) -> Result<Tensor> {
        const OP: &str = "cumsum";
        if let Some(wide) = self.upcast_if_autocast()? {
            return wide.cumsum(dim);
        }
        if matches!(self.dtype(), DType::Bool | DType::U8) {
            return self.to_dtype(DType::I32)?.cumsum(dim);
        }
        if self.rank() == 0 {
            return self.copy();
        }
        let d = resolve_dim(OP, dim, self.rank(), self.shape())?;
        let storage = self.storage().cumsum(self.layout(), d)?;
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::Cumsum {
            input: self.clone(),
            dim: d,
        });
        Ok(Tensor::from_storage(storage, self.shape(), grad_fn))
    }

    /// Running product along `dim` (`torch.cumprod`), for float tensors; the gradient is
    /// exact when the input holds zeros.
    pub fn cumprod(&self, dim: isize) -> Result<Tensor> {
        self.running_product(dim)
    }

    /// Hillis–Steele inclusive product: after the step with shift `s`, slot `i` multiplies
    /// slots `i - 2s + 1 ..= i`.
    fn running_product(&self, dim: isize) -> Result<Tensor> {
        const OP: &str = "cumprod";
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "supports float tensors, got {}; convert with .to_dtype() first",
                    self.dtype()
                ),
            ));
        }
        if self.rank() == 0 {
            return Ok(self.clone());
        }
        let d = resolve_dim(OP, dim, self.rank(), self.shape())?;
        let signed = d as isize;
        let length = self.shape()[d];
        let mut current = self.clone();
        let mut shift = 1;
        while shift < length {
            let mut fill_shape = self.shape().to_vec();
            fill_shape[d] = shift;
            let fill = Tensor::full(&fill_shape, 1.0, self.dtype(), self.device())?;
            let shifted = Tensor::cat(
                &[&fill, &current.narrow(signed, 0, length - shift)?],
                signed,
            )?;
            current = current.mul(&shifted)?;
            shift *= 2;
        }
        Ok(current)
    }
}
