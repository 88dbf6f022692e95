//! The mutation epoch: a counter that every in-place write into an existing storage advances
//! (`Tensor::storage_mut`, the one path for such writes: `Tensor::assign`, which optimizers
//! and state loading use). A value derived from storages and cached — an eval-mode batch norm
//! folded into a scale and a shift, an autocast copy of a parameter, a convolution weight
//! rearranged for the GPU kernels — stays valid while the epoch is unchanged and its sources
//! are the same storages. It sits below the tensor and backend layers so that both can read it.
//!
//! Writes into GPU storages also record which storage they wrote (its token,
//! `GpuStorage::loan`), so that a value derived from one storage can ask whether *that*
//! storage was written since (`WriteLogView::written_since`) and survive writes into others: a training
//! step's batch norms update their running statistics in place between a convolution's
//! forward and its backward, which must not discard the forward's copy of its input
//! (`backend/gpu/conv/weight_cache.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// In-place writes into storages so far.
static MUTATIONS: AtomicU64 = AtomicU64::new(0);

/// The current epoch: it changes whenever any tensor's data is written in place. A cached
/// value derived from tensors stays valid while the epoch and the tensors' ids are unchanged:
/// new tensors get new ids, and nothing else changes a tensor's data.
pub fn mutation_epoch() -> u64 {
    MUTATIONS.load(Ordering::Relaxed)
}

/// Storages written in place, by token, with the epoch of their last write; `floor`: the
/// epoch of the last write into an unknown storage (anything made before it may be stale).
struct WriteLog {
    last: BTreeMap<u64, u64>,
    floor: u64,
}

static WRITES: Mutex<WriteLog> = Mutex::new(WriteLog {
    last: BTreeMap::new(),
    floor: 0,
});

/// Storages the log names before it forgets them all (raising its floor instead).
const LOGGED_STORAGES: usize = 1 << 16;

/// Record an in-place write into the storage with token `token` (a GPU storage's), or into a
/// storage no derived value is kept of (`None`: a CPU storage). Advances the epoch; called
/// before the write.
pub(crate) fn note_write(token: Option<u64>) {
    let epoch = MUTATIONS.fetch_add(1, Ordering::Relaxed) + 1;
    if let Some(token) = token {
        let mut log = WRITES.lock().unwrap_or_else(|p| p.into_inner());
        if log.last.len() >= LOGGED_STORAGES {
            log.last.clear();
            log.floor = epoch;
        }
        log.last.insert(token, epoch);
    }
}

/// Record an in-place write into a storage not named: every value derived before it is
/// treated as stale by `WriteLogView::written_since`.
#[cfg(all(test, feature = "gpu"))]
pub(crate) fn note_unknown_write() {
    let epoch = MUTATIONS.fetch_add(1, Ordering::Relaxed) + 1;
    WRITES.lock().unwrap_or_else(|p| p.into_inner()).floor = epoch;
}

/// The write log, locked: for checking many derived values at once (the GPU's kept copies).
#[cfg(feature = "gpu")]
pub(crate) struct WriteLogView(std::sync::MutexGuard<'static, WriteLog>);

#[cfg(feature = "gpu")]
impl WriteLogView {
    /// Whether the storage with token `token` may have been written in place after `epoch` (a
    /// value of [`mutation_epoch`] read before deriving from it).
    pub(crate) fn written_since(&self, token: u64, epoch: u64) -> bool {
        epoch < self.0.floor || self.0.last.get(&token).is_some_and(|&last| last > epoch)
    }
}

/// The write log, locked until the view is dropped (take no other lock of this module then).
#[cfg(feature = "gpu")]
pub(crate) fn write_log() -> WriteLogView {
    WriteLogView(WRITES.lock().unwrap_or_else(|p| p.into_inner()))
}
