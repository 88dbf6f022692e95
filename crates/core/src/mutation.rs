//! The mutation epoch: a counter that every in-place write into an existing storage advances
//! (`Tensor::storage_mut`, the one path for such writes: `Tensor::assign`, which optimizers
//! and state loading use). A value derived from storages and cached — an eval-mode batch norm
//! folded into a scale and a shift, an autocast copy of a parameter, a convolution weight
//! rearranged for the GPU kernels — stays valid while the epoch is unchanged and its sources
//! are the same storages. It sits below the tensor and backend layers so that both can read it.

use std::sync::atomic::{AtomicU64, Ordering};

/// In-place writes into storages so far.
static MUTATIONS: AtomicU64 = AtomicU64::new(0);

/// The current epoch: it changes whenever any tensor's data is written in place. A cached
/// value derived from tensors stays valid while the epoch and the tensors' ids are unchanged:
/// new tensors get new ids, and nothing else changes a tensor's data.
pub fn mutation_epoch() -> u64 {
    MUTATIONS.load(Ordering::Relaxed)
}

/// Record an in-place write (called before the write: a reader that sees the old epoch
/// after the write began would keep a stale value otherwise).
pub(crate) fn note_mutation() {
    MUTATIONS.fetch_add(1, Ordering::Relaxed);
}
