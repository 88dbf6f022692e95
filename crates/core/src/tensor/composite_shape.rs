//! Shape, fill and creation ops written as composites of existing primitives (index_select,
//! where, cat, expand, arange, comparisons), so they run on every backend and take their
//! gradients from the primitives' rules: `flip`, `roll`, `repeat`, `pad`, `tril`/`triu`,
//! `masked_fill`, `eye`, `linspace`. Index tensors they need are small and built on the host.

use super::Tensor;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::resolve_dim;

impl Tensor {
    /// A 1-D `I32` index tensor on this tensor's device.
    fn host_indices(&self, indices: Vec<i32>) -> Result<Tensor> {
        let len = indices.len();
        Tensor::from_vec(indices, &[len], self.device())
    }

    /// Reverse the order of elements along each of `dims` (`torch.flip`).
    pub fn flip(&self, dims: &[isize]) -> Result<Tensor> {
        let mut out = self.clone();
        let mut seen = Vec::new();
        for &dim in dims {
            let d = resolve_dim("flip", dim, self.rank(), self.shape())?;
            if seen.contains(&d) {
                return Err(Error::invalid("flip", format!("dim {dim} appears twice")));
            }
            seen.push(d);
            let size = self.shape()[d];
            let reversed = self.host_indices((0..size as i32).rev().collect())?;
            out = out.index_select(d as isize, &reversed)?;
        }
        Ok(out)
    }

    /// Shift elements along `dim` by `shift` places, wrapping around (`torch.roll` with one
    /// dim): `out[i] = self[(i - shift) mod n]`. Negative shifts move towards the front.
    pub fn roll(&self, shift: isize, dim: isize) -> Result<Tensor> {
        let d = resolve_dim("roll", dim, self.rank(), self.shape())?;
        let size = self.shape()[d] as i64;
        if size == 0 {
            return Ok(self.clone());
        }
        let shift = shift as i64;
        let indices = (0..size)
            .map(|i| (i - shift).rem_euclid(size) as i32)
            .collect();
        self.index_select(d as isize, &self.host_indices(indices)?)
    }

    /// Tile the tensor `reps[i]` times along each dim (`torch.Tensor.repeat`). `reps` may be
    /// longer than the rank: leading size-1 dims are added first, as in PyTorch.
    pub fn repeat(&self, reps: &[usize]) -> Result<Tensor> {
        if reps.len() < self.rank() {
            return Err(Error::invalid(
                "repeat",
                format!(
                    "{} repeat counts for a tensor of rank {} (shape {:?}); give one per dim",
                    reps.len(),
                    self.rank(),
                    self.shape()
                ),
            ));
        }
        let mut shape = vec![1usize; reps.len() - self.rank()];
        shape.extend_from_slice(self.shape());
        // [s0, s1, ...] -> [1, s0, 1, s1, ...] -> expand [r0, s0, r1, s1, ...] -> merge pairs.
        let interleaved: Vec<usize> = shape.iter().flat_map(|&s| [1, s]).collect();
        let expanded: Vec<usize> = shape.iter().zip(reps).flat_map(|(&s, &r)| [r, s]).collect();
        let merged: Vec<usize> = shape.iter().zip(reps).map(|(&s, &r)| s * r).collect();
        self.reshape(interleaved)?
            .expand(&expanded)?
            .reshape(merged)
    }

    /// Constant padding of the last two dims (`F.pad(x, (left, right, top, bottom), value=v)`):
    /// `left`/`right` columns on the last dim, `top`/`bottom` rows on the one before.
    pub fn pad(
        &self,
        left: usize,
        right: usize,
        top: usize,
        bottom: usize,
        value: f64,
    ) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::invalid(
                "pad",
                format!(
                    "needs a tensor of rank >= 2 to pad its last two dims, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let padded = self.pad_dim(self.rank() - 1, left, right, value)?;
        padded.pad_dim(self.rank() - 2, top, bottom, value)
    }

    /// `before` and `after` slices of `value` around this tensor along dim `d`.
    fn pad_dim(&self, d: usize, before: usize, after: usize, value: f64) -> Result<Tensor> {
        if before == 0 && after == 0 {
            return Ok(self.clone());
        }
        let block = |count: usize| -> Result<Tensor> {
            let mut shape = self.shape().to_vec();
            shape[d] = count;
            Tensor::full(&shape, value, self.dtype(), self.device())
        };
        let mut parts = Vec::new();
        if before > 0 {
            parts.push(block(before)?);
        }
        parts.push(self.clone());
        if after > 0 {
            parts.push(block(after)?);
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        Tensor::cat(&refs, d as isize)
    }

    /// A Bool `[rows, cols]` mask over the last two dims: `col - row <= diagonal` when
    /// `lower`, else `col - row >= diagonal`.
    fn diagonal_mask(&self, op: &'static str, diagonal: isize, lower: bool) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::invalid(
                op,
                format!("needs a tensor of rank >= 2, got shape {:?}", self.shape()),
            ));
        }
        let rows = self.shape()[self.rank() - 2];
        let cols = self.shape()[self.rank() - 1];
        let row = Tensor::arange(0.0, rows as f64, 1.0, DType::I32, self.device())?
            .reshape([rows, 1])?
            .add_scalar(diagonal as f64)?;
        let col =
            Tensor::arange(0.0, cols as f64, 1.0, DType::I32, self.device())?.reshape([1, cols])?;
        let mask = if lower { col.le(&row)? } else { col.ge(&row)? };
        Ok(mask)
    }

    /// The lower triangle of the last two dims (`torch.tril`): elements with
    /// `col - row <= diagonal` are kept, the rest set to zero.
    pub fn tril(&self, diagonal: isize) -> Result<Tensor> {
        let mask = self.diagonal_mask("tril", diagonal, true)?;
        let zero = Tensor::scalar(0.0, self.dtype(), self.device())?;
        Tensor::where_(&mask, self, &zero)
    }

    /// The upper triangle of the last two dims (`torch.triu`): elements with
    /// `col - row >= diagonal` are kept, the rest set to zero.
    pub fn triu(&self, diagonal: isize) -> Result<Tensor> {
        let mask = self.diagonal_mask("triu", diagonal, false)?;
        let zero = Tensor::scalar(0.0, self.dtype(), self.device())?;
        Tensor::where_(&mask, self, &zero)
    }

    /// `value` wherever the Bool `mask` (broadcast to this shape) is true, else this tensor
    /// (`torch.Tensor.masked_fill`). The gradient flows to the unmasked elements.
    pub fn masked_fill(&self, mask: &Tensor, value: f64) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(Error::invalid(
                "masked_fill",
                format!("mask must be Bool, got {}", mask.dtype()),
            ));
        }
        let broadcast = crate::shape::broadcast_shapes("masked_fill", self.shape(), mask.shape())?;
        if broadcast.as_slice() != self.shape() {
            return Err(Error::invalid(
                "masked_fill",
                format!(
                    "mask of shape {:?} does not broadcast to the tensor's shape {:?}",
                    mask.shape(),
                    self.shape()
                ),
            ));
        }
        let fill = Tensor::scalar(value, self.dtype(), self.device())?;
        Tensor::where_(mask, &fill, self)
    }

    /// The `n × n` identity matrix (`torch.eye`).
    pub fn eye(n: usize, dtype: DType, device: &Device) -> Result<Tensor> {
        let index = Tensor::arange(0.0, n as f64, 1.0, DType::I32, device)?;
        index
            .reshape([n, 1])?
            .eq(&index.reshape([1, n])?)?
            .to_dtype(dtype)
    }

    /// `steps` evenly spaced values from `start` to `end`, both included (`torch.linspace`).
    /// Like PyTorch, the first half counts up from `start` and the second half down from
    /// `end`, so both ends are exact. Float dtypes only.
    pub fn linspace(
        start: f64,
        end: f64,
        steps: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        if !dtype.is_float() || !start.is_finite() || !end.is_finite() {
            return Err(Error::invalid(
                "linspace",
                format!("needs finite ends and a float dtype, got {start}..{end} as {dtype}"),
            ));
        }
        if steps <= 1 {
            return Tensor::full(&[steps], start, dtype, device);
        }
        let step = (end - start) / (steps - 1) as f64;
        let index = Tensor::arange(0.0, steps as f64, 1.0, dtype, device)?;
        let from_start = index.mul_scalar(step)?.add_scalar(start)?;
        let from_end = index
            .rsub_scalar((steps - 1) as f64)?
            .mul_scalar(-step)?
            .add_scalar(end)?;
        let first_half = index.lt_scalar((steps / 2) as f64)?;
        Tensor::where_(&first_half, &from_start, &from_end)
    }
}
