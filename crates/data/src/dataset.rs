//! The `Dataset` trait and `TensorDataset`, its in-memory implementation.
//!
//! A dataset hands out whole batches (`get_batch(indices)`), not single samples: building a
//! batch as one gather (`index_select` along dim 0) is one op per batch instead of one small
//! tensor per sample plus a `stack`, which matters on a GPU where every op is a kernel launch.
//! `get(index)` — PyTorch's `dataset[i]` — is provided on top of it.

use std::sync::Arc;

use anygrad_core::{DType, Device, Element, Error, Result, Tensor};

use crate::split::split_indices;

/// A finite, indexable collection of `(input, label)` samples.
///
/// Implementations must be `Send + Sync`: the [`DataLoader`](crate::DataLoader) builds
/// batches on a background thread.
pub trait Dataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;

    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The samples at `indices`, stacked along a new leading dim: `(inputs, labels)` with
    /// `inputs.shape() = [indices.len(), ...sample shape]`.
    ///
    /// Errors: [`Error::InvalidArgument`] when an index is `>= len()`.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)>;

    /// One sample `(input, label)` without the batch dim (PyTorch's `dataset[index]`).
    fn get(&self, index: usize) -> Result<(Tensor, Tensor)> {
        let (inputs, labels) = self.get_batch(&[index])?;
        Ok((inputs.squeeze(0)?, labels.squeeze(0)?))
    }
}

impl<D: Dataset + ?Sized> Dataset for Arc<D> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        (**self).get_batch(indices)
    }
}

impl<D: Dataset + ?Sized> Dataset for Box<D> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        (**self).get_batch(indices)
    }
}

/// Check that every index is below `len` and convert them to an `I32` index tensor.
pub(crate) fn index_tensor(
    op: &'static str,
    indices: &[usize],
    len: usize,
    device: &Device,
) -> Result<Tensor> {
    let mut converted = Vec::with_capacity(indices.len());
    for &index in indices {
        if index >= len {
            return Err(Error::invalid(
                op,
                format!("sample index {index} is out of range for a dataset of {len} samples"),
            ));
        }
        let index = i32::try_from(index)
            .map_err(|_| Error::invalid(op, format!("sample index {index} does not fit in i32")))?;
        converted.push(index);
    }
    Tensor::from_vec(converted, &[indices.len()], device)
}

/// Features and labels held as two tensors whose first dim is the sample
/// (PyTorch's `TensorDataset(features, labels)`). Both live on the same device; batches are
/// gathered there with `index_select`.
#[derive(Clone)]
pub struct TensorDataset {
    features: Tensor,
    labels: Tensor,
}

impl std::fmt::Debug for TensorDataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorDataset")
            .field("features", &(self.features.shape(), self.features.dtype()))
            .field("labels", &(self.labels.shape(), self.labels.dtype()))
            .field("device", &self.features.device().to_string())
            .finish()
    }
}

impl TensorDataset {
    /// Pair `features` (`[n, ...]`) with `labels` (`[n, ...]`, usually `[n]` `I32` classes).
    ///
    /// Errors: [`Error::InvalidShape`] for a zero-dim tensor or different first dims,
    /// [`Error::DeviceMismatch`] when they live on different devices.
    pub fn new(features: Tensor, labels: Tensor) -> Result<Self> {
        for (what, tensor) in [("features", &features), ("labels", &labels)] {
            if tensor.rank() == 0 {
                return Err(Error::InvalidShape {
                    op: "TensorDataset::new",
                    shape: tensor.shape().to_vec(),
                    message: format!("{what} need a leading sample dim"),
                });
            }
        }
        if features.shape()[0] != labels.shape()[0] {
            return Err(Error::ShapeMismatch {
                op: "TensorDataset::new",
                lhs: features.shape().to_vec(),
                rhs: labels.shape().to_vec(),
                reason: "must have the same number of samples (first dim)".into(),
            });
        }
        if features.device() != labels.device() {
            return Err(Error::DeviceMismatch {
                op: "TensorDataset::new",
                lhs: features.device().to_string(),
                rhs: labels.device().to_string(),
            });
        }
        Ok(TensorDataset { features, labels })
    }

    /// Build from host vectors: `features` of shape `[labels.len(), ...sample_shape]` and
    /// `labels` (stored with `L`'s dtype — use `i32` for class indices).
    pub fn from_vecs<L: Element>(
        features: Vec<f32>,
        sample_shape: &[usize],
        labels: Vec<L>,
        device: &Device,
    ) -> Result<Self> {
        let mut shape = vec![labels.len()];
        shape.extend_from_slice(sample_shape);
        let n = labels.len();
        let features = Tensor::from_vec(features, &shape, device)?;
        let labels = Tensor::from_vec(labels, &[n], device)?;
        TensorDataset::new(features, labels)
    }

    /// Build from host vectors with `u8` class labels, stored as `I32` (what losses take).
    pub fn from_class_labels(
        features: Vec<f32>,
        sample_shape: &[usize],
        labels: &[u8],
        device: &Device,
    ) -> Result<Self> {
        let labels: Vec<i32> = labels.iter().map(|&l| l as i32).collect();
        TensorDataset::from_vecs(features, sample_shape, labels, device)
    }

    /// The features tensor (`[n, ...]`).
    pub fn features(&self) -> &Tensor {
        &self.features
    }

    /// The labels tensor (`[n, ...]`).
    pub fn labels(&self) -> &Tensor {
        &self.labels
    }

    /// Both tensors, consuming the dataset.
    pub fn into_tensors(self) -> (Tensor, Tensor) {
        (self.features, self.labels)
    }

    /// The device holding the data.
    pub fn device(&self) -> &Device {
        self.features.device()
    }

    /// A copy on `device` (uploaded once; a cheap clone when already there).
    pub fn to_device(&self, device: &Device) -> Result<Self> {
        Ok(TensorDataset {
            features: self.features.to_device(device)?,
            labels: self.labels.to_device(device)?,
        })
    }

    /// The features converted to `dtype` (e.g. `F16` for half-precision training).
    pub fn features_to_dtype(&self, dtype: DType) -> Result<Self> {
        Ok(TensorDataset {
            features: self.features.to_dtype(dtype)?,
            labels: self.labels.clone(),
        })
    }

    /// A new dataset of the samples at `indices` (copied, in that order).
    pub fn subset(&self, indices: &[usize]) -> Result<Self> {
        let (features, labels) = self.get_batch(indices)?;
        Ok(TensorDataset { features, labels })
    }

    /// Shuffle and split into `(train, test)` with `ceil(test_fraction · n)` test samples,
    /// reproducibly from `seed` (see [`split_indices`]).
    pub fn split(&self, test_fraction: f64, seed: u64) -> Result<(Self, Self)> {
        let (train, test) = split_indices(self.len(), test_fraction, seed)?;
        Ok((self.subset(&train)?, self.subset(&test)?))
    }
}

impl Dataset for TensorDataset {
    fn len(&self) -> usize {
        self.features.shape()[0]
    }

    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let index = index_tensor(
            "TensorDataset::get_batch",
            indices,
            self.len(),
            self.device(),
        )?;
        Ok((
            self.features.index_select(0, &index)?,
            self.labels.index_select(0, &index)?,
        ))
    }
}
