//! The op profiler: `profile(|| ...)` (or `start()` … `finish()`) records every primitive op the
//! closure runs — name, input shapes and dtypes, device, host time, device time, bytes allocated,
//! and whether it was a CPU fallback — and returns a [`Profile`] with PyTorch-like
//! `key_averages().table()` and a Chrome-trace export (open it in Perfetto or chrome://tracing).
//!
//! Device time: GPU ops are asynchronous (recorded, then run after a flush). While profiling,
//! each op's compute passes write GPU timestamps (when the adapter has `TIMESTAMP_QUERY`) and
//! the op is followed by a synchronize, so `device_us` is the time the GPU spent in the op's
//! kernels; without timestamp support it is the op's synchronized wall time. Synchronizing per
//! op serializes the GPU: the profile shows where time goes, not how fast an unprofiled run is.
//!
//! When no profile is active, recording costs one relaxed atomic load per op.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::profile_flag;

static EVENTS: Mutex<Vec<OpEvent>> = Mutex::new(Vec::new());
static EPOCH: Mutex<Option<Instant>> = Mutex::new(None);

/// One recorded op.
#[derive(Debug, Clone, Serialize)]
pub struct OpEvent {
    pub name: String,
    pub input_shapes: Vec<Vec<usize>>,
    pub dtype: String,
    pub device: String,
    /// Microseconds since the profile started.
    pub start_us: f64,
    /// Host time spent in the call (recording or computing), µs.
    pub host_us: f64,
    /// Device time, µs: from GPU timestamp queries when the adapter has them (the time the
    /// GPU spent in the op's kernels), else the synchronized wall time of the op; equals
    /// `host_us` on the CPU.
    pub device_us: f64,
    /// True when `device_us` comes from GPU timestamps.
    pub gpu_timestamps: bool,
    /// With GPU timestamps: the op's kernels and each one's own device time, in dispatch
    /// order (copies between them count in `device_us` only).
    pub kernels: Vec<KernelTime>,
    /// Bytes of the op's output allocation.
    pub bytes_allocated: u64,
    /// True when the op ran on the CPU as a fallback for a GPU tensor.
    pub fallback: bool,
    /// Floating-point operations of the call (matmul and convolutions; `None` for ops that
    /// are not compute-bound), for achieved TFLOPS.
    pub flops: Option<f64>,
}

/// One kernel of an op, timed on the GPU.
#[derive(Debug, Clone, Serialize)]
pub struct KernelTime {
    /// The kernel's name: its family and instantiation (its `Kernel` key's name).
    pub name: String,
    /// Its device time, µs.
    pub device_us: f64,
}

pub use crate::profile_flag::is_active;

/// Record `run` as op `name` when profiling (otherwise just run it).
pub(crate) fn record<T>(
    name: &str,
    shapes: &[&[usize]],
    dtype: DType,
    device: &Device,
    output_bytes: impl FnOnce(&T) -> u64,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if !is_active() {
        return run();
    }
    record_event(name, shapes, dtype, device, false, output_bytes, run)
}

/// Record a CPU fallback of a GPU op (always flagged).
pub(crate) fn record_fallback<T>(
    name: &str,
    shapes: &[&[usize]],
    dtype: DType,
    device: &Device,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if !is_active() {
        return run();
    }
    record_event(name, shapes, dtype, device, true, |_| 0, run)
}

fn record_event<T>(
    name: &str,
    shapes: &[&[usize]],
    dtype: DType,
    device: &Device,
    fallback: bool,
    output_bytes: impl FnOnce(&T) -> u64,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let epoch = EPOCH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_else(Instant::now);
    let timed = match device {
        Device::Gpu(gpu) => gpu.begin_timing()?,
        Device::Cpu => false,
    };
    let start = Instant::now();
    let result = run();
    let host = start.elapsed();
    let (device_us, gpu_timestamps, kernels) = match device {
        Device::Gpu(gpu) => {
            let measured = if timed { gpu.end_timing()? } else { None };
            device.synchronize()?;
            match measured {
                Some(timing) => (timing.device_us, true, timing.kernels),
                None => (start.elapsed().as_secs_f64() * 1e6, false, Vec::new()),
            }
        }
        Device::Cpu => (host.as_secs_f64() * 1e6, false, Vec::new()),
    };
    if let Ok(value) = &result {
        let input_shapes: Vec<Vec<usize>> = shapes.iter().map(|s| s.to_vec()).collect();
        let bytes_allocated = output_bytes(value);
        let output_elements = bytes_allocated / dtype.size_in_bytes().max(1) as u64;
        let event = OpEvent {
            name: name.to_string(),
            flops: crate::flop_count::op_flops(name, &input_shapes, output_elements),
            input_shapes,
            dtype: dtype.name().to_string(),
            device: device.to_string(),
            start_us: start.duration_since(epoch).as_secs_f64() * 1e6,
            host_us: host.as_secs_f64() * 1e6,
            device_us,
            gpu_timestamps,
            kernels: kernels
                .into_iter()
                .map(|(name, device_us)| KernelTime { name, device_us })
                .collect(),
            bytes_allocated,
            fallback,
        };
        EVENTS.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }
    result
}

/// Everything recorded by one `profile` call.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Profile {
    pub events: Vec<OpEvent>,
    /// Wall time of the profiled closure, µs.
    pub total_us: f64,
}

/// Run `work` with every op recorded. Profiles do not nest; a second concurrent `profile`
/// returns an error.
pub fn profile<T>(work: impl FnOnce() -> Result<T>) -> Result<(T, Profile)> {
    let recording = start()?;
    let result = work();
    let profile = recording.finish();
    Ok((result?, profile))
}

/// A profile being recorded, from [`start`] to [`Recording::finish`] (for callers that cannot
/// pass the work as a closure, such as a Python `with` block). Dropping it unfinished stops
/// the recording and discards its events.
#[derive(Debug)]
pub struct Recording {
    started: Instant,
    finished: bool,
}

/// Start recording every op (the form of [`profile`] without a closure). An error while
/// another profile is being recorded.
pub fn start() -> Result<Recording> {
    if profile_flag::start() {
        return Err(Error::invalid(
            "profile",
            "a profile is already being recorded",
        ));
    }
    EVENTS.lock().unwrap_or_else(|p| p.into_inner()).clear();
    let started = Instant::now();
    *EPOCH.lock().unwrap_or_else(|p| p.into_inner()) = Some(started);
    Ok(Recording {
        started,
        finished: false,
    })
}

impl Recording {
    /// Stop recording: everything recorded since [`start`].
    pub fn finish(mut self) -> Profile {
        self.finished = true;
        profile_flag::stop();
        let events = std::mem::take(&mut *EVENTS.lock().unwrap_or_else(|p| p.into_inner()));
        Profile {
            events,
            total_us: self.started.elapsed().as_secs_f64() * 1e6,
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.finished {
            profile_flag::stop();
            EVENTS.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }
}

/// Record `work` as one named event spanning several ops (or none) when profiling, like
/// `torch.profiler.record_function`: the data-parallel gradient exchange shows up under its
/// own name this way. Both clocks of the event are the scope's wall time on the host; the ops
/// run inside it are recorded as well, so a scope's time overlaps theirs in the table's
/// totals. Without an active profile it just runs `work`.
pub fn scope<T>(name: &str, device: &Device, work: impl FnOnce() -> Result<T>) -> Result<T> {
    if !is_active() {
        return work();
    }
    let epoch = EPOCH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_else(Instant::now);
    let start = Instant::now();
    let result = work();
    let wall_us = start.elapsed().as_secs_f64() * 1e6;
    if result.is_ok() {
        let event = OpEvent {
            name: name.to_string(),
            input_shapes: Vec::new(),
            dtype: "scope".to_string(),
            device: device.to_string(),
            start_us: start.duration_since(epoch).as_secs_f64() * 1e6,
            host_us: wall_us,
            device_us: wall_us,
            gpu_timestamps: false,
            kernels: Vec::new(),
            bytes_allocated: 0,
            fallback: false,
            flops: None,
        };
        EVENTS.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }
    result
}

/// Per-op-name totals (PyTorch's `key_averages()`).
#[derive(Debug, Clone, Serialize)]
pub struct OpSummary {
    pub name: String,
    pub calls: usize,
    pub host_us: f64,
    pub device_us: f64,
    pub bytes_allocated: u64,
    pub fallback_calls: usize,
}

/// Totals of one compute-bound op (matmul, convolutions) at one set of input shapes.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeSummary {
    pub name: String,
    pub input_shapes: Vec<Vec<usize>>,
    pub dtype: String,
    pub calls: usize,
    pub device_us: f64,
    pub flops: f64,
}

impl ShapeSummary {
    /// Achieved TFLOPS: operations over device time.
    pub fn tflops(&self) -> f64 {
        if self.device_us > 0.0 {
            self.flops / (self.device_us * 1e6)
        } else {
            0.0
        }
    }
}

/// Per-shape summaries of the compute-bound ops, largest device time first.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeAverages(pub Vec<ShapeSummary>);

/// Summaries sorted by total device time, largest first.
#[derive(Debug, Clone, Serialize)]
pub struct KeyAverages(pub Vec<OpSummary>);

/// Totals of one kernel (by name) under one op at one set of input shapes.
#[derive(Debug, Clone, Serialize)]
pub struct KernelSummary {
    /// The op that dispatched it.
    pub op: String,
    /// The op's input shapes.
    pub input_shapes: Vec<Vec<usize>>,
    /// The kernel (`KernelTime::name`).
    pub kernel: String,
    pub calls: usize,
    pub device_us: f64,
}

/// Kernel summaries sorted by total device time, largest first.
#[derive(Debug, Clone, Serialize)]
pub struct KernelAverages(pub Vec<KernelSummary>);

impl Profile {
    /// Totals per op name.
    pub fn key_averages(&self) -> KeyAverages {
        let mut by_name: BTreeMap<&str, OpSummary> = BTreeMap::new();
        for event in &self.events {
            let entry = by_name.entry(&event.name).or_insert_with(|| OpSummary {
                name: event.name.clone(),
                calls: 0,
                host_us: 0.0,
                device_us: 0.0,
                bytes_allocated: 0,
                fallback_calls: 0,
            });
            entry.calls += 1;
            entry.host_us += event.host_us;
            entry.device_us += event.device_us;
            entry.bytes_allocated += event.bytes_allocated;
            entry.fallback_calls += event.fallback as usize;
        }
        let mut rows: Vec<OpSummary> = by_name.into_values().collect();
        rows.sort_by(|a, b| b.device_us.total_cmp(&a.device_us));
        KeyAverages(rows)
    }

    /// Totals per compute-bound op and input shapes, with achieved TFLOPS: where convolution
    /// and matmul time goes, shape by shape.
    pub fn shape_averages(&self) -> ShapeAverages {
        self.group_by_shape(true)
    }

    /// The other ops (no operation count: elementwise, copies, reductions, normalizations)
    /// grouped by name, input shapes and dtype, most device time first: where the memory
    /// passes go.
    pub fn memory_bound_shapes(&self) -> ShapeAverages {
        self.group_by_shape(false)
    }

    /// Events with (`counted`) or without an operation count, grouped by name, input shapes
    /// and dtype, most device time first.
    fn group_by_shape(&self, counted: bool) -> ShapeAverages {
        let mut by_key: BTreeMap<(String, Vec<Vec<usize>>, String), ShapeSummary> = BTreeMap::new();
        for event in &self.events {
            if event.flops.is_some() != counted {
                continue;
            }
            let flops = event.flops.unwrap_or(0.0);
            let key = (
                event.name.clone(),
                event.input_shapes.clone(),
                event.dtype.clone(),
            );
            let entry = by_key.entry(key).or_insert_with(|| ShapeSummary {
                name: event.name.clone(),
                input_shapes: event.input_shapes.clone(),
                dtype: event.dtype.clone(),
                calls: 0,
                device_us: 0.0,
                flops: 0.0,
            });
            entry.calls += 1;
            entry.device_us += event.device_us;
            entry.flops += flops;
        }
        let mut rows: Vec<ShapeSummary> = by_key.into_values().collect();
        rows.sort_by(|a, b| b.device_us.total_cmp(&a.device_us));
        ShapeAverages(rows)
    }

    /// Totals per op, input shapes and kernel (from GPU timestamps): which kernels an op's
    /// time goes to — a convolution's layout copies against its GEMM, say.
    pub fn kernel_averages(&self) -> KernelAverages {
        type Key<'a> = (&'a str, &'a [Vec<usize>], &'a str);
        let mut by_kernel: BTreeMap<Key<'_>, KernelSummary> = BTreeMap::new();
        for event in &self.events {
            for kernel in &event.kernels {
                let entry = by_kernel
                    .entry((&event.name, &event.input_shapes, &kernel.name))
                    .or_insert_with(|| KernelSummary {
                        op: event.name.clone(),
                        input_shapes: event.input_shapes.clone(),
                        kernel: kernel.name.clone(),
                        calls: 0,
                        device_us: 0.0,
                    });
                entry.calls += 1;
                entry.device_us += kernel.device_us;
            }
        }
        let mut rows: Vec<KernelSummary> = by_kernel.into_values().collect();
        rows.sort_by(|a, b| b.device_us.total_cmp(&a.device_us));
        KernelAverages(rows)
    }

    /// The events as Chrome-trace JSON ("complete" events, one row per device).
    pub fn chrome_trace(&self) -> String {
        let events: Vec<serde_json::Value> = self
            .events
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name,
                    "cat": if e.fallback { "cpu-fallback" } else { "op" },
                    "ph": "X",
                    "ts": e.start_us,
                    "dur": e.device_us,
                    "pid": 1,
                    "tid": e.device,
                    "args": {
                        "shapes": e.input_shapes,
                        "flops": e.flops,
                        "dtype": e.dtype,
                        "host_us": e.host_us,
                        "bytes": e.bytes_allocated,
                        "fallback": e.fallback,
                    }
                })
            })
            .collect();
        serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }).to_string()
    }

    /// Write the Chrome trace to `path`.
    pub fn export_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.chrome_trace())
            .map_err(|e| Error::io(path.display().to_string(), e))
    }
}

impl KeyAverages {
    /// A table like PyTorch's: op, calls, device and host totals and means, share of device
    /// time, bytes allocated, and a flag for CPU fallbacks.
    pub fn table(&self) -> String {
        let total: f64 = self.0.iter().map(|r| r.device_us).sum::<f64>().max(1e-9);
        let mut out = format!(
            "{:<18} {:>7} {:>13} {:>7} {:>12} {:>13} {:>12} {:>12}\n",
            "op", "calls", "device total", "%", "device avg", "host total", "host avg", "allocated"
        );
        out.push_str(&"-".repeat(103));
        out.push('\n');
        for r in &self.0 {
            let flag = if r.fallback_calls > 0 {
                format!("  CPU FALLBACK x{}", r.fallback_calls)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "{:<18} {:>7} {:>10.1} us {:>6.1}% {:>9.1} us {:>10.1} us {:>9.1} us {:>9.1} MB{flag}\n",
                r.name,
                r.calls,
                r.device_us,
                100.0 * r.device_us / total,
                r.device_us / r.calls as f64,
                r.host_us,
                r.host_us / r.calls as f64,
                r.bytes_allocated as f64 / 1e6
            ));
        }
        out
    }
}

impl ShapeAverages {
    /// A table of the first `limit` rows: calls, device time per call and in all.
    pub fn time_table(&self, limit: usize) -> String {
        let mut out = format!(
            "{:<24} {:<44} {:>8} {:>6} {:>12} {:>12}\n",
            "op", "input shapes", "dtype", "calls", "device avg", "device total"
        );
        out.push_str(&"-".repeat(111));
        out.push('\n');
        for r in self.0.iter().take(limit) {
            let shapes: Vec<String> = r
                .input_shapes
                .iter()
                .map(|shape| format!("{shape:?}"))
                .collect();
            out.push_str(&format!(
                "{:<24} {:<44} {:>8} {:>6} {:>9.1} us {:>9.1} us\n",
                r.name,
                shapes.join(" "),
                r.dtype,
                r.calls,
                r.device_us / r.calls.max(1) as f64,
                r.device_us
            ));
        }
        out
    }

    /// A table of the compute-bound ops by shape: calls, device time per call and achieved
    /// TFLOPS.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<24} {:<34} {:>5} {:>6} {:>12} {:>9}\n",
            "op", "input shapes", "dtype", "calls", "device avg", "TFLOPS"
        );
        out.push_str(&"-".repeat(95));
        out.push('\n');
        for r in &self.0 {
            let shapes: Vec<String> = r
                .input_shapes
                .iter()
                .map(|shape| format!("{shape:?}"))
                .collect();
            out.push_str(&format!(
                "{:<24} {:<34} {:>5} {:>6} {:>9.1} us {:>9.2}\n",
                r.name,
                shapes.join(" "),
                r.dtype,
                r.calls,
                r.device_us / r.calls.max(1) as f64,
                r.tflops()
            ));
        }
        out
    }
}

impl KernelAverages {
    /// A table of the first `limit` rows: op, its first two input shapes, kernel (its name
    /// cut to `width` characters), calls, device time per call and in all.
    pub fn table(&self, limit: usize, width: usize) -> String {
        let mut out = format!(
            "{:<20} {:<34} {:<width$} {:>6} {:>12} {:>13}\n",
            "op", "input shapes", "kernel", "calls", "device avg", "device total"
        );
        out.push_str(&"-".repeat(90 + width));
        out.push('\n');
        for r in self.0.iter().take(limit) {
            let kernel: String = r.kernel.chars().take(width).collect();
            let shapes: Vec<String> = r
                .input_shapes
                .iter()
                .take(2)
                .map(|shape| format!("{shape:?}"))
                .collect();
            out.push_str(&format!(
                "{:<20} {:<34} {:<width$} {:>6} {:>9.1} us {:>10.1} us\n",
                r.op,
                shapes.join(" "),
                kernel,
                r.calls,
                r.device_us / r.calls.max(1) as f64,
                r.device_us
            ));
        }
        out
    }
}
