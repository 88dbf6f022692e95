//! The device's counters and the memory controls behind `memory_stats`, `empty_cache`,
//! `reset_peak_memory`, `fusion_stats` and `kernel_dispatches`.

use std::sync::atomic::Ordering;

use super::GpuContext;
use crate::backend::gpu_facts::{FusionStats, KernelDispatches, MemoryStats};

impl GpuContext {
    /// Counters of elementwise fusion on this device.
    pub(crate) fn fusion_stats(&self) -> FusionStats {
        FusionStats {
            ops_deferred: self.fused_ops.load(Ordering::Relaxed),
            kernels: self.fused_kernels.load(Ordering::Relaxed),
        }
    }

    /// Kernels dispatched on this device since it opened, by name (deferred elementwise ops
    /// count once recorded, as the kernels they were fused into).
    pub(crate) fn kernel_dispatches(&self) -> KernelDispatches {
        let recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        KernelDispatches {
            by_kernel: recording
                .dispatch_counts
                .iter()
                .map(|(name, count)| (name.to_string(), *count))
                .collect(),
        }
    }

    /// Dispatches whose parameter words were found in the cache (`runtime/context/reuse.rs`).
    #[cfg(test)]
    pub(crate) fn cached_parameter_hits(&self) -> u64 {
        let recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        recording.param_cache.hits
    }

    /// Memory counters.
    pub(crate) fn memory_stats(&self) -> MemoryStats {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).stats()
    }

    /// Count a sliced plan's computation that was refused as too large and is run again in
    /// smaller slices (`MemoryStats::sliced_retries`).
    pub(crate) fn note_sliced_retry(&self) {
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record_sliced_retry();
    }

    /// Release cached buffers and rearranged weights (after finishing pending work, so
    /// nothing in flight is lost).
    pub(crate) fn empty_cache(&self) {
        // The families' caches (the rearranged convolution weights) go back to the pool first.
        for clear in self.hooks.clear_caches {
            clear(self.ordinal);
        }
        if let Err(error) = self.flush() {
            tracing::warn!("empty_cache: flush failed: {error}");
        }
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .empty_cache();
    }

    /// Restart peak tracking.
    pub(crate) fn reset_peak(&self) {
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .reset_peak();
    }
}
