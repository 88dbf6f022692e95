//! Waiting for the GPU and reading its memory back. A wait first polls the queue briefly and
//! then blocks; a readback copies into a host-mappable staging buffer in the same submission
//! as the work before it, maps it, and checks the index flags that travelled along.

use std::sync::{Arc, Mutex};

use super::GpuContext;
use crate::error::{Error, Result};

impl GpuContext {
    /// Wait until the GPU has finished everything submitted. Short waits are common (a
    /// synchronize after a few kernels) and a blocking wait costs a sleep and a wake-up, tens
    /// of microseconds, so the queue is first polled for up to `SPIN_WAIT` (yielding the core
    /// between polls), like CUDA's spin-then-block synchronization; then it blocks.
    pub(super) fn wait(&self) -> Result<()> {
        const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(300);
        let failed = |error: wgpu::PollError| Error::DeviceLost {
            message: format!("waiting for the GPU failed: {error}"),
        };
        let start = std::time::Instant::now();
        while start.elapsed() < SPIN_WAIT {
            if self
                .device
                .poll(wgpu::PollType::Poll)
                .map_err(failed)?
                .is_queue_empty()
            {
                return Ok(());
            }
            std::thread::yield_now();
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(failed)
    }

    /// Copy the first `bytes` bytes of `source` to the host (blocks until the GPU is done).
    /// The index flags travel with the same submission; when this thread's index kernels saw
    /// an out-of-range index, the result is `Error::InvalidArgument` naming the op.
    pub(crate) fn read_bytes(&self, source: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        self.ensure_alive()?;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        // Mapping needs a 4-byte multiple; GPU memory is not host-visible, so the data goes
        // through a staging buffer that the host may map.
        let padded = bytes.div_ceil(4) * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("anygrad readback"),
            size: padded,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let submitted = {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            self.drain_locked(&mut recording)?;
            recording
                .encoder(&self.device)
                .copy_buffer_to_buffer(source, 0, &staging, 0, padded);
            self.queue_flag_copy_locked(&mut recording);
            self.flush_locked(&mut recording)?;
            recording.submissions
        };
        let mapped = self.map_and_read(&staging);
        staging.destroy();
        let mut data = mapped?;
        self.check_index_errors(submitted)?;
        data.truncate(bytes as usize);
        Ok(data)
    }

    /// Map a submitted staging buffer and copy its contents out.
    pub(super) fn map_and_read(&self, staging: &wgpu::Buffer) -> Result<Vec<u8>> {
        let outcome: Arc<Mutex<Option<std::result::Result<(), wgpu::BufferAsyncError>>>> =
            Arc::new(Mutex::new(None));
        {
            let outcome = Arc::clone(&outcome);
            staging.map_async(wgpu::MapMode::Read, .., move |result| {
                *outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            });
        }
        self.wait()?;
        // The map callback runs inside *some* thread's poll: when another thread is polling at
        // the same time, our wait can return while that thread is still about to run our
        // callback. So wait (briefly polling) until the callback has reported.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let result = loop {
            self.ensure_alive()?;
            if let Some(result) = outcome.lock().unwrap_or_else(|p| p.into_inner()).take() {
                break result;
            }
            if std::time::Instant::now() > deadline {
                return Err(Error::DeviceLost {
                    message: "reading GPU memory did not complete within 120 s".into(),
                });
            }
            std::thread::yield_now();
            self.device
                .poll(wgpu::PollType::Poll)
                .map_err(|error| Error::DeviceLost {
                    message: format!("waiting for the GPU failed: {error}"),
                })?;
        };
        if let Err(error) = result {
            return Err(Error::DeviceLost {
                message: format!("reading GPU memory failed: {error}"),
            });
        }
        let data = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|error| Error::DeviceLost {
                    message: format!("mapping the readback buffer failed: {error}"),
                })?;
            view.to_vec()
        };
        staging.unmap();
        Ok(data)
    }
}
