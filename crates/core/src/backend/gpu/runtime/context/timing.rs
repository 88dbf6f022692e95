//! GPU timestamps for the profiler. A timestamp query makes the GPU write its own clock into
//! a query set when a compute pass begins and ends. While an op is timed, every kernel the
//! recorder dispatches runs in a compute pass of its own that writes its start and end
//! ([`OpTimer`]); resolving the queries into a buffer and reading it back gives the GPU time
//! of the op (first kernel's start to last kernel's end, copies between them included) and of
//! each kernel, without the submit and readback latency a host timer would include.

use std::sync::Arc;
use std::time::Duration;

use super::GpuContext;
use crate::backend::gpu::runtime::autotune::TuningClock;
use crate::backend::gpu_facts::OpTiming;
use crate::error::Result;

/// Kernels of one op timed one by one; the passes after them share one end query, so the op's
/// time stays whole.
const TIMED_KERNELS: u32 = 511;

/// Query 0 is the first pass's start, query 1 the end of the passes past [`TIMED_KERNELS`];
/// kernel `i` writes queries `2 + 2i` and `3 + 2i`.
const QUERIES: u32 = 2 + 2 * TIMED_KERNELS;

/// Where the resolved kernel queries start in the readback buffer (bytes).
const KERNELS_AT: u64 = 256;

/// The timing state of the op being recorded: its query set and each pass's kernel.
pub(crate) struct OpTimer {
    query_set: Arc<wgpu::QuerySet>,
    /// The kernel of each pass opened so far (`"?"` until named).
    kernels: Vec<Arc<str>>,
}

impl OpTimer {
    /// The timestamp writes of the next pass (the recorder opens one per kernel).
    pub(super) fn open_pass(&mut self) -> wgpu::ComputePassTimestampWrites<'_> {
        let index = self.kernels.len() as u32;
        self.kernels.push(Arc::from("?"));
        let (beginning, end) = if index < TIMED_KERNELS {
            (2 + 2 * index, 3 + 2 * index)
        } else {
            // Past the timed kernels only the op's end is kept.
            (u32::MAX, 1)
        };
        wgpu::ComputePassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: (beginning != u32::MAX).then_some(beginning),
            end_of_pass_write_index: Some(end),
        }
    }

    /// Name the kernel of the pass opened last.
    pub(super) fn name_pass(&mut self, name: &Arc<str>) {
        if let Some(last) = self.kernels.last_mut() {
            *last = Arc::clone(name);
        }
    }
}

impl GpuContext {
    /// Start timing the ops recorded from now on with GPU timestamps (the profiler). Returns
    /// false when the adapter cannot write timestamps.
    pub(crate) fn begin_timed_op(&self) -> Result<bool> {
        self.start_timer(true)
    }

    /// Stop timing: the op's GPU time and its kernels' (`None` when the op recorded no
    /// compute pass). Waits for the GPU.
    pub(crate) fn end_timed_op(&self) -> Result<Option<OpTiming>> {
        self.stop_timer(true)
    }

    /// Start timing (see [`GpuContext::begin_timed_op`]); without `replace`, false (and
    /// nothing changed) while another timing is running: the autotuner does not take over
    /// the profiler's.
    fn start_timer(&self, replace: bool) -> Result<bool> {
        if !self.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok(false);
        }
        let query_set = {
            let mut slot = self.timestamps.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(slot.get_or_insert_with(|| {
                Arc::new(self.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("anygrad profiler"),
                    ty: wgpu::QueryType::Timestamp,
                    count: QUERIES,
                }))
            }))
        };
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        if !replace && recording.timing.is_some() {
            return Ok(false);
        }
        self.drain_locked(&mut recording)?;
        recording.pass = None;
        recording.timing = Some(OpTimer {
            query_set,
            kernels: Vec::new(),
        });
        Ok(true)
    }

    /// Stop timing (waits for the GPU); with `check_flags`, the readback reports index
    /// errors as every readback does, else it leaves them for the next one.
    fn stop_timer(&self, check_flags: bool) -> Result<Option<OpTiming>> {
        let resolved = {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            self.drain_locked(&mut recording)?;
            recording.pass = None;
            match recording.timing.take() {
                Some(timer) if !timer.kernels.is_empty() => {
                    let timed = (timer.kernels.len() as u32).min(TIMED_KERNELS);
                    // Query 1 at byte 0, queries 2.. from byte 256 (resolve offsets are
                    // multiples of 256).
                    let size = KERNELS_AT + u64::from(2 * timed) * 8;
                    let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("anygrad timestamps"),
                        size,
                        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    });
                    // Only the queries this op wrote (query 1 only past the timed kernels).
                    let encoder = recording.encoder(&self.device);
                    encoder.resolve_query_set(
                        &timer.query_set,
                        2..2 + 2 * timed,
                        &resolve,
                        KERNELS_AT,
                    );
                    if timer.kernels.len() as u32 > TIMED_KERNELS {
                        encoder.resolve_query_set(&timer.query_set, 1..2, &resolve, 0);
                    }
                    Some((resolve, size, timer.kernels))
                }
                Some(_) | None => None,
            }
        };
        let Some((resolve, size, kernels)) = resolved else {
            return Ok(None);
        };
        let bytes = if check_flags {
            self.read_bytes(&resolve, size)
        } else {
            self.read_bytes_leaving_flags(&resolve, size)
        };
        let bytes = bytes?;
        resolve.destroy();
        // Query `q`'s clock: query 1 at byte 0, query `q >= 2` at `KERNELS_AT + 8 (q - 2)`.
        let tick = |query: usize| {
            let at = if query < 2 {
                0
            } else {
                KERNELS_AT as usize + 8 * (query - 2)
            };
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        // Ticks to microseconds: the queue's timestamp period is in nanoseconds.
        let period = self.queue.get_timestamp_period() as f64 / 1e3;
        let timed = kernels.len().min(TIMED_KERNELS as usize);
        let span = |start: u64, end: u64| end.saturating_sub(start) as f64 * period;
        let end = if kernels.len() > timed {
            tick(1)
        } else {
            tick(1 + 2 * timed)
        };
        let kernels = kernels
            .iter()
            .take(timed)
            .enumerate()
            .map(|(i, name)| (name.to_string(), span(tick(2 + 2 * i), tick(3 + 2 * i))))
            .collect();
        Ok(Some(OpTiming {
            device_us: span(tick(2), end),
            kernels,
        }))
    }
}

/// The autotuner times candidates on the GPU's clock where it can: the time from a candidate's
/// first kernel starting to its last ending, without the submission and wake-up a host timer
/// adds (about 40 µs a run on the H200, docs/PERFORMANCE.md).
impl TuningClock for GpuContext {
    fn settle(&self) -> Result<()> {
        GpuContext::settle(self)
    }

    fn start(&self) -> Result<bool> {
        self.start_timer(false)
    }

    fn stop(&self) -> Result<Option<Duration>> {
        Ok(self
            .stop_timer(false)?
            .map(|timing| Duration::from_secs_f64(timing.device_us.max(0.0) / 1e6)))
    }

    fn peaks(&self) -> Option<(u64, u64)> {
        let stats = self.memory_stats();
        Some((stats.peak_allocated_bytes, stats.peak_requested_bytes))
    }

    fn restore_peaks(&self, (allocated, requested): (u64, u64)) {
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .restore_peak(allocated, requested);
    }
}
