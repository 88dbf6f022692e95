//! `SampleLoader`: batches from a [`SampleDataset`], built by worker threads ahead of the
//! consumer (PyTorch's `DataLoader(dataset, batch_size, shuffle, num_workers, drop_last,
//! collate_fn)` over a map-style dataset).
//!
//! - **Workers.** With `num_workers(n)`, `n > 0`, a producer thread builds batch after batch:
//!   the samples of a batch are loaded, decoded and augmented in parallel on a rayon pool
//!   of `n` threads (owned by the loader, separate from rayon's global pool), then collated.
//!   Up to `prefetch` finished batches (default 2) wait in a bounded channel while the
//!   consumer trains, so decoding overlaps the training step. `num_workers(0)` builds every
//!   batch on the consumer's thread, like PyTorch. The pool never has more threads than
//!   help: see [`SampleLoader::num_workers`].
//! - **Upload.** Batches are collated on the CPU and moved to the target device on the
//!   consumer's thread (where the training step runs) as they are taken.
//! - **Determinism.** Epoch `e` visits the samples in the permutation of `shuffle_seed + e`
//!   ([`epoch_order`](crate::epoch_order) decides it for this loader and
//!   [`DataLoader`](crate::DataLoader) alike); sample `i` of epoch `e` draws its augmentation
//!   from `SplitMix64::new(sample_seed(seed, e, i))`. Batches are therefore identical for
//!   every `num_workers`.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anygrad_core::{Device, Error, Result, Tensor};
use rayon::prelude::*;

use crate::epoch::EpochPlan;
use crate::loader::BatchLoader;
use crate::rng::{sample_seed, SplitMix64};
use crate::sample::{collate, Sample, SampleDataset};

/// A collate function: samples of one batch to `(inputs, labels)` tensors.
pub type CollateFn = dyn Fn(Vec<Sample>) -> Result<(Tensor, Tensor)> + Send + Sync;

/// Iterates a [`SampleDataset`] in collated batches on a target device, with worker threads.
///
/// ```no_run
/// # use anygrad_core::{Device, Result};
/// use anygrad_data::transforms::{Compose, RandomCrop, ToTensor};
/// use anygrad_data::{ImageFolder, SampleLoader};
/// # fn main() -> Result<()> {
/// let train = ImageFolder::new("data/train")?
///     .transform(Compose::new().then(RandomCrop::new(32, 4)?).then(ToTensor));
/// let loader = SampleLoader::new(train, 64)?
///     .shuffle(0)
///     .num_workers(4)
///     .drop_last(true)
///     .to_device(&Device::best()?);
/// for epoch in 0..10 {
///     for batch in loader.iter_epoch(epoch) {
///         let (images, labels) = batch?; // F32 [64, 3, 32, 32], I32 [64]
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub struct SampleLoader {
    dataset: Arc<dyn SampleDataset>,
    /// Batch size, shuffling, `drop_last` and the next epoch.
    plan: EpochPlan,
    seed: u64,
    device: Device,
    num_workers: usize,
    prefetch: usize,
    collate: Arc<CollateFn>,
    /// The worker pool, built on the first epoch that needs it.
    pool: Mutex<Option<Arc<rayon::ThreadPool>>>,
}

impl std::fmt::Debug for SampleLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleLoader")
            .field("samples", &self.dataset.len())
            .field("batch_size", &self.plan.batch_size())
            .field("shuffle_seed", &self.plan.shuffle_seed())
            .field("seed", &self.seed)
            .field("drop_last", &self.plan.drop_last())
            .field("device", &self.device.to_string())
            .field("num_workers", &self.num_workers)
            .field("prefetch", &self.prefetch)
            .finish()
    }
}

impl SampleLoader {
    /// A loader over `dataset` with `batch_size` samples per batch: no shuffling,
    /// augmentation seed 0, last partial batch kept, batches on the CPU, no worker threads,
    /// prefetch depth 2 (used once workers are on), the default [`collate`].
    ///
    /// Errors: [`Error::InvalidArgument`] for batch size 0.
    pub fn new(dataset: impl SampleDataset + 'static, batch_size: usize) -> Result<Self> {
        SampleLoader::from_arc(Arc::new(dataset), batch_size)
    }

    /// Like [`new`](Self::new) for a dataset already shared.
    pub fn from_arc(dataset: Arc<dyn SampleDataset>, batch_size: usize) -> Result<Self> {
        Ok(SampleLoader {
            dataset,
            plan: EpochPlan::new("SampleLoader", batch_size)?,
            seed: 0,
            device: Device::Cpu,
            num_workers: 0,
            prefetch: 2,
            collate: Arc::new(collate),
            pool: Mutex::new(None),
        })
    }

    /// Shuffle every epoch: epoch `e` uses the permutation drawn from `seed + e`.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.plan.set_shuffle(seed);
        self
    }

    /// The seed of the augmentation randomness (default 0): sample `i` of epoch `e` draws
    /// from [`sample_seed`]`(seed, e, i)`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Drop the last batch when it would be smaller than `batch_size`.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.plan.set_drop_last(drop_last);
        self
    }

    /// Deliver batches on `device` (default: the CPU).
    pub fn to_device(mut self, device: &Device) -> Self {
        self.device = device.clone();
        self
    }

    /// Threads that load and transform samples (0: none, everything on the caller's
    /// thread).
    ///
    /// **Cap.** The samples of a batch are built in parallel and the batches one after
    /// another, so threads beyond the machine's cores
    /// ([`std::thread::available_parallelism`]) or beyond the samples of one batch (the
    /// batch size, or the whole data set when it is smaller) cannot load faster: they only
    /// cost start-up time and memory (20,000 threads for 21 images took minutes to start).
    /// The loader therefore starts [`worker_count`](Self::worker_count) threads, `workers`
    /// capped at both (and at least one when `workers > 0`).
    pub fn num_workers(mut self, workers: usize) -> Self {
        if workers != self.num_workers {
            *self.pool.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        }
        self.num_workers = workers;
        self
    }

    /// How many finished batches may wait for the consumer (default 2; with workers only;
    /// at most the number of batches of an epoch is used, since no more can ever wait).
    pub fn prefetch(mut self, depth: usize) -> Self {
        self.prefetch = depth;
        self
    }

    /// Replace the default [`collate`] (PyTorch's `collate_fn`).
    pub fn collate_fn(
        mut self,
        collate: impl Fn(Vec<Sample>) -> Result<(Tensor, Tensor)> + Send + Sync + 'static,
    ) -> Self {
        self.collate = Arc::new(collate);
        self
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

    /// The worker threads asked for with [`num_workers`](Self::num_workers).
    pub fn requested_workers(&self) -> usize {
        self.num_workers
    }

    /// The worker threads the loader starts: the [`num_workers`](Self::num_workers) asked
    /// for, capped at the available cores and at the samples of one batch (0 stays 0).
    pub fn worker_count(&self) -> usize {
        if self.num_workers == 0 {
            return 0;
        }
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        let per_batch = self.plan.batch_size().min(self.dataset.len()).max(1);
        self.num_workers.min(cores).min(per_batch)
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<dyn SampleDataset> {
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

    /// Set the epoch the next [`iter`](Self::iter) uses.
    pub fn set_epoch(&self, epoch: u64) {
        self.plan.set_epoch(epoch);
    }

    /// The sample order of `epoch` ([`epoch_order`](crate::epoch_order)): a permutation from
    /// `shuffle_seed + epoch` when shuffling, else `0..n`.
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        self.plan.order(self.dataset.len(), epoch)
    }

    /// The batches of the next epoch (0, then 1, 2, ... or what
    /// [`set_epoch`](Self::set_epoch) set).
    pub fn iter(&self) -> SampleBatches {
        self.iter_epoch(self.plan.advance())
    }

    /// The batches of `epoch`, each `Result<(inputs, labels)>` on the loader's device;
    /// after an error the iterator ends. Dropping it early stops the producer thread.
    pub fn iter_epoch(&self, epoch: u64) -> SampleBatches {
        let order = self.plan.visited(self.dataset.len(), epoch);
        let batches = self.len();
        let job = BatchJob {
            dataset: self.dataset.clone(),
            collate: self.collate.clone(),
            seed: self.seed,
            epoch,
        };
        let source = if self.num_workers == 0 || batches == 0 {
            Source::Direct {
                job,
                order,
                position: 0,
            }
        } else {
            match self.worker_pool() {
                Ok(pool) => self.spawn_producer(job, order, pool),
                Err(error) => Source::Failed(Some(error)),
            }
        };
        let remaining = match source {
            Source::Failed(_) => 1,
            _ => batches,
        };
        SampleBatches {
            source,
            batch_size: self.plan.batch_size(),
            device: self.device.clone(),
            remaining,
        }
    }

    fn worker_pool(&self) -> Result<Arc<rayon::ThreadPool>> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pool) = &*pool {
            return Ok(pool.clone());
        }
        let workers = self.worker_count();
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|index| format!("anygrad-data-worker-{index}"))
            .build()
            .map_err(|error| {
                Error::invalid(
                    "SampleLoader",
                    format!("cannot start {workers} worker threads: {error}"),
                )
            })?;
        let built = Arc::new(built);
        *pool = Some(built.clone());
        Ok(built)
    }

    fn spawn_producer(
        &self,
        job: BatchJob,
        order: Vec<usize>,
        pool: Arc<rayon::ThreadPool>,
    ) -> Source {
        // No more batches than an epoch has can wait (the channel allocates its slots).
        let batch_size = self.plan.batch_size();
        let depth = self.prefetch.min(order.len().div_ceil(batch_size));
        let (sender, receiver) = sync_channel(depth);
        let order = Arc::new(order);
        let producer_order = order.clone();
        let producer_job = job.clone();
        let spawned = std::thread::Builder::new()
            .name("anygrad-data-producer".into())
            .spawn(move || {
                for chunk in producer_order.chunks(batch_size) {
                    let batch = pool.install(|| producer_job.build_parallel(chunk));
                    let failed = batch.is_err();
                    // A send error means the consumer dropped the iterator: stop quietly.
                    if sender.send(batch).is_err() || failed {
                        return;
                    }
                }
            });
        match spawned {
            Ok(worker) => Source::Workers {
                receiver: Some(receiver),
                worker: Some(worker),
            },
            // The OS refused a thread: build on the consumer's thread instead.
            Err(_) => Source::Direct {
                job,
                order: Arc::try_unwrap(order).unwrap_or_else(|shared| (*shared).clone()),
                position: 0,
            },
        }
    }
}

impl BatchLoader for SampleLoader {
    fn len(&self) -> usize {
        SampleLoader::len(self)
    }

    fn device(&self) -> &Device {
        SampleLoader::device(self)
    }

    fn iter_epoch(&self, epoch: u64) -> Box<dyn Iterator<Item = Result<(Tensor, Tensor)>> + '_> {
        Box::new(SampleLoader::iter_epoch(self, epoch))
    }
}

impl IntoIterator for &SampleLoader {
    type Item = Result<(Tensor, Tensor)>;
    type IntoIter = SampleBatches;

    fn into_iter(self) -> SampleBatches {
        self.iter()
    }
}

/// What building a batch needs, shared with the producer thread.
#[derive(Clone)]
struct BatchJob {
    dataset: Arc<dyn SampleDataset>,
    collate: Arc<CollateFn>,
    seed: u64,
    epoch: u64,
}

impl BatchJob {
    fn sample(&self, index: usize) -> Result<Sample> {
        let mut rng = SplitMix64::new(sample_seed(self.seed, self.epoch, index as u64));
        self.dataset.sample(index, &mut rng)
    }

    /// The batch of `indices`, samples built one after another.
    fn build(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let samples = indices
            .iter()
            .map(|&index| self.sample(index))
            .collect::<Result<Vec<_>>>()?;
        (self.collate)(samples)
    }

    /// The batch of `indices`, samples built in parallel on the current rayon pool.
    fn build_parallel(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        let samples = indices
            .par_iter()
            .map(|&index| self.sample(index))
            .collect::<Result<Vec<_>>>()?;
        (self.collate)(samples)
    }
}

/// Where an epoch's batches come from.
enum Source {
    /// Setting up the epoch failed; the error is the first (and only) item.
    Failed(Option<Error>),
    /// Built on the consumer's thread.
    Direct {
        job: BatchJob,
        order: Vec<usize>,
        position: usize,
    },
    /// Built by the producer thread and the worker pool, received through a bounded channel.
    Workers {
        receiver: Option<Receiver<Result<(Tensor, Tensor)>>>,
        worker: Option<JoinHandle<()>>,
    },
}

/// The batches of one epoch of a [`SampleLoader`]: an iterator of `Result<(inputs,
/// labels)>` on the loader's device. Dropping it early stops the producer thread.
pub struct SampleBatches {
    source: Source,
    batch_size: usize,
    device: Device,
    remaining: usize,
}

impl SampleBatches {
    fn next_batch(&mut self) -> Result<(Tensor, Tensor)> {
        let (inputs, labels) = match &mut self.source {
            Source::Failed(error) => {
                return Err(error
                    .take()
                    .unwrap_or_else(|| Error::invalid("SampleLoader", "iterator already failed")))
            }
            Source::Direct {
                job,
                order,
                position,
            } => {
                let end = (*position + self.batch_size).min(order.len());
                let batch = job.build(&order[*position..end])?;
                *position = end;
                batch
            }
            Source::Workers { receiver, worker } => {
                match receiver.as_ref().map(|receiver| receiver.recv()) {
                    Some(Ok(batch)) => batch?,
                    _ => return Err(worker_failure(worker.take())),
                }
            }
        };
        Ok((
            inputs.to_device(&self.device)?,
            labels.to_device(&self.device)?,
        ))
    }
}

/// The error to report when the producer stopped before the epoch ended: it (or a sample's
/// loading code on a worker) panicked.
fn worker_failure(worker: Option<JoinHandle<()>>) -> Error {
    let message = match worker.map(JoinHandle::join) {
        Some(Err(payload)) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into()),
        _ => "the producer stopped early".into(),
    };
    Error::invalid(
        "SampleLoader",
        format!("a worker failed while building a batch: {message}"),
    )
}

impl Iterator for SampleBatches {
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

impl Drop for SampleBatches {
    fn drop(&mut self) {
        if let Source::Workers { receiver, worker } = &mut self.source {
            // Close the channel first so a producer blocked on `send` wakes up and exits.
            drop(receiver.take());
            if let Some(worker) = worker.take() {
                let _ = worker.join();
            }
        }
    }
}
