//! Tensor creation: constant fills, ranges, host data, and counter-based random draws (the
//! same numbers on every device for the same seed).

use super::Tensor;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::random::{next_draw, Distribution};
use crate::shape::numel;
use crate::storage::Storage;

impl Tensor {
    /// A tensor of `shape` filled with `value`.
    pub fn full(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        let storage = Storage::full(device, numel(shape), dtype, value)?;
        Ok(Tensor::from_storage(storage, shape, None))
    }

    /// A tensor of zeros.
    pub fn zeros(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype, device)
    }

    /// A tensor of ones.
    pub fn ones(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype, device)
    }

    /// Zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), self.dtype(), self.device())
    }

    /// Ones with this tensor's shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape(), self.dtype(), self.device())
    }

    /// A zero-dim tensor holding `value`.
    pub fn scalar(value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full(&[], value, dtype, device)
    }

    /// `[start, start + step, ...)` up to (not including) `end`, like `torch.arange`.
    pub fn arange(
        start: f64,
        end: f64,
        step: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::invalid(
                "arange",
                format!("invalid range {start}..{end} step {step}"),
            ));
        }
        let count = ((end - start) / step).ceil().max(0.0) as usize;
        let storage = Storage::arange(device, start, step, count, dtype)?;
        Ok(Tensor::from_storage(storage, &[count], None))
    }

    /// A tensor holding `values` with `shape` (the element count must match).
    pub fn from_vec<T: Element>(
        values: Vec<T>,
        shape: &[usize],
        device: &Device,
    ) -> Result<Tensor> {
        if values.len() != numel(shape) {
            return Err(Error::InvalidShape {
                op: "from_vec",
                shape: shape.to_vec(),
                message: format!(
                    "{} values cannot fill a tensor of {} elements",
                    values.len(),
                    numel(shape)
                ),
            });
        }
        let storage = Storage::from_vec(values, device)?;
        Ok(Tensor::from_storage(storage, shape, None))
    }

    /// A tensor holding a copy of `values` with `shape`.
    pub fn from_slice<T: Element>(
        values: &[T],
        shape: &[usize],
        device: &Device,
    ) -> Result<Tensor> {
        Tensor::from_vec(values.to_vec(), shape, device)
    }

    /// Values drawn from `distribution` with the global generator (see `manual_seed`).
    pub fn random(
        shape: &[usize],
        distribution: Distribution,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        let count = numel(shape);
        let (seed, offset) = next_draw(count);
        Tensor::random_seeded(shape, distribution, dtype, seed, offset, device)
    }

    /// Values drawn from `distribution` with an explicit seed and counter offset.
    pub fn random_seeded(
        shape: &[usize],
        distribution: Distribution,
        dtype: DType,
        seed: u64,
        offset: u64,
        device: &Device,
    ) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(Error::Unsupported {
                op: "random",
                dtype,
                device: device.to_string(),
                hint: "; draw a float tensor and convert it with .to_dtype()".into(),
            });
        }
        let storage = Storage::random(device, numel(shape), dtype, distribution, seed, offset)?;
        Ok(Tensor::from_storage(storage, shape, None))
    }

    /// Uniform values in `[0, 1)`.
    pub fn rand(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::random(
            shape,
            Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            dtype,
            device,
        )
    }

    /// Uniform values in `[low, high)`.
    pub fn rand_uniform(
        shape: &[usize],
        low: f64,
        high: f64,
        dtype: DType,
        device: &Device,
    ) -> Result<Tensor> {
        Tensor::random(shape, Distribution::Uniform { low, high }, dtype, device)
    }

    /// Standard normal values.
    pub fn randn(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::random(
            shape,
            Distribution::Normal {
                mean: 0.0,
                std: 1.0,
            },
            dtype,
            device,
        )
    }

    /// Uniform integers in `[low, high)` as `I32`.
    pub fn randint(low: i64, high: i64, shape: &[usize], device: &Device) -> Result<Tensor> {
        if high <= low {
            return Err(Error::invalid(
                "randint",
                format!("empty range [{low}, {high})"),
            ));
        }
        let span = (high - low) as f64;
        let uniform = Tensor::random(
            shape,
            Distribution::Uniform {
                low: 0.0,
                high: span,
            },
            DType::F32,
            device,
        )?;
        // Truncation is floor for non-negative values; clamp because f32 rounding can land
        // exactly on `span`.
        uniform
            .clamp(0.0, span - 1.0)?
            .to_dtype(DType::I32)?
            .add_scalar(low as f64)
    }
}
