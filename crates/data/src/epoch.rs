//! Which samples an epoch visits, in which order and in which batches: the one rule both
//! [`DataLoader`](crate::DataLoader) and [`SampleLoader`](crate::SampleLoader) follow.
//!
//! Without shuffling an epoch visits `0..n` in order. With a shuffle seed, epoch `e` visits
//! the permutation drawn from `seed + e` (wrapping; SplitMix64 Fisher–Yates, see
//! [`permutation`]), so every run and every machine sees the same batches and successive
//! epochs differ. Batches are consecutive runs of `batch_size` samples of that order; with
//! `drop_last` a final shorter run is left out.

use std::sync::atomic::{AtomicU64, Ordering};

use anygrad_core::{Error, Result};

use crate::rng::permutation;

/// The sample order of `epoch` over `samples` samples: the permutation drawn from
/// `shuffle_seed + epoch` when shuffling, else `0..samples`.
pub fn epoch_order(samples: usize, shuffle_seed: Option<u64>, epoch: u64) -> Vec<usize> {
    match shuffle_seed {
        Some(seed) => permutation(samples, seed.wrapping_add(epoch)),
        None => (0..samples).collect(),
    }
}

/// A loader's batching and shuffling settings and the epoch its next plain iteration uses.
#[derive(Debug)]
pub(crate) struct EpochPlan {
    batch_size: usize,
    shuffle_seed: Option<u64>,
    drop_last: bool,
    /// The epoch the next `iter()` call uses.
    next_epoch: AtomicU64,
}

impl EpochPlan {
    /// Batches of `batch_size` samples in order, the last partial batch kept, starting at
    /// epoch 0. Errors: `InvalidArgument` from `loader` for a batch size of 0.
    pub fn new(loader: &'static str, batch_size: usize) -> Result<EpochPlan> {
        if batch_size == 0 {
            return Err(Error::invalid(loader, "batch_size must be at least 1"));
        }
        Ok(EpochPlan {
            batch_size,
            shuffle_seed: None,
            drop_last: false,
            next_epoch: AtomicU64::new(0),
        })
    }

    /// Shuffle every epoch: epoch `e` uses the permutation drawn from `seed + e`.
    pub fn set_shuffle(&mut self, seed: u64) {
        self.shuffle_seed = Some(seed);
    }

    /// Leave out the last batch when it would be shorter than the batch size.
    pub fn set_drop_last(&mut self, drop_last: bool) {
        self.drop_last = drop_last;
    }

    /// Samples per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The shuffle seed (`None`: no shuffling).
    pub fn shuffle_seed(&self) -> Option<u64> {
        self.shuffle_seed
    }

    /// Whether a last shorter batch is left out.
    pub fn drop_last(&self) -> bool {
        self.drop_last
    }

    /// Batches per epoch over `samples` samples (PyTorch's `len(loader)`).
    pub fn batches(&self, samples: usize) -> usize {
        if self.drop_last {
            samples / self.batch_size
        } else {
            samples.div_ceil(self.batch_size)
        }
    }

    /// The order of `epoch` over `samples` samples ([`epoch_order`]).
    pub fn order(&self, samples: usize, epoch: u64) -> Vec<usize> {
        epoch_order(samples, self.shuffle_seed, epoch)
    }

    /// The samples `epoch` delivers, in order: [`EpochPlan::order`] without the samples of a
    /// dropped last batch. Its chunks of the batch size are the epoch's batches.
    pub fn visited(&self, samples: usize, epoch: u64) -> Vec<usize> {
        let mut order = self.order(samples, epoch);
        let kept = self.batches(samples).saturating_mul(self.batch_size);
        order.truncate(kept.min(order.len()));
        order
    }

    /// Set the epoch the next [`EpochPlan::advance`] returns (PyTorch's `sampler.set_epoch`).
    pub fn set_epoch(&self, epoch: u64) {
        self.next_epoch.store(epoch, Ordering::Relaxed);
    }

    /// The epoch of the next plain iteration, moving on to the one after it.
    pub fn advance(&self) -> u64 {
        self.next_epoch.fetch_add(1, Ordering::Relaxed)
    }
}
