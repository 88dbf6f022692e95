//! `ArrayDataset`: samples kept in host vectors (`Vec<f32>` features, `Vec<i32>` labels).
//!
//! A batch is built by copying whole sample rows (one `memcpy` each) into a fresh vector
//! and wrapping it as a CPU tensor. For large host-side sets such as MNIST this is far
//! cheaper than a generic element-by-element `index_select`, and it is exactly the work the
//! [`DataLoader`](crate::DataLoader)'s prefetch thread should do off the training thread.

use std::sync::Arc;

use anygrad_core::{Device, Error, Result, Tensor};

use crate::dataset::{Dataset, TensorDataset};

/// Features and labels in host memory; cheap to clone (the data is shared).
#[derive(Debug, Clone)]
pub struct ArrayDataset {
    features: Arc<Vec<f32>>,
    labels: Arc<Vec<i32>>,
    sample_shape: Vec<usize>,
    sample_len: usize,
}

impl ArrayDataset {
    /// Row-major `features` (`labels.len()` samples of `sample_shape`) and class `labels`.
    ///
    /// Errors: [`Error::InvalidShape`] when `features.len()` is not
    /// `labels.len() · product(sample_shape)`.
    pub fn new(features: Vec<f32>, sample_shape: &[usize], labels: Vec<i32>) -> Result<Self> {
        let sample_len: usize = sample_shape.iter().product();
        if Some(features.len()) != labels.len().checked_mul(sample_len) {
            let mut shape = vec![labels.len()];
            shape.extend_from_slice(sample_shape);
            return Err(Error::InvalidShape {
                op: "ArrayDataset::new",
                shape,
                message: format!(
                    "{} feature values do not fill {} samples",
                    features.len(),
                    labels.len()
                ),
            });
        }
        Ok(ArrayDataset {
            features: Arc::new(features),
            labels: Arc::new(labels),
            sample_shape: sample_shape.to_vec(),
            sample_len,
        })
    }

    /// Like [`new`](Self::new) with `u8` class labels.
    pub fn from_class_labels(
        features: Vec<f32>,
        sample_shape: &[usize],
        labels: &[u8],
    ) -> Result<Self> {
        let labels = labels.iter().map(|&l| l as i32).collect();
        ArrayDataset::new(features, sample_shape, labels)
    }

    /// The shape of one sample's features.
    pub fn sample_shape(&self) -> &[usize] {
        &self.sample_shape
    }

    /// All features, row-major.
    pub fn features(&self) -> &[f32] {
        &self.features
    }

    /// All labels.
    pub fn labels(&self) -> &[i32] {
        &self.labels
    }

    /// The whole set as a [`TensorDataset`] on `device` (e.g. for device-resident training).
    pub fn to_tensor_dataset(&self, device: &Device) -> Result<TensorDataset> {
        TensorDataset::from_vecs(
            self.features.to_vec(),
            &self.sample_shape,
            self.labels.to_vec(),
            device,
        )
    }
}

impl Dataset for ArrayDataset {
    fn len(&self) -> usize {
        self.labels.len()
    }

    /// `F32 [indices.len(), ...sample_shape]` features and `I32 [indices.len()]` labels, on
    /// the CPU.
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let mut features = Vec::with_capacity(indices.len() * self.sample_len);
        let mut labels = Vec::with_capacity(indices.len());
        for &index in indices {
            let label = self.labels.get(index).ok_or_else(|| {
                Error::invalid(
                    "ArrayDataset::get_batch",
                    format!(
                        "sample index {index} is out of range for a dataset of {} samples",
                        self.labels.len()
                    ),
                )
            })?;
            labels.push(*label);
            let start = index * self.sample_len;
            features.extend_from_slice(&self.features[start..start + self.sample_len]);
        }
        let mut shape = vec![indices.len()];
        shape.extend_from_slice(&self.sample_shape);
        Ok((
            Tensor::from_vec(features, &shape, &Device::Cpu)?,
            Tensor::from_vec(labels, &[indices.len()], &Device::Cpu)?,
        ))
    }
}
