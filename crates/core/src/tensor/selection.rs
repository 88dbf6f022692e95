//! Data-dependent selection and device-side random draws, written over the sorting primitive
//! (`argsort`, stable) so they run on every backend:
//! - `nonzero` and `masked_select` read the number of selected elements back to the host (the
//!   output's size depends on the data, as in PyTorch), then take the first `count` positions
//!   of a stable descending argsort of the 0/1 indicator: the selected flat positions in
//!   increasing order. `masked_select` gathers them with `index_select`, whose gradient
//!   scatters back.
//! - `randperm` argsorts counter-based uniform keys (`random.rs`), so the same seed gives the
//!   same permutation on the CPU and on any GPU; `bernoulli` compares uniform draws with the
//!   probabilities.

use super::Tensor;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

impl Tensor {
    /// The flat positions (`I32`, increasing) of the nonzero elements (NaN counts as
    /// nonzero), and how many there are (read back from the device).
    fn nonzero_positions(&self, op: &'static str) -> Result<(Tensor, usize)> {
        let flat = self.detach().reshape([self.numel()])?;
        let indicator = if flat.dtype() == DType::Bool {
            flat.to_dtype(DType::I32)?
        } else {
            flat.ne_scalar(0.0)?.to_dtype(DType::I32)?
        };
        let count = indicator.to_dtype(DType::F32)?.sum_all()?.item_f64()?;
        if !(0.0..=self.numel() as f64).contains(&count) {
            return Err(Error::invalid(
                op,
                format!("counted {count} selected elements"),
            ));
        }
        let count = count as usize;
        let positions = indicator.argsort(0, true)?.narrow(0, 0, count)?;
        Ok((positions.contiguous()?, count))
    }

    /// The coordinates of the nonzero elements, `[count, rank]` `I32` in row-major order
    /// (`torch.nonzero`). Reads the count back from the device.
    pub fn nonzero(&self) -> Result<Tensor> {
        let (positions, count) = self.nonzero_positions("nonzero")?;
        let rank = self.rank();
        let device = self.device();
        let mut columns = Vec::with_capacity(rank);
        for (d, &size) in self.shape().iter().enumerate() {
            let mut view = vec![1usize; rank];
            view[d] = size;
            let coordinate = Tensor::arange(0.0, size as f64, 1.0, DType::I32, device)?
                .reshape(view)?
                .expand(self.shape())?
                .contiguous()?
                .reshape([self.numel()])?;
            columns.push(coordinate.index_select(0, &positions)?);
        }
        if columns.is_empty() {
            return Tensor::zeros(&[count, 0], DType::I32, device);
        }
        let refs: Vec<&Tensor> = columns.iter().collect();
        Tensor::stack(&refs, 1)
    }

    /// The elements where the `Bool` `mask` is true, flattened in row-major order
    /// (`torch.masked_select`); the tensor and the mask broadcast together. Reads the count
    /// back; the gradient scatters to the selected positions.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::invalid(
                "masked_select",
                format!("mask must be Bool, got {}", mask.dtype()),
            ));
        }
        self.same_device("masked_select", mask)?;
        let shape = crate::shape::broadcast_shapes("masked_select", self.shape(), mask.shape())?;
        let values = self.broadcast_to(&shape)?;
        let mask = mask.broadcast_to(&shape)?;
        let (positions, _) = mask.nonzero_positions("masked_select")?;
        values
            .reshape([values.numel()])?
            .index_select(0, &positions)
    }

    /// A random permutation of `0..n` as `I32` (`torch.randperm`), drawn on `device` from the
    /// global generator: the argsort of two streams of uniform keys (48 random bits per
    /// element, so ties, which would keep index order, are vanishingly rare).
    pub fn randperm(n: usize, device: &Device) -> Result<Tensor> {
        let primary = Tensor::rand(&[n], DType::F32, device)?;
        let secondary = Tensor::rand(&[n], DType::F32, device)?;
        // Sort by the secondary key, then stably by the primary: lexicographic order.
        let by_secondary = secondary.argsort(0, false)?;
        let by_primary = primary.gather(0, &by_secondary)?.argsort(0, false)?;
        by_secondary.gather(0, &by_primary)
    }

    /// Draws 1 with probability `self` (each element in `[0, 1]`) and 0 otherwise, in the
    /// tensor's float dtype (`torch.bernoulli`), on the tensor's device from the global
    /// generator. Not differentiable.
    pub fn bernoulli(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                "bernoulli",
                format!("probabilities must be a float tensor, got {}", self.dtype()),
            ));
        }
        let uniform = Tensor::rand(self.shape(), DType::F32, self.device())?;
        let probabilities = self.detach().to_dtype(DType::F32)?;
        uniform.lt(&probabilities)?.to_dtype(self.dtype())
    }
}
