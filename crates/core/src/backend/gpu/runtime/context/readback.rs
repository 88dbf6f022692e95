//! Waiting for the GPU and reading its memory back. A wait first polls the queue briefly and
//! then blocks; a readback copies into a host-mappable staging buffer in the same submission
//! as the work before it, maps it, and checks the index flags that travelled along.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::GpuContext;
use crate::error::{Error, Result};

/// Longest single blocking wait for the GPU: between two, a wait checks whether the device
/// was lost (`runtime/context/loss.rs`).
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// How long a wait polls before it blocks: `ANYGRAD_SPIN_WAIT_US` microseconds (0 blocks at
/// once), 20 ms by default; read once.
fn spin_wait() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let micros = match std::env::var("ANYGRAD_SPIN_WAIT_US") {
            Ok(text) => text.trim().parse::<u64>().unwrap_or_else(|_| {
                tracing::warn!("ANYGRAD_SPIN_WAIT_US={text} is not a number of µs; using 20000");
                20_000
            }),
            Err(_) => 20_000,
        };
        Duration::from_micros(micros)
    })
}

impl GpuContext {
    /// The last submission handed to the driver, if any.
    pub(super) fn last_submission(&self) -> Option<wgpu::SubmissionIndex> {
        self.recording
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last_submission
            .clone()
    }

    /// Record that the GPU has finished everything submitted (after a wait for results): the
    /// next large dispatch is submitted at once (`EARLY_SUBMIT_WORKGROUPS` in `runtime/context.rs`),
    /// and the autotuner may time the keys called before (`runtime/autotune.rs`).
    pub(super) fn mark_idle(&self) {
        self.autotune.note_host_read();
        self.recording
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .idle = true;
    }

    /// Wait until the GPU has finished everything submitted. A blocking wait costs a sleep
    /// and a wake-up (on the H200's Vulkan driver about 100 µs more than polling: a 4096² f16
    /// matmul of 810 µs took 0.94 ms a synchronized call when waits polled for 300 µs and then
    /// blocked, 0.84 ms polling up to 20 ms), so the queue is first polled for up to
    /// [`spin_wait`] (yielding the core between polls), like CUDA's default spin-then-yield
    /// synchronization; then it blocks, [`WAIT_SLICE`] at a time. `Error::DeviceLost` when
    /// the device is or becomes lost.
    pub(super) fn wait(&self) -> Result<()> {
        let failed = |error: wgpu::PollError| Error::DeviceLost {
            message: format!("waiting for the GPU failed: {error}"),
        };
        let start = std::time::Instant::now();
        let spin = spin_wait();
        while start.elapsed() < spin {
            if self
                .poll(wgpu::PollType::Poll)?
                .map_err(failed)?
                .is_queue_empty()
            {
                return Ok(());
            }
            std::thread::yield_now();
        }
        // Blocking, in slices: a device reported lost meanwhile (by another thread's poll or
        // the driver's callback) ends the wait with its error instead of a wait forever. The
        // wait names the last submission `queue.submit` returned: with `None` wgpu waits for
        // the last index it handed out, which may belong to another thread's submission still
        // on its way to the driver (lavapipe compiles kernels there), and a slice that times
        // out then trips wgpu's assertion that an empty queue has reached that index.
        let Some(target) = self.last_submission() else {
            return Ok(());
        };
        loop {
            match self.poll(wgpu::PollType::Wait {
                submission_index: Some(target.clone()),
                timeout: Some(WAIT_SLICE),
            })? {
                Ok(_) => return Ok(()),
                Err(wgpu::PollError::Timeout) => continue,
                Err(error) => return Err(failed(error)),
            }
        }
    }

    /// Copy the first `bytes` bytes of `source` to the host (blocks until the GPU is done).
    /// The index flags travel with the same submission; when this thread's index kernels saw
    /// an out-of-range index, the result is `Error::InvalidArgument` naming the op.
    pub(crate) fn read_bytes(&self, source: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        self.copy_to_host(source, bytes, true)
    }

    /// [`GpuContext::read_bytes`] that leaves the index flags for the next readback (the
    /// autotuner's timestamps: a bad index recorded before a tuned op stays reported by the
    /// user's next read, not by the op the tuner happened to time).
    pub(super) fn read_bytes_leaving_flags(
        &self,
        source: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<Vec<u8>> {
        self.copy_to_host(source, bytes, false)
    }

    /// Copy `bytes` bytes of `source` to the host; with `check_flags`, the index flags travel
    /// along and are checked.
    fn copy_to_host(
        &self,
        source: &wgpu::Buffer,
        bytes: u64,
        check_flags: bool,
    ) -> Result<Vec<u8>> {
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
            if check_flags {
                self.queue_flag_copy_locked(&mut recording);
            }
            self.flush_locked(&mut recording)?;
            recording.submissions
        };
        let mapped = self.map_and_read(&staging);
        staging.destroy();
        let mut data = mapped?;
        if check_flags {
            self.check_index_errors(submitted)?;
        }
        data.truncate(bytes as usize);
        Ok(data)
    }

    /// Map a submitted staging buffer and copy its contents out.
    pub(super) fn map_and_read(&self, staging: &wgpu::Buffer) -> Result<Vec<u8>> {
        let signal = request_map(staging, wgpu::MapMode::Read);
        self.wait()?;
        self.mark_idle();
        // The map callback runs inside *some* thread's poll: when another thread is polling at
        // the same time, our wait can return while that thread is still about to run our
        // callback. So wait (polling) until the callback has reported.
        wait_for_map(self, &signal, "reading GPU memory")?;
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

/// A readback started by [`GpuContext::start_read_bytes`]: the copy recorded and submitted,
/// its mapping requested, nothing waited for.
pub(crate) struct PendingBytes {
    staging: wgpu::Buffer,
    signal: MapSignal,
    bytes: u64,
}

impl GpuContext {
    /// Start copying the first `bytes` bytes of `source` to the host: the copy goes into the
    /// queue after everything recorded so far and is submitted now; the host waits later,
    /// in [`GpuContext::finish_read_bytes`], only for this copy (not for the work recorded
    /// after it). The index flags do not travel with it: an out-of-range index seen before
    /// shows at the next synchronizing read instead.
    pub(crate) fn start_read_bytes(
        &self,
        source: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<PendingBytes> {
        self.ensure_alive()?;
        let padded = bytes.div_ceil(4).max(1) * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("anygrad pending readback"),
            size: padded,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if bytes > 0 {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            self.drain_locked(&mut recording)?;
            recording
                .encoder(&self.device)
                .copy_buffer_to_buffer(source, 0, &staging, 0, padded);
            self.flush_locked(&mut recording)?;
        }
        let signal = request_map(&staging, wgpu::MapMode::Read);
        Ok(PendingBytes {
            staging,
            signal,
            bytes,
        })
    }

    /// Wait (polling) until `pending`'s copy has reached the host and return its bytes.
    /// The work recorded since the copy is submitted first: the GPU keeps working while the
    /// host waits (a training step's `GradScaler::scale` waits
    /// here for the last step's flags with the forward just recorded), instead of running out
    /// of submitted work and idling until the host records past the next submission.
    pub(crate) fn finish_read_bytes(&self, pending: PendingBytes) -> Result<Vec<u8>> {
        let PendingBytes {
            staging,
            signal,
            bytes,
        } = pending;
        self.flush()?;
        let waited = wait_for_map(self, &signal, "reading GPU memory");
        let data = waited.and_then(|()| {
            let view = staging
                .get_mapped_range(..)
                .map_err(|error| Error::DeviceLost {
                    message: format!("mapping the readback buffer failed: {error}"),
                })?;
            let data = view[..bytes as usize].to_vec();
            drop(view);
            staging.unmap();
            Ok(data)
        });
        staging.destroy();
        data
    }
}

/// The outcome of a `map_async`, filled by its callback.
pub(super) type MapSignal = Arc<Mutex<Option<std::result::Result<(), wgpu::BufferAsyncError>>>>;

/// Ask for `buffer` to be mapped; the returned signal is filled when the mapping resolves.
pub(super) fn request_map(buffer: &wgpu::Buffer, mode: wgpu::MapMode) -> MapSignal {
    let signal: MapSignal = Arc::new(Mutex::new(None));
    let filled = Arc::clone(&signal);
    buffer.map_async(mode, .., move |result| {
        *filled.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
    });
    signal
}

/// Poll the device until the mapping behind `signal` has resolved. Polls without blocking (a
/// blocking wait would hold the device while other threads submit): spinning briefly, then
/// sleeping between polls; gives up after 120 s.
pub(super) fn wait_for_map(context: &GpuContext, signal: &MapSignal, what: &str) -> Result<()> {
    let started = Instant::now();
    let deadline = Duration::from_secs(120);
    loop {
        context.ensure_alive()?;
        if let Some(result) = signal.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return result.map_err(|error| Error::DeviceLost {
                message: format!("{what} failed: {error}"),
            });
        }
        let waited = started.elapsed();
        if waited > deadline {
            return Err(Error::DeviceLost {
                message: format!("{what} did not complete within 120 s"),
            });
        }
        if waited >= Duration::from_micros(200) {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
        context
            .poll(wgpu::PollType::Poll)?
            .map_err(|error| Error::DeviceLost {
                message: format!("waiting for the GPU failed: {error}"),
            })?;
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::runtime::device::GpuDevice;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::backend::tests::support::gpu_device;
    use crate::dtype::DType;

    /// Waiting for a pending read first hands the GPU what was recorded after the copy (a
    /// context of its own: no other test records or flushes on it meanwhile).
    #[test]
    fn waiting_for_a_pending_read_submits_the_work_recorded_after_it() {
        if gpu_device().is_none() {
            return;
        }
        let device = GpuDevice::open_new_instance(0).unwrap();
        let context = device.context();
        let source = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(vec![1.5, -2.0])),
        )
        .unwrap();
        let pending = context.start_read_bytes(source.raw().unwrap(), 8).unwrap();
        let later = GpuStorage::full(&device, 1 << 16, DType::F32, 3.0).unwrap();
        let recorded = || {
            context
                .recording
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .dispatches
        };
        assert!(recorded() > 0, "the fill is recorded, not submitted");
        let bytes = context.finish_read_bytes(pending).unwrap();
        let expected: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(bytes, expected);
        assert_eq!(recorded(), 0, "the wait submitted the fill");
        let CpuStorage::F32(filled) = later.to_cpu().unwrap() else {
            panic!("the fill is f32")
        };
        assert!(filled.iter().all(|&v| v == 3.0));
    }
}
