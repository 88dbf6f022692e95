//! GPU timestamps for the profiler. A timestamp query makes the GPU write its own clock into
//! a query set when a compute pass begins and ends; while an op is timed, every pass the
//! recorder opens writes there (the first pass its start, each pass its end), and resolving the
//! two queries into a buffer and reading it back gives the GPU time the op's kernels took,
//! without the submit and readback latency a host timer would include.

use std::sync::Arc;

use super::GpuContext;
use crate::error::Result;

impl GpuContext {
    /// Start timing the ops recorded from now on with GPU timestamps (the profiler). Returns
    /// false when the adapter cannot write timestamps.
    pub(crate) fn begin_timed_op(&self) -> Result<bool> {
        if !self.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Ok(false);
        }
        let query_set = {
            let mut slot = self.timestamps.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(slot.get_or_insert_with(|| {
                Arc::new(self.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("anygrad profiler"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                }))
            }))
        };
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.drain_locked(&mut recording)?;
        recording.pass = None;
        recording.timing = Some(query_set);
        recording.timed_pass_opened = false;
        Ok(true)
    }

    /// Stop timing: the GPU time in µs between the first timed pass's start and the last one's
    /// end (`None` when the op recorded no compute pass). Waits for the GPU.
    pub(crate) fn end_timed_op(&self) -> Result<Option<f64>> {
        let resolved = {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            self.drain_locked(&mut recording)?;
            recording.pass = None;
            let query_set = recording.timing.take();
            match query_set {
                Some(query_set) if recording.timed_pass_opened => {
                    let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("anygrad timestamps"),
                        size: 16,
                        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    });
                    recording.encoder(&self.device).resolve_query_set(
                        &query_set,
                        0..2,
                        &resolve,
                        0,
                    );
                    Some(resolve)
                }
                Some(_) | None => None,
            }
        };
        let Some(resolve) = resolved else {
            return Ok(None);
        };
        let bytes = self.read_bytes(&resolve, 16)?;
        resolve.destroy();
        let tick = |range: std::ops::Range<usize>| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[range]);
            u64::from_le_bytes(word)
        };
        let (start, end) = (tick(0..8), tick(8..16));
        // Ticks to nanoseconds: the queue's timestamp period.
        let period = self.queue.get_timestamp_period() as f64;
        Ok(Some(end.saturating_sub(start) as f64 * period / 1e3))
    }
}
