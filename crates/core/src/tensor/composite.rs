//! Composite ops written once in primitive tensor ops, so they run on every backend and get
//! their gradients from the primitives' rules: softmax (over a dim other than the last: the
//! last is the `softmax_last` primitive, `rows.rs`), log_softmax, logsumexp, and the
//! tanh-approximation GELU.

use super::Tensor;
use crate::dtype::DType;
use crate::error::Result;

impl Tensor {
    /// `log(sum(exp(x)))` over `dims`, computed stably by subtracting the max first.
    pub fn logsumexp(&self, dims: &[isize], keepdim: bool) -> Result<Tensor> {
        if let Some(wide) = self.upcast_if_autocast()? {
            return wide.logsumexp(dims, keepdim);
        }
        // An all -inf row has max -inf, and -inf - (-inf) is NaN: clamp the shift to the
        // dtype's lowest finite value instead (one op rather than a select).
        let lowest = match self.dtype() {
            DType::F16 => -65504.0,
            DType::BF16 => half::bf16::MIN.to_f64(),
            DType::F64 => f64::MIN,
            DType::F32 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => f32::MIN as f64,
        };
        let finite_max = self.max(dims, true)?.detach().maximum_scalar(lowest)?;
        let summed = self
            .sub(&finite_max)?
            .exp()?
            .sum(dims, true)?
            .log()?
            .add(&finite_max)?;
        if keepdim {
            Ok(summed)
        } else {
            let mut resolved: Vec<usize> = if dims.is_empty() {
                (0..self.rank()).collect()
            } else {
                dims.iter()
                    .map(|&d| crate::shape::resolve_dim("logsumexp", d, self.rank(), self.shape()))
                    .collect::<Result<_>>()?
            };
            resolved.sort_unstable();
            let shape: Vec<usize> = self
                .shape()
                .iter()
                .enumerate()
                .filter(|(i, _)| !resolved.contains(i))
                .map(|(_, &s)| s)
                .collect();
            summed.reshape(shape)
        }
    }

    /// Softmax along `dim` (stable: the max is subtracted first).
    pub fn softmax(&self, dim: isize) -> Result<Tensor> {
        if let Some(wide) = self.upcast_if_autocast()? {
            return wide.softmax(dim);
        }
        // Over the last dim: one primitive (one GPU kernel), differentiated by its own rule.
        let rank = self.rank();
        if rank > 0
            && self.dtype().is_float()
            && crate::shape::resolve_dim("softmax", dim, rank, self.shape())? == rank - 1
        {
            return self.softmax_last_dim(false);
        }
        let shifted = self.sub(&self.max(&[dim], true)?.detach())?;
        let exp = shifted.exp()?;
        exp.div(&exp.sum(&[dim], true)?)
    }

    /// Log-softmax along `dim`: `x - logsumexp(x)` (over the last dim one primitive, one GPU
    /// kernel, differentiated by its own rule).
    pub fn log_softmax(&self, dim: isize) -> Result<Tensor> {
        if let Some(wide) = self.upcast_if_autocast()? {
            return wide.log_softmax(dim);
        }
        let rank = self.rank();
        if rank > 0
            && self.dtype().is_float()
            && crate::shape::resolve_dim("log_softmax", dim, rank, self.shape())? == rank - 1
        {
            return self.log_softmax_last_dim();
        }
        self.sub(&self.logsumexp(&[dim], true)?)
    }

    /// GELU with the tanh approximation (`torch.nn.functional.gelu(x, approximate='tanh')`):
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    pub fn gelu_tanh(&self) -> Result<Tensor> {
        let inner = self
            .add(&self.pow_scalar(3.0)?.mul_scalar(0.044715)?)?
            .mul_scalar((2.0 / std::f64::consts::PI).sqrt())?;
        self.mul_scalar(0.5)?.mul(&inner.tanh()?.add_scalar(1.0)?)
    }

    /// GELU with PyTorch's `approximate` argument: `"none"` (the exact erf form) or `"tanh"`.
    pub fn gelu_approximate(&self, approximate: &str) -> Result<Tensor> {
        match approximate {
            "none" => self.gelu(),
            "tanh" => self.gelu_tanh(),
            other => Err(crate::error::Error::invalid(
                "gelu",
                format!("approximate must be \"none\" or \"tanh\", got {other:?}"),
            )),
        }
    }
}
