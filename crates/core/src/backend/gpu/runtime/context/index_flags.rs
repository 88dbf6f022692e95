//! The deferred index checks (see `runtime/context.rs`): index kernels raise a word of the flag
//! buffer instead of reading out of bounds; the used words are copied out with the next
//! submission and read after a wait, and each raised flag becomes the error of the thread
//! whose op recorded it.

use std::thread::ThreadId;

use super::{GpuContext, Recording};
use crate::error::{Error, Result};

/// A copy of the used index flags into host-mappable memory, with who raised which slot.
pub(super) struct FlagCopy {
    staging: wgpu::Buffer,
    owners: Vec<(ThreadId, &'static str)>,
    /// The submission (count of flushes) that carries the copy.
    submission: u64,
}

impl GpuContext {
    /// The index-flag buffer (binding 4 of the index kernels).
    pub(crate) fn index_flags(&self) -> &wgpu::Buffer {
        &self.index_flags
    }

    /// Record a copy of the used index flags into a mappable buffer and their reset; the
    /// slots are free again at once (later kernels run after the reset).
    pub(super) fn take_flags_locked(&self, recording: &mut Recording) -> Option<FlagCopy> {
        if recording.index_owners.is_empty() {
            return None;
        }
        let owners = std::mem::take(&mut recording.index_owners);
        let bytes = (owners.len() * 4) as u64;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("anygrad index flags readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let encoder = recording.encoder(&self.device);
        encoder.copy_buffer_to_buffer(&self.index_flags, 0, &staging, 0, bytes);
        encoder.clear_buffer(&self.index_flags, 0, Some(bytes));
        Some(FlagCopy {
            staging,
            owners,
            submission: recording.submissions + 1,
        })
    }

    /// After a wait for submission `submitted`: read the flag copies it carried, file raised
    /// flags under their threads, and return the calling thread's pending error, if any.
    pub(super) fn check_index_errors(&self, submitted: u64) -> Result<()> {
        // One check at a time: a thread that took copies out of `flag_copies` files their raised
        // flags before any other thread looks for its own error, so no error is missed in between.
        let _checking = self.index_check.lock().unwrap_or_else(|p| p.into_inner());
        let ready: Vec<FlagCopy> = {
            let mut copies = self.flag_copies.lock().unwrap_or_else(|p| p.into_inner());
            let (ready, later) = std::mem::take(&mut *copies)
                .into_iter()
                .partition(|copy| copy.submission <= submitted);
            *copies = later;
            ready
        };
        for copy in ready {
            let mapped = self.map_and_read(&copy.staging);
            copy.staging.destroy();
            let flags = mapped?;
            let mut errors = self.index_errors.lock().unwrap_or_else(|p| p.into_inner());
            for (word, (thread, op)) in flags.chunks_exact(4).zip(&copy.owners) {
                if word.iter().any(|&b| b != 0) {
                    errors.entry(*thread).or_insert(op);
                }
            }
        }
        let mine = self
            .index_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&std::thread::current().id());
        match mine {
            Some(op) => Err(Error::invalid(
                op,
                "an index was out of range (detected at the next synchronization)",
            )),
            None => Ok(()),
        }
    }

    /// Record a copy of the used index flags (if any) for the next check.
    pub(super) fn queue_flag_copy_locked(&self, recording: &mut Recording) {
        if let Some(copy) = self.take_flags_locked(recording) {
            self.flag_copies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(copy);
        }
    }
}
