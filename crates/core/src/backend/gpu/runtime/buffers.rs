//! The GPU caching allocator. Creating a `wgpu::Buffer` asks the driver for device memory,
//! which is slow (a system call, sometimes a page-table update) and fragments memory; deep
//! learning allocates and frees the same few sizes every step. So, like PyTorch's CUDA caching
//! allocator, freed buffers go back into per-size-class free lists and the next request of that
//! class reuses one without touching the driver.
//!
//! Two GPU-specific rules shape the pool:
//! - **Reuse only after submit.** Ops record work into an open command encoder that the GPU has
//!   not seen yet. A tensor dropped while its buffer is still referenced by recorded (unsubmitted)
//!   work must not be handed out again and overwritten by a `queue.write_buffer` (which the queue
//!   runs *before* the pending encoder). Released buffers therefore wait in `pending` until the
//!   encoder is submitted; later submissions run after earlier ones, so reuse is then safe.
//! - **Size classes.** Requests are rounded up (powers of two up to 1 MiB, then 32 classes per
//!   doubling, at most 3.1% waste: large buffers dominate training memory, and each step asks
//!   for the same sizes again, so fine classes still reuse) so that nearby sizes share buffers.
//!
//! Allocation failure empties the cache and retries once, then reports `Error::OutOfMemory`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::backend::gpu_facts::MemoryStats;
use crate::error::{Error, Result};

/// Smallest buffer handed out (also what an empty tensor gets: wgpu cannot bind 0 bytes).
const MINIMUM_BUFFER_BYTES: u64 = 256;

/// Every buffer can be bound as storage, and copied from and to (uploads, readbacks, clones).
pub(crate) const BUFFER_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// What a buffer holds: tensor data (counted in `allocated_bytes`). Kernel parameters no
/// longer come from the pool (they live in the context's parameter arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufferKind {
    Tensor,
}

/// The pool's bookkeeping (behind the context's mutex).
#[derive(Debug, Default)]
pub(crate) struct PoolState {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    pending: Vec<wgpu::Buffer>,
    pub(crate) caching: bool,
    stats: MemoryStats,
}

/// A shared handle to the pool, kept by every pooled buffer so that its drop can give the
/// buffer back even after the context's other handles are gone.
pub(crate) type SharedPool = Arc<Mutex<PoolState>>;

/// Round `bytes` up to its size class.
pub(crate) fn size_class(bytes: u64) -> u64 {
    let bytes = bytes.max(MINIMUM_BUFFER_BYTES);
    if bytes <= 1 << 20 {
        bytes.next_power_of_two()
    } else {
        // 32 classes between 2^k and 2^(k+1): steps of 2^k / 32.
        let step = bytes.next_power_of_two() / 64;
        bytes.div_ceil(step) * step
    }
}

/// A device buffer on loan from the pool; dropping it returns the buffer to the pool.
#[derive(Debug)]
pub(crate) struct PooledBuffer {
    buffer: Option<wgpu::Buffer>,
    size: u64,
    /// The bytes asked for (`size` is its size class).
    requested: u64,
    kind: BufferKind,
    pool: Weak<Mutex<PoolState>>,
}

/// Where a tensor's buffer is, shared by the tensor and by deferred work that reads or writes
/// it: filled at allocation, or — for the result of a deferred elementwise op — only when the
/// op is dispatched as a kernel of its own (a result computed inside another kernel never gets
/// memory). The buffer returns to the pool when the last holder drops.
pub(crate) type BufferSlot = Arc<OnceLock<PooledBuffer>>;

impl PooledBuffer {
    /// The wgpu buffer (always present until drop).
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        // The Option is only emptied inside `drop`.
        match &self.buffer {
            Some(buffer) => buffer,
            None => unreachable!("pooled buffer used after drop"),
        }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        let Some(buffer) = self.buffer.take() else {
            return;
        };
        let Some(pool) = self.pool.upgrade() else {
            return;
        };
        let mut state = pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if self.kind == BufferKind::Tensor {
            state.stats.allocated_bytes = state.stats.allocated_bytes.saturating_sub(self.size);
            state.stats.requested_bytes =
                state.stats.requested_bytes.saturating_sub(self.requested);
            state.stats.allocation_count = state.stats.allocation_count.saturating_sub(1);
        }
        // Not reusable before the encoder that may still reference it is submitted.
        state.pending.push(buffer);
    }
}

impl PoolState {
    /// Called after every queue submit: buffers released before it may now be reused (or, with
    /// caching off, given back to the driver).
    pub(crate) fn promote_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for buffer in pending {
            if self.caching {
                self.stats.cached_bytes += buffer.size();
                self.free.entry(buffer.size()).or_default().push(buffer);
            } else {
                self.stats.reserved_bytes = self.stats.reserved_bytes.saturating_sub(buffer.size());
                buffer.destroy();
            }
        }
    }

    /// Give every cached buffer back to the driver.
    pub(crate) fn empty_cache(&mut self) {
        for (_, buffers) in self.free.drain() {
            for buffer in buffers {
                self.stats.reserved_bytes = self.stats.reserved_bytes.saturating_sub(buffer.size());
                buffer.destroy();
            }
        }
        self.stats.cached_bytes = 0;
    }

    /// A copy of the counters.
    pub(crate) fn stats(&self) -> MemoryStats {
        self.stats.clone()
    }

    /// Count a sliced computation that is run again in smaller slices.
    pub(crate) fn record_sliced_retry(&mut self) {
        self.stats.sliced_retries += 1;
    }

    /// Restart peak tracking from the current allocation.
    pub(crate) fn reset_peak(&mut self) {
        self.stats.peak_allocated_bytes = self.stats.allocated_bytes;
        self.stats.peak_requested_bytes = self.stats.requested_bytes;
    }

    /// Put back peaks saved before transient work that is not the user's (the autotuner's
    /// timing runs): each peak becomes the larger of the saved one and the current level.
    pub(crate) fn restore_peak(&mut self, allocated: u64, requested: u64) {
        self.stats.peak_allocated_bytes = allocated.max(self.stats.allocated_bytes);
        self.stats.peak_requested_bytes = requested.max(self.stats.requested_bytes);
    }

    fn record_loan(&mut self, size: u64, requested: u64, kind: BufferKind) {
        if kind == BufferKind::Tensor {
            self.stats.allocated_bytes += size;
            self.stats.requested_bytes += requested;
            self.stats.peak_requested_bytes = self
                .stats
                .peak_requested_bytes
                .max(self.stats.requested_bytes);
            self.stats.allocation_count += 1;
            self.stats.peak_allocated_bytes = self
                .stats
                .peak_allocated_bytes
                .max(self.stats.allocated_bytes);
        }
    }
}

/// The largest buffer a kernel can bind whole: the storage-binding limit (never above the
/// buffer limit). Larger tensors are stored in pieces (`runtime/parts.rs`).
pub(crate) fn binding_limit(limits: &wgpu::Limits) -> u64 {
    limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size)
}

/// The adapter's limits with the storage binding capped by `ANYGRAD_MAX_BINDING_BYTES` (a
/// byte count, at least 4096, only ever lowering the limit). It makes the multi-buffer path of
/// large tensors (`runtime/parts.rs`, `runtime/sliced.rs`) run on small tensors, for tests and for reproducing
/// what a GPU with a smaller limit would do; an unusable value is ignored with a warning.
pub(crate) fn with_binding_cap(mut limits: wgpu::Limits) -> wgpu::Limits {
    let Ok(text) = std::env::var("ANYGRAD_MAX_BINDING_BYTES") else {
        return limits;
    };
    match text.trim().parse::<u64>() {
        Ok(cap) if cap >= 4096 => {
            let cap = cap / 4 * 4;
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap);
        }
        _ => tracing::warn!(
            "ANYGRAD_MAX_BINDING_BYTES={text:?} is not a byte count of at least 4096; using the adapter's limit"
        ),
    }
    limits
}

/// Where a binding limit of `limit` bytes comes from: `ANYGRAD_MAX_BINDING_BYTES` where that
/// variable lowered the adapter's limit to it, else the adapter itself.
pub(crate) fn limit_source(limit: u64) -> String {
    let from_variable = std::env::var("ANYGRAD_MAX_BINDING_BYTES")
        .ok()
        .filter(|text| {
            text.trim()
                .parse::<u64>()
                .is_ok_and(|cap| cap >= 4096 && cap / 4 * 4 == limit)
        });
    match from_variable {
        Some(text) => format!("set by ANYGRAD_MAX_BINDING_BYTES={}", text.trim()),
        None => "this adapter's largest storage binding, max_storage_buffer_binding_size".into(),
    }
}

/// The error for `requested` bytes that `op` (`""`: not known here; the op's dispatch names
/// it) needs in one buffer, above the binding limit `limit`.
pub(crate) fn too_large(op: &'static str, requested: u64, limit: u64) -> Error {
    Error::BufferTooLarge {
        op,
        operands: String::new(),
        requested,
        limit,
        limit_source: limit_source(limit),
    }
}

/// Refuse a request of `op` (`""` where not known) above the largest storage binding (a
/// bigger tensor could never be used by a kernel: say so now, as the per-buffer limit it is,
/// instead of failing later in validation). Returns that limit.
pub(crate) fn check_size(op: &'static str, bytes: u64, limits: &wgpu::Limits) -> Result<u64> {
    let binding_limit = binding_limit(limits);
    if bytes > binding_limit {
        return Err(too_large(op, bytes, binding_limit));
    }
    Ok(binding_limit)
}

/// Take a buffer of at least `bytes` from the pool, creating one through the driver when the
/// free list of its class is empty. Driver failures are caught with an error scope; on failure
/// the cache is emptied and the request retried once.
pub(crate) fn allocate(
    device: &wgpu::Device,
    pool: &SharedPool,
    bytes: u64,
    kind: BufferKind,
    limits: &wgpu::Limits,
) -> Result<PooledBuffer> {
    let in_use = || pool.lock().map(|s| s.stats.allocated_bytes).unwrap_or(0);
    let binding_limit = check_size("", bytes, limits)?;
    let mut class = size_class(bytes);
    if class > binding_limit {
        // Rounding must not push a legal request over the limit; storage sizes are 4-aligned.
        class = bytes.div_ceil(4) * 4;
    }
    {
        let mut state = pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(buffer) = state.free.get_mut(&class).and_then(Vec::pop) {
            state.stats.cached_bytes = state.stats.cached_bytes.saturating_sub(class);
            state.stats.cache_hits += 1;
            state.record_loan(class, bytes, kind);
            return Ok(PooledBuffer {
                buffer: Some(buffer),
                size: class,
                requested: bytes,
                kind,
                pool: Arc::downgrade(pool),
            });
        }
    }
    let buffer = match create_checked(device, class) {
        Some(buffer) => buffer,
        None => {
            // Free what the cache holds and try once more before giving up.
            {
                let mut state = pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                state.stats.out_of_memory_retries += 1;
                state.empty_cache();
            }
            create_checked(device, class).ok_or_else(|| Error::OutOfMemory {
                requested: bytes,
                in_use: in_use(),
                limit: binding_limit,
            })?
        }
    };
    let mut state = pool.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    state.stats.driver_allocations += 1;
    state.stats.reserved_bytes += class;
    state.record_loan(class, bytes, kind);
    Ok(PooledBuffer {
        buffer: Some(buffer),
        size: class,
        requested: bytes,
        kind,
        pool: Arc::downgrade(pool),
    })
}

/// Create a buffer inside an error scope; `None` when the driver refused it.
fn create_checked(device: &wgpu::Device, size: u64) -> Option<wgpu::Buffer> {
    // Error scopes capture errors of the calls made between push and pop on this thread,
    // instead of sending them to the uncaptured-error handler.
    let memory_scope = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation_scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("anygrad tensor"),
        size,
        usage: BUFFER_USAGE,
        mapped_at_creation: false,
    });
    let validation = pollster::block_on(validation_scope.pop());
    let memory = pollster::block_on(memory_scope.pop());
    if let Some(error) = validation.or(memory) {
        tracing::warn!("GPU buffer of {size} bytes refused: {error}");
        buffer.destroy();
        return None;
    }
    Some(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_round_up_with_bounded_waste() {
        assert_eq!(size_class(0), 256);
        assert_eq!(size_class(300), 512);
        assert_eq!(size_class(1 << 20), 1 << 20);
        let big = (1 << 20) + 1;
        let class = size_class(big);
        assert!(class >= big && class <= big + big / 32 + 1);
        // Every large request wastes at most 1/32 of itself.
        for bytes in [3 << 20, 205_520_896, 3_288_334_336u64, (1 << 31) - 12_345] {
            let class = size_class(bytes);
            assert!(
                class >= bytes && class - bytes <= bytes / 32,
                "{bytes} -> {class}"
            );
        }
    }
}
