//! Indexing ops: `index_select` (and `index_select_wrapping`, negative indices from the end),
//! `gather`, `scatter_add`, `index_add` (primitives) and `one_hot`.

use super::Tensor;
use crate::autograd::{self, GradFn};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::resolve_dim;

impl Tensor {
    fn check_indices(&self, op: &'static str, indices: &Tensor) -> Result<()> {
        self.same_device(op, indices)?;
        if !indices.dtype().is_index() {
            return Err(Error::invalid(
                op,
                format!(
                    "indices must have an integer dtype (int32, uint32, uint8), got {}",
                    indices.dtype()
                ),
            ));
        }
        Ok(())
    }

    /// Entries of `dim` picked by a 1-D index tensor (`torch.index_select`).
    pub fn index_select(&self, dim: isize, indices: &Tensor) -> Result<Tensor> {
        self.select(dim, indices, false)
    }

    /// [`Tensor::index_select`] where a negative index counts from the end of `dim` (`-1` is
    /// the last entry), the rule of Python's and NumPy's `x[idx]`; any other index outside
    /// `[-size, size)` is an error as there. On a GPU the kernel wraps the indices itself
    /// (no extra ops); the gradient wraps them once if one is needed.
    pub fn index_select_wrapping(&self, dim: isize, indices: &Tensor) -> Result<Tensor> {
        self.select(dim, indices, true)
    }

    /// `index_select`, counting negative indices from the end where `wrap`.
    fn select(&self, dim: isize, indices: &Tensor, wrap: bool) -> Result<Tensor> {
        const OP: &str = "index_select";
        self.check_indices(OP, indices)?;
        let d = resolve_dim(OP, dim, self.rank(), self.shape())?;
        if indices.rank() != 1 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: indices.shape().to_vec(),
                message: "indices must be 1-D".into(),
            });
        }
        let storage = {
            let (s, i) = (self.storage(), indices.storage());
            if wrap {
                s.index_select_wrapping(self.layout(), &i, indices.layout(), d)?
            } else {
                s.index_select(self.layout(), &i, indices.layout(), d)?
            }
        };
        let mut shape = self.shape().to_vec();
        shape[d] = indices.numel();
        let tracked = autograd::is_grad_enabled() && self.is_tracked() && self.dtype().is_float();
        let recorded = if wrap && tracked && indices.dtype() == DType::I32 {
            // The gradient's index_add takes indices in range: wrap the negative ones.
            let negative = indices.lt_scalar(0.0)?.to_dtype(DType::I32)?;
            indices.add(&negative.mul_scalar(self.shape()[d] as f64)?)?
        } else {
            indices.clone()
        };
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::IndexSelect {
            input: self.clone(),
            indices: recorded,
            dim: d,
        });
        Ok(Tensor::from_storage(storage, &shape, grad_fn))
    }

    /// `out[i][j] = self[i][indices[i][j]]` along `dim` (`torch.gather`).
    pub fn gather(&self, dim: isize, indices: &Tensor) -> Result<Tensor> {
        self.check_indices("gather", indices)?;
        let d = resolve_dim("gather", dim, self.rank(), self.shape())?;
        let storage = {
            let (s, i) = (self.storage(), indices.storage());
            s.gather(self.layout(), &i, indices.layout(), d)?
        };
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::Gather {
            input: self.clone(),
            indices: indices.clone(),
            dim: d,
        });
        Ok(Tensor::from_storage(storage, indices.shape(), grad_fn))
    }

    /// A copy of `self` with `src` added at `indices` along `dim` (`torch.scatter_add`).
    /// On the GPU floats are added atomically, so where indices repeat the last bits can vary
    /// from run to run; with deterministic algorithms on
    /// ([`crate::use_deterministic_algorithms`]) a kernel sums in the CPU's order instead (the
    /// same bits as the CPU in f32), or, where its work (output elements times the index's
    /// size along `dim`) is too large for it ([`crate::determinism::ordered_scatter_fits`]),
    /// the CPU does, under the CPU-fallback policy (`fallback.rs`: refused under `error`).
    pub fn scatter_add(&self, dim: isize, indices: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.check_indices("scatter_add", indices)?;
        self.same_device("scatter_add", src)?;
        self.same_dtype("scatter_add", src)?;
        let d = resolve_dim("scatter_add", dim, self.rank(), self.shape())?;
        let grad_fn = || {
            Tensor::record(&[self, src], self.dtype(), || GradFn::ScatterAdd {
                base: self.clone(),
                indices: indices.clone(),
                src: src.clone(),
                dim: d,
            })
        };
        if self.device().is_gpu()
            && self.dtype().is_float()
            && crate::determinism::are_deterministic_algorithms_enabled()
            && !crate::determinism::ordered_scatter_fits(
                self.numel(),
                indices.shape().get(d).copied().unwrap_or(0),
            )
        {
            // The GPU's atomic kernel adds floats in arrival order, and its ordered kernel
            // (the deterministic one) would take too long: the CPU's fixed order, under the
            // CPU-fallback policy.
            let bytes = (self.numel() + src.numel()) * self.dtype().size_in_bytes()
                + indices.numel() * indices.dtype().size_in_bytes();
            let cpu = crate::device::Device::Cpu;
            let sums = crate::fallback::run_with_fallback(
                "scatter_add (deterministic)",
                bytes as u64,
                || {
                    self.detach()
                        .to_device(&cpu)?
                        .scatter_add(
                            dim,
                            &indices.to_device(&cpu)?,
                            &src.detach().to_device(&cpu)?,
                        )?
                        .to_device(self.device())
                },
            )?;
            return Ok(Tensor::from_view(
                sums.storage_arc().clone(),
                sums.layout().clone(),
                grad_fn(),
            ));
        }
        let storage = {
            let (b, i, s) = (self.storage(), indices.storage(), src.storage());
            b.scatter_add(self.layout(), &i, indices.layout(), &s, src.layout(), d)?
        };
        Ok(Tensor::from_storage(storage, self.shape(), grad_fn()))
    }

    /// A copy of `self` with the slices of `src` added at `indices` along `dim`
    /// (`torch.index_add`): `out[.., indices[j], ..] += src[.., j, ..]`, where `indices` is a
    /// 1-D integer tensor and `src` has `self`'s shape with `dim` replaced by
    /// `indices.numel()`. Repeated indices add up; rows never indexed keep `self`'s values.
    /// Floats sum in f32 (f16 included). On the GPU the sum is deterministic — the same bits
    /// on every run, without float atomics, however often an index repeats — which makes it
    /// the backward of `index_select` (embedding gradients).
    ///
    /// Errors: a negative or out-of-range index is `Error::InvalidArgument` (on the GPU it is
    /// reported by the next readback or `synchronize`, like `index_select`'s); indices that are
    /// not 1-D or not integers, a `src` of the wrong shape or dtype, or a bool tensor are
    /// errors naming `index_add`.
    ///
    /// ```
    /// # use anygrad_core::{Device, Tensor};
    /// let base = Tensor::zeros(&[3, 2], anygrad_core::DType::F32, &Device::Cpu)?;
    /// let src = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], &Device::Cpu)?;
    /// let indices = Tensor::from_vec(vec![2i32, 0, 2], &[3], &Device::Cpu)?;
    /// let out = base.index_add(0, &indices, &src)?;
    /// assert_eq!(out.to_vec_f32()?, [3.0, 4.0, 0.0, 0.0, 6.0, 8.0]);
    /// # Ok::<(), anygrad_core::Error>(())
    /// ```
    pub fn index_add(&self, dim: isize, indices: &Tensor, src: &Tensor) -> Result<Tensor> {
        self.check_indices("index_add", indices)?;
        self.same_device("index_add", src)?;
        self.same_dtype("index_add", src)?;
        let d = resolve_dim("index_add", dim, self.rank(), self.shape())?;
        let storage = {
            let (b, i, s) = (self.storage(), indices.storage(), src.storage());
            b.index_add(self.layout(), &i, indices.layout(), &s, src.layout(), d)?
        };
        let grad_fn = Tensor::record(&[self, src], self.dtype(), || GradFn::IndexAdd {
            base: self.clone(),
            indices: indices.clone(),
            src: src.clone(),
            dim: d,
        });
        Ok(Tensor::from_storage(storage, self.shape(), grad_fn))
    }

    /// One-hot encoding of an integer tensor: a new last dim of `num_classes`.
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Tensor> {
        if !self.dtype().is_index() {
            return Err(Error::invalid(
                "one_hot",
                format!("expects integer class indices, got {}", self.dtype()),
            ));
        }
        let classes = Tensor::arange(0.0, num_classes as f64, 1.0, self.dtype(), self.device())?;
        let labels = self.unsqueeze(-1)?;
        let too_big = labels
            .ge_scalar(num_classes as f64)?
            .to_dtype(DType::F32)?
            .max_all();
        if self.numel() > 0 && too_big?.item_f64()? > 0.0 {
            return Err(Error::invalid(
                "one_hot",
                format!("a class index is >= num_classes ({num_classes})"),
            ));
        }
        labels.eq(&classes)?.to_dtype(dtype)
    }
}
