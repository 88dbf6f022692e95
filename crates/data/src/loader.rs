//! `DataLoader`: batches of `(inputs, labels)` from a [`Dataset`], on a target device.
//!
//! - **Seeded shuffling.** Epoch `e` visits the samples in the order of a permutation drawn
//!   from `seed + e` (SplitMix64), so every run and every machine sees the same batches, and
//!   successive epochs differ. [`epoch_order`](crate::epoch_order) decides it, for this
//!   loader and [`SampleLoader`](crate::SampleLoader) alike.
//! - **Background prefetch** (default, depth 2). A worker thread gathers the next batches on
//!   the CPU while the training step runs, handing them over through a bounded channel (the
//!   bound caps memory: at most `depth` batches wait). The upload to the target device happens
//!   on the consuming thread, where the training step runs.
//! - **Device-resident mode.** The whole dataset is uploaded to the device once; each batch
//!   is then an `index_select` on the device with a slice of an epoch's index tensor (itself
//!   uploaded once per epoch), so no sample data crosses the bus after the first epoch. For a
//!   small data set on a GPU (the digits tutorial) this removes the per-batch transfer that
//!   otherwise dominates a step.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anygrad_core::{Device, Error, Result, Tensor};

use crate::dataset::{index_tensor, Dataset};
use crate::epoch::EpochPlan;

/// Iterates a [`Dataset`] in batches of `(inputs, labels)` on a target device.
///
/// Built with [`new`](Self::new) and configured with chained calls: [`shuffle`](Self::shuffle)
/// (epoch `e` uses the permutation of `seed + e`), [`drop_last`](Self::drop_last),
/// [`to_device`](Self::to_device), [`prefetch`](Self::prefetch) (background worker depth,
/// default 2; uploads happen on the consuming thread) and
/// [`device_resident`](Self::device_resident) (upload the dataset once, gather batches on the
/// device with `index_select`).
///
/// ```no_run
/// # use anygrad_core::{Device, Result};
/// # use anygrad_data::{digits_dataset, DataLoader};
/// # fn main() -> Result<()> {
/// let device = Device::Cpu;
/// let loader = DataLoader::new(digits_dataset(&Device::Cpu)?, 32)?
///     .shuffle(42)
///     .drop_last(false)
///     .to_device(&device);
/// for epoch in 0..3 {
///     for batch in loader.iter_epoch(epoch) {
///         let (inputs, labels) = batch?;
///         // forward, loss, backward, step ...
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub struct DataLoader {
    dataset: Arc<dyn Dataset>,
    /// Batch size, shuffling, `drop_last` and the next epoch.
    plan: EpochPlan,
    device: Device,
    prefetch: usize,
    device_resident: bool,
    /// The dataset uploaded to `device`, filled on first use in device-resident mode.
    resident: Mutex<Option<(Tensor, Tensor)>>,
}

impl std::fmt::Debug for DataLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataLoader")
            .field("samples", &self.dataset.len())
            .field("batch_size", &self.plan.batch_size())
            .field("shuffle_seed", &self.plan.shuffle_seed())
            .field("drop_last", &self.plan.drop_last())
            .field("device", &self.device.to_string())
            .field("prefetch", &self.prefetch)
            .field("device_resident", &self.device_resident)
            .finish()
    }
}

impl DataLoader {
    /// A loader over `dataset` with `batch_size` samples per batch: no shuffling, last
    /// partial batch kept, batches on the CPU, prefetch depth 2.
    ///
    /// Errors: [`Error::InvalidArgument`] when `batch_size` is 0.
    pub fn new(dataset: impl Dataset + 'static, batch_size: usize) -> Result<Self> {
        DataLoader::from_arc(Arc::new(dataset), batch_size)
    }

    /// Like [`new`](Self::new) for a dataset that is already shared.
    pub fn from_arc(dataset: Arc<dyn Dataset>, batch_size: usize) -> Result<Self> {
        Ok(DataLoader {
            dataset,
            plan: EpochPlan::new("DataLoader", batch_size)?,
            device: Device::Cpu,
            prefetch: 2,
            device_resident: false,
            resident: Mutex::new(None),
        })
    }

    /// Shuffle every epoch; epoch `e` uses the permutation drawn from `seed + e`.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.plan.set_shuffle(seed);
        self
    }

    /// Drop the last batch when it would be smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.plan.set_drop_last(drop_last);
        self
    }

    /// Deliver batches on `device` (default: the CPU).
    pub fn to_device(mut self, device: &Device) -> Self {
        if *device != self.device {
            self.device = device.clone();
            self.clear_resident();
        }
        self
    }

    /// How many batches the background thread may prepare ahead (0 = no thread: batches are
    /// built on the calling thread). Ignored in device-resident mode.
    pub fn prefetch(mut self, depth: usize) -> Self {
        self.prefetch = depth;
        self
    }

    /// Upload the whole dataset to the target device once (on the first iteration) and
    /// gather every batch there.
    pub fn device_resident(mut self, resident: bool) -> Self {
        self.device_resident = resident;
        self.clear_resident();
        self
    }

    fn clear_resident(&mut self) {
        *self.resident.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Number of batches per epoch (PyTorch's `len(loader)`).
    pub fn len(&self) -> usize {
        self.plan.batches(self.dataset.len())
    }

    /// True when an epoch yields no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Samples in the dataset.
    pub fn dataset_len(&self) -> usize {
        self.dataset.len()
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<dyn Dataset> {
        &self.dataset
    }

    /// Samples per batch.
    pub fn batch_size(&self) -> usize {
        self.plan.batch_size()
    }

    /// The device batches are delivered on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Set the epoch the next [`iter`](Self::iter) uses (PyTorch's `sampler.set_epoch`).
    pub fn set_epoch(&self, epoch: u64) {
        self.plan.set_epoch(epoch);
    }

    /// The sample order of `epoch` ([`epoch_order`](crate::epoch_order)): a permutation from
    /// `seed + epoch` when shuffling, else `0..n`. Batches are consecutive runs of it.
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        self.plan.order(self.dataset.len(), epoch)
    }

    /// The batches of the next epoch (0, then 1, 2, ... on successive calls, or what
    /// [`set_epoch`](Self::set_epoch) set). `for batch in &loader` does the same.
    pub fn iter(&self) -> Batches {
        self.iter_epoch(self.plan.advance())
    }

    /// The batches of `epoch`. Each item is `Result<(inputs, labels)>`; after an error the
    /// iterator ends.
    pub fn iter_epoch(&self, epoch: u64) -> Batches {
        let order = self.plan.visited(self.dataset.len(), epoch);
        let batches = self.len();
        let source = if self.device_resident {
            match self.resident_source(order) {
                Ok(source) => source,
                Err(error) => Source::Failed(Some(error)),
            }
        } else if self.prefetch > 0 && batches > 0 {
            self.prefetch_source(order)
        } else {
            Source::Direct {
                dataset: self.dataset.clone(),
                order,
                position: 0,
            }
        };
        // A setup error is reported as one item even when the epoch would be empty.
        let remaining = match source {
            Source::Failed(_) => 1,
            _ => batches,
        };
        Batches {
            source,
            batch_size: self.plan.batch_size(),
            device: self.device.clone(),
            remaining,
        }
    }

    /// Start the worker thread; falls back to building batches on the caller's thread when
    /// the OS refuses a thread.
    fn prefetch_source(&self, order: Vec<usize>) -> Source {
        let (sender, receiver) = sync_channel(self.prefetch);
        let dataset = self.dataset.clone();
        let batch_size = self.plan.batch_size();
        let order = Arc::new(order);
        let worker_order = order.clone();
        let spawned = std::thread::Builder::new()
            .name("anygrad-data-prefetch".into())
            .spawn(move || {
                for chunk in worker_order.chunks(batch_size) {
                    let batch = dataset.get_batch(chunk);
                    let failed = batch.is_err();
                    // A send error means the consumer dropped the iterator: stop quietly.
                    if sender.send(batch).is_err() || failed {
                        return;
                    }
                }
            });
        match spawned {
            Ok(worker) => Source::Prefetch {
                receiver: Some(receiver),
                worker: Some(worker),
            },
            Err(_) => Source::Direct {
                dataset: self.dataset.clone(),
                order: Arc::try_unwrap(order).unwrap_or_else(|shared| (*shared).clone()),
                position: 0,
            },
        }
    }

    /// Upload the dataset on first use, then upload this epoch's index order.
    fn resident_source(&self, order: Vec<usize>) -> Result<Source> {
        let mut resident = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        let (features, labels) = match &*resident {
            Some(tensors) => tensors.clone(),
            None => {
                let all: Vec<usize> = (0..self.dataset.len()).collect();
                let (features, labels) = self.dataset.get_batch(&all)?;
                let uploaded = (
                    features.to_device(&self.device)?,
                    labels.to_device(&self.device)?,
                );
                *resident = Some(uploaded.clone());
                uploaded
            }
        };
        // Without shuffling, batches are plain slices (`narrow`): no gather, no index upload.
        let order = if self.plan.shuffle_seed().is_some() {
            Some(index_tensor(
                "DataLoader",
                &order,
                self.dataset.len(),
                &self.device,
            )?)
        } else {
            None
        };
        Ok(Source::Resident {
            features,
            labels,
            order,
            position: 0,
        })
    }
}

/// What a training loop needs from a loader, whichever kind it is ([`DataLoader`] over a
/// batch [`Dataset`], [`SampleLoader`](crate::SampleLoader) over a per-sample dataset):
/// batches per epoch, the device batches arrive on, and an epoch's batches.
pub trait BatchLoader {
    /// Number of batches per epoch.
    fn len(&self) -> usize;

    /// True when an epoch yields no batch.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device batches are delivered on.
    fn device(&self) -> &Device;

    /// The batches of `epoch` (the shuffle order and augmentation of that epoch).
    fn iter_epoch(&self, epoch: u64) -> Box<dyn Iterator<Item = Result<(Tensor, Tensor)>> + '_>;
}

impl<L: BatchLoader + ?Sized> BatchLoader for Box<L> {
    fn len(&self) -> usize {
        (**self).len()
    }

    fn device(&self) -> &Device {
        (**self).device()
    }

    fn iter_epoch(&self, epoch: u64) -> Box<dyn Iterator<Item = Result<(Tensor, Tensor)>> + '_> {
        (**self).iter_epoch(epoch)
    }
}

impl BatchLoader for DataLoader {
    fn len(&self) -> usize {
        DataLoader::len(self)
    }

    fn device(&self) -> &Device {
        DataLoader::device(self)
    }

    fn iter_epoch(&self, epoch: u64) -> Box<dyn Iterator<Item = Result<(Tensor, Tensor)>> + '_> {
        Box::new(DataLoader::iter_epoch(self, epoch))
    }
}

impl IntoIterator for &DataLoader {
    type Item = Result<(Tensor, Tensor)>;
    type IntoIter = Batches;

    fn into_iter(self) -> Batches {
        self.iter()
    }
}

/// Where an epoch's batches come from.
enum Source {
    /// Setting up the epoch failed; the error is the first (and only) item.
    Failed(Option<Error>),
    /// Built on the consumer's thread.
    Direct {
        dataset: Arc<dyn Dataset>,
        order: Vec<usize>,
        position: usize,
    },
    /// Built by a worker thread, received through a bounded channel.
    Prefetch {
        receiver: Option<Receiver<Result<(Tensor, Tensor)>>>,
        worker: Option<JoinHandle<()>>,
    },
    /// Gathered on the device from the uploaded dataset.
    Resident {
        features: Tensor,
        labels: Tensor,
        /// The epoch's permutation as a device index tensor; `None` means `0..n` in order.
        order: Option<Tensor>,
        position: usize,
    },
}

/// The batches of one epoch: an iterator of `Result<(inputs, labels)>` on the loader's
/// device. Dropping it early stops the prefetch thread.
pub struct Batches {
    source: Source,
    batch_size: usize,
    device: Device,
    remaining: usize,
}

impl Batches {
    fn next_batch(&mut self) -> Result<(Tensor, Tensor)> {
        let batch_size = self.batch_size;
        match &mut self.source {
            Source::Failed(error) => Err(error
                .take()
                .unwrap_or_else(|| Error::invalid("DataLoader", "iterator already failed"))),
            Source::Direct {
                dataset,
                order,
                position,
            } => {
                let end = (*position + batch_size).min(order.len());
                let batch = dataset.get_batch(&order[*position..end])?;
                *position = end;
                upload(batch, &self.device)
            }
            Source::Prefetch { receiver, worker } => {
                let received = receiver.as_ref().map(|r| r.recv());
                match received {
                    Some(Ok(batch)) => upload(batch?, &self.device),
                    _ => Err(worker_failure(worker.take())),
                }
            }
            Source::Resident {
                features,
                labels,
                order,
                position,
            } => {
                let len = batch_size.min(features.shape()[0].saturating_sub(*position));
                let batch = match order {
                    Some(order) => {
                        let index = order.narrow(0, *position, len)?;
                        (
                            features.index_select(0, &index)?,
                            labels.index_select(0, &index)?,
                        )
                    }
                    None => (
                        features.narrow(0, *position, len)?,
                        labels.narrow(0, *position, len)?,
                    ),
                };
                *position += len;
                Ok(batch)
            }
        }
    }
}

/// Move a CPU-built batch to the target device (a no-op when it is already there).
fn upload((inputs, labels): (Tensor, Tensor), device: &Device) -> Result<(Tensor, Tensor)> {
    Ok((inputs.to_device(device)?, labels.to_device(device)?))
}

/// The error to report when the prefetch channel closed before the epoch ended: the worker
/// panicked (its dataset's `get_batch` did).
fn worker_failure(worker: Option<JoinHandle<()>>) -> Error {
    let message = match worker.map(JoinHandle::join) {
        Some(Err(payload)) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into()),
        _ => "the worker stopped early".into(),
    };
    Error::invalid(
        "DataLoader",
        format!("the prefetch thread failed while building a batch: {message}"),
    )
}

impl Iterator for Batches {
    type Item = Result<(Tensor, Tensor)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let batch = self.next_batch();
        self.remaining = if batch.is_err() {
            0
        } else {
            self.remaining - 1
        };
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

impl Drop for Batches {
    fn drop(&mut self) {
        if let Source::Prefetch { receiver, worker } = &mut self.source {
            // Close the channel first so a worker blocked on `send` wakes up and exits.
            drop(receiver.take());
            if let Some(worker) = worker.take() {
                let _ = worker.join();
            }
        }
    }
}
