//! Sorting ops: `argsort` (the backend primitive, stable), and `sort` and `topk`, which gather
//! the values with the sorted positions so that their gradient is `gather`'s (a scatter of the
//! output gradient back to the positions the values came from).

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::resolve_dim;

impl Tensor {
    /// The `I32` positions along `dim` that sort the tensor (`torch.argsort(stable=True)`):
    /// equal values keep their order in both directions, NaN sorts after every number
    /// (first when `descending`). Not differentiable.
    pub fn argsort(&self, dim: isize, descending: bool) -> Result<Tensor> {
        let d = resolve_dim("argsort", dim, self.rank(), self.shape())?;
        if self.rank() == 0 {
            return Tensor::zeros(&[], DType::I32, self.device());
        }
        let storage = self.storage().argsort(self.layout(), d, descending)?;
        Ok(Tensor::from_storage(storage, self.shape(), None))
    }

    /// The values sorted along `dim` and the `I32` positions they came from (`torch.sort`,
    /// stable). The gradient flows through the values.
    pub fn sort(&self, dim: isize, descending: bool) -> Result<(Tensor, Tensor)> {
        if self.rank() == 0 {
            let (values, indices) = self.reshape([1usize])?.sort(0, descending)?;
            return Ok((values.reshape([0usize; 0])?, indices.reshape([0usize; 0])?));
        }
        let indices = self.argsort(dim, descending)?;
        let values = self.gather(dim, &indices)?;
        Ok((values, indices))
    }

    /// The `k` largest (`largest`) or smallest values along `dim` and their `I32` positions
    /// (`torch.topk`). The values come in sorted order whether or not `sorted` is asked
    /// (PyTorch leaves the order unspecified when it is not); among equal values the earlier
    /// position comes first. The gradient flows through the values.
    pub fn topk(
        &self,
        k: usize,
        dim: isize,
        largest: bool,
        sorted: bool,
    ) -> Result<(Tensor, Tensor)> {
        let _ = sorted;
        let d = resolve_dim("topk", dim, self.rank(), self.shape())?;
        let size = self.shape().get(d).copied().unwrap_or(1);
        if k > size {
            return Err(Error::invalid(
                "topk",
                format!(
                    "k = {k} is larger than dim {d} of size {size} (input shape {:?})",
                    self.shape()
                ),
            ));
        }
        if self.rank() == 0 {
            return Ok((self.clone(), Tensor::zeros(&[], DType::I32, self.device())?));
        }
        let indices = self
            .argsort(dim, largest)?
            .narrow(dim, 0, k)?
            .contiguous()?;
        let values = self.gather(dim, &indices)?;
        Ok((values, indices))
    }
}
