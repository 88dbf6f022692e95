//! Buffer-to-buffer copies and clears recorded into the context's open command encoder (after
//! any deferred fused work, so they see its results), and uploads queued for the next
//! submission.

use super::GpuContext;
use crate::error::Result;

impl GpuContext {
    /// Queue an upload of `data` into `buffer` at `offset`; it runs before the next
    /// submission's work, which the next flush makes (even with nothing recorded).
    pub(crate) fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        self.queue.write_buffer(buffer, offset, data);
        self.uploads_pending
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Record a copy of `bytes` bytes between buffers (offsets and size multiples of 4).
    pub(crate) fn copy_buffer_range(
        &self,
        source: &wgpu::Buffer,
        source_offset: u64,
        destination: &wgpu::Buffer,
        destination_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        self.ensure_alive()?;
        if bytes == 0 {
            return Ok(());
        }
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.drain_locked(&mut recording)?;
        recording.encoder(&self.device).copy_buffer_to_buffer(
            source,
            source_offset,
            destination,
            destination_offset,
            bytes,
        );
        Ok(())
    }

    /// Record a buffer-to-buffer copy into the open encoder.
    pub(crate) fn copy_buffer(
        &self,
        source: &wgpu::Buffer,
        destination: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<()> {
        self.copy_buffer_range(source, 0, destination, 0, bytes)
    }

    /// Record zero-filling of a buffer's first `bytes` bytes (a multiple of 4).
    pub(crate) fn clear_buffer(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<()> {
        self.ensure_alive()?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.drain_locked(&mut recording)?;
        recording
            .encoder(&self.device)
            .clear_buffer(buffer, 0, Some(bytes));
        Ok(())
    }
}
