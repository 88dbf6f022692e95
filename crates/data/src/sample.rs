//! Per-sample datasets, PyTorch's map-style `Dataset` (`len`, `dataset[i]`): the
//! [`SampleDataset`] trait, the [`collate`] step that stacks samples into a batch,
//! [`Subset`], [`random_split`], [`Transformed`] (a transform over another dataset's images)
//! and [`InMemoryImages`].
//!
//! The batch-oriented [`Dataset`](crate::Dataset) stays the fast path for data that already
//! sits in one array (a batch is one gather). A `SampleDataset` is for data that is produced
//! one sample at a time — decoded from a file, augmented — which the
//! [`SampleLoader`](crate::SampleLoader) does on worker threads and then collates.

use std::sync::Arc;

use anygrad_core::{Device, Error, Result, Tensor};

use crate::image::{Image, PixelImage};
use crate::rng::{permutation, sample_seed, SplitMix64};
use crate::transforms::Transform;
use anygrad_core::host_memory::reserved;

/// One sample: an image (either layout) and its class.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The image; [`collate`] needs it in CHW `f32` form (after `ToTensor`).
    pub image: Image,
    /// The class index.
    pub label: i32,
}

/// A finite, indexable collection of samples produced one at a time.
///
/// `sample(index, rng)` draws any randomness (augmentation) from `rng`; the
/// [`SampleLoader`](crate::SampleLoader) seeds it from `(seed, epoch, index)` so results do
/// not depend on which thread builds which sample. Implementations are `Send + Sync`: worker
/// threads call `sample` concurrently.
pub trait SampleDataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;

    /// True when there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sample `index`, with randomness drawn from `rng`.
    ///
    /// Errors: [`Error::InvalidArgument`] for `index >= len()`; whatever loading or
    /// transforming the sample reports (a missing or corrupt file names the file).
    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample>;

    /// PyTorch's `dataset[index]`: the sample with the generator of seed 0, epoch 0.
    fn get(&self, index: usize) -> Result<Sample> {
        self.sample(index, &mut SplitMix64::new(sample_seed(0, 0, index as u64)))
    }

    /// Where sample `index` comes from (the file of an [`ImageFolder`](crate::ImageFolder)
    /// image), so that an error of a transform applied to it can name it; `None` (the
    /// default) when there is nothing to name.
    fn source(&self, index: usize) -> Option<String> {
        let _ = index;
        None
    }
}

impl<D: SampleDataset + ?Sized> SampleDataset for Arc<D> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        (**self).sample(index, rng)
    }
    fn source(&self, index: usize) -> Option<String> {
        (**self).source(index)
    }
}

impl<D: SampleDataset + ?Sized> SampleDataset for Box<D> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        (**self).sample(index, rng)
    }
    fn source(&self, index: usize) -> Option<String> {
        (**self).source(index)
    }
}

/// `error` of a transform applied to a sample from `source`, with the source named in the
/// message of an argument or shape error (a transform knows the sizes, not the file).
pub(crate) fn with_source(error: Error, source: Option<String>) -> Error {
    let Some(source) = source else {
        return error;
    };
    match error {
        Error::InvalidArgument { op, message } => Error::InvalidArgument {
            op,
            message: format!("{message} (transforming {source})"),
        },
        Error::InvalidShape { op, shape, message } => Error::InvalidShape {
            op,
            shape,
            message: format!("{message} (transforming {source})"),
        },
        other => other,
    }
}

/// The error for an index past the end.
pub(crate) fn out_of_range(op: &'static str, index: usize, len: usize) -> Error {
    Error::invalid(
        op,
        format!("sample index {index} is out of range for a dataset of {len} samples"),
    )
}

/// Stack samples into a batch on the CPU: images `F32 [N, C, H, W]` and labels `I32 [N]`
/// (PyTorch's `default_collate` for image/label pairs).
///
/// Errors: [`Error::InvalidArgument`] for an empty list or an image still in 8-bit form
/// (add `ToTensor`); [`Error::ShapeMismatch`] when images differ in size (add a `Resize` or
/// crop so that every image comes out the same size); [`Error::OutOfMemory`] when the batch
/// cannot be allocated.
pub fn collate(samples: Vec<Sample>) -> Result<(Tensor, Tensor)> {
    let first_shape = match samples.first() {
        Some(Sample {
            image: Image::Chw(image),
            ..
        }) => image.shape(),
        Some(Sample {
            image: Image::Pixels(_),
            ..
        }) => {
            return Err(Error::invalid(
                "collate",
                "the samples are 8-bit pixel images; end the transform with ToTensor (and \
                 Normalize) so that they become CHW f32",
            ))
        }
        None => return Err(Error::invalid("collate", "no samples to stack")),
    };
    let count = samples.len();
    let mut data = reserved(count.saturating_mul(first_shape.iter().product::<usize>()))?;
    let mut labels = reserved(count)?;
    for (position, sample) in samples.into_iter().enumerate() {
        let image = sample.image.into_chw("collate")?;
        if image.shape() != first_shape {
            return Err(Error::ShapeMismatch {
                op: "collate",
                lhs: first_shape.to_vec(),
                rhs: image.shape().to_vec(),
                reason: format!(
                    "sample {position} of the batch differs from the first; resize or crop \
                     every image to one size"
                ),
            });
        }
        data.extend_from_slice(image.data());
        labels.push(sample.label);
    }
    let [channels, height, width] = first_shape;
    Ok((
        Tensor::from_vec(data, &[count, channels, height, width], &Device::Cpu)?,
        Tensor::from_vec(labels, &[count], &Device::Cpu)?,
    ))
}

/// The samples of `dataset` at `indices`, in that order (PyTorch's `Subset`).
pub struct Subset<D: ?Sized> {
    dataset: Arc<D>,
    indices: Arc<Vec<usize>>,
}

impl<D: ?Sized> Clone for Subset<D> {
    fn clone(&self) -> Self {
        Subset {
            dataset: self.dataset.clone(),
            indices: self.indices.clone(),
        }
    }
}

impl<D: ?Sized> std::fmt::Debug for Subset<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subset")
            .field("samples", &self.indices.len())
            .finish()
    }
}

impl<D: SampleDataset + ?Sized> Subset<D> {
    /// The samples of `dataset` at `indices`.
    ///
    /// Errors: [`Error::InvalidArgument`] when an index is out of range.
    pub fn new(dataset: Arc<D>, indices: Vec<usize>) -> Result<Self> {
        let len = dataset.len();
        if let Some(&bad) = indices.iter().find(|&&index| index >= len) {
            return Err(out_of_range("Subset::new", bad, len));
        }
        Ok(Subset {
            dataset,
            indices: Arc::new(indices),
        })
    }

    /// The underlying dataset's indices of this subset's samples.
    pub fn indices(&self) -> &[usize] {
        &self.indices
    }

    /// The underlying dataset.
    pub fn dataset(&self) -> &Arc<D> {
        &self.dataset
    }
}

impl<D: SampleDataset + ?Sized> SampleDataset for Subset<D> {
    fn len(&self) -> usize {
        self.indices.len()
    }

    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        let inner = *self
            .indices
            .get(index)
            .ok_or_else(|| out_of_range("Subset", index, self.indices.len()))?;
        self.dataset.sample(inner, rng)
    }

    fn source(&self, index: usize) -> Option<String> {
        let inner = *self.indices.get(index)?;
        self.dataset.source(inner)
    }
}

/// Split `dataset` at random into non-overlapping subsets whose sizes follow `fractions`
/// (PyTorch's `random_split(dataset, [0.8, 0.1, 0.1], generator)`): each part gets
/// `floor(n · fraction)` samples and the remainder is handed out one by one to the first
/// parts. The order comes from a permutation drawn from `seed`.
///
/// Errors: [`Error::InvalidArgument`] when a fraction is negative or not finite, or the
/// fractions do not sum to 1 (within 1e-6).
pub fn random_split<D: SampleDataset + ?Sized>(
    dataset: Arc<D>,
    fractions: &[f64],
    seed: u64,
) -> Result<Vec<Subset<D>>> {
    let sum: f64 = fractions.iter().sum();
    if fractions.is_empty()
        || fractions.iter().any(|f| !(*f >= 0.0 && f.is_finite()))
        || (sum - 1.0).abs() > 1e-6
    {
        return Err(Error::invalid(
            "random_split",
            format!("fractions {fractions:?} must be non-negative and sum to 1"),
        ));
    }
    let n = dataset.len();
    let mut lengths: Vec<usize> = fractions
        .iter()
        .map(|f| (n as f64 * f).floor() as usize)
        .collect();
    let remainder = n - lengths.iter().sum::<usize>().min(n);
    for i in 0..remainder {
        let part = i % lengths.len();
        lengths[part] += 1;
    }
    random_split_lengths(dataset, &lengths, seed)
}

/// Split `dataset` at random into subsets of exactly `lengths` samples (PyTorch's
/// `random_split` with integer lengths).
///
/// Errors: [`Error::InvalidArgument`] when the lengths do not sum to `dataset.len()`.
pub fn random_split_lengths<D: SampleDataset + ?Sized>(
    dataset: Arc<D>,
    lengths: &[usize],
    seed: u64,
) -> Result<Vec<Subset<D>>> {
    let n = dataset.len();
    if lengths.iter().sum::<usize>() != n {
        return Err(Error::invalid(
            "random_split",
            format!("lengths {lengths:?} do not sum to the dataset's {n} samples"),
        ));
    }
    let order = permutation(n, seed);
    let mut start = 0;
    let mut parts = Vec::with_capacity(lengths.len());
    for &length in lengths {
        parts.push(Subset {
            dataset: dataset.clone(),
            indices: Arc::new(order[start..start + length].to_vec()),
        });
        start += length;
    }
    Ok(parts)
}

/// Another dataset's samples with `transform` applied to each image: how a train and a
/// validation split of one [`ImageFolder`](crate::ImageFolder) get different pipelines.
pub struct Transformed<D> {
    dataset: D,
    transform: Arc<dyn Transform>,
}

impl<D> std::fmt::Debug for Transformed<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformed")
            .field("transform", &self.transform)
            .finish()
    }
}

impl<D: SampleDataset> Transformed<D> {
    /// `dataset` with `transform` applied to every sample's image.
    pub fn new(dataset: D, transform: impl Transform + 'static) -> Self {
        Transformed {
            dataset,
            transform: Arc::new(transform),
        }
    }
}

impl<D: SampleDataset> SampleDataset for Transformed<D> {
    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        let sample = self.dataset.sample(index, rng)?;
        let image = self
            .transform
            .apply(sample.image, rng)
            .map_err(|error| with_source(error, self.dataset.source(index)))?;
        Ok(Sample {
            image,
            label: sample.label,
        })
    }

    fn source(&self, index: usize) -> Option<String> {
        self.dataset.source(index)
    }
}

/// Decoded images and labels held in memory, with an optional transform: a
/// [`SampleDataset`] for images that are already in hand (tests, synthetic data, MNIST
/// pixels).
#[derive(Clone)]
pub struct InMemoryImages {
    images: Arc<Vec<PixelImage>>,
    labels: Arc<Vec<i32>>,
    transform: Option<Arc<dyn Transform>>,
}

impl std::fmt::Debug for InMemoryImages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryImages")
            .field("samples", &self.images.len())
            .field("transform", &self.transform)
            .finish()
    }
}

impl InMemoryImages {
    /// One label per image.
    ///
    /// Errors: [`Error::InvalidArgument`] when the counts differ.
    pub fn new(images: Vec<PixelImage>, labels: Vec<i32>) -> Result<Self> {
        if images.len() != labels.len() {
            return Err(Error::invalid(
                "InMemoryImages::new",
                format!("{} images but {} labels", images.len(), labels.len()),
            ));
        }
        Ok(InMemoryImages {
            images: Arc::new(images),
            labels: Arc::new(labels),
            transform: None,
        })
    }

    /// Apply `transform` to every image handed out (replacing any earlier one).
    pub fn transform(mut self, transform: impl Transform + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// The stored images.
    pub fn images(&self) -> &[PixelImage] {
        &self.images
    }

    /// The labels.
    pub fn labels(&self) -> &[i32] {
        &self.labels
    }
}

impl SampleDataset for InMemoryImages {
    fn len(&self) -> usize {
        self.images.len()
    }

    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        let (image, label) = match (self.images.get(index), self.labels.get(index)) {
            (Some(image), Some(label)) => (image.clone(), *label),
            _ => return Err(out_of_range("InMemoryImages", index, self.images.len())),
        };
        let image = match &self.transform {
            Some(transform) => transform.apply(Image::Pixels(image), rng)?,
            None => Image::Pixels(image),
        };
        Ok(Sample { image, label })
    }
}
