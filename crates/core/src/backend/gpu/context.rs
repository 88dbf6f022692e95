//! `GpuContext`: everything one opened GPU needs — the wgpu device and queue, the adapter's
//! limits and features, the pipeline cache, the buffer pool, and the one open command encoder.
//!
//! **Asynchronous execution.** A GPU runs work that the CPU records into *command buffers* and
//! submits to a *queue*. Submitting costs tens of microseconds, so ops do not submit: each op
//! records its dispatch into the context's open encoder and returns at once. The encoder is
//! finished and submitted (a *flush*) when data is read back, on `synchronize()`, or after
//! `dispatches_per_submit` dispatches (set by the execution mode). Reading data is therefore the
//! only blocking call, as in PyTorch's CUDA backend.
//!
//! **Errors.** wgpu reports misuse and driver failures asynchronously; we catch them with error
//! scopes around submits and pipeline creation and turn them into `Error`s, log anything that
//! escapes, and mark the context lost when the driver says so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::buffers::{self, BufferKind, MemoryStats, PoolState, PooledBuffer, SharedPool};
use super::kernels::KernelKey;
use super::ExecutionMode;
use crate::error::{Error, Result};

/// Workgroup size of the one-dimensional kernels (elementwise, copies, indexing).
pub(crate) const WORKGROUP_SIZE: u32 = 256;

/// The recording state: the open encoder and how many dispatches it holds.
struct Recording {
    encoder: Option<wgpu::CommandEncoder>,
    dispatches: u32,
}

/// One opened GPU.
pub(crate) struct GpuContext {
    pub(crate) ordinal: usize,
    pub(crate) info: super::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    pub(crate) features: wgpu::Features,
    pipelines: Mutex<HashMap<KernelKey, Arc<wgpu::ComputePipeline>>>,
    pub(crate) pool: SharedPool,
    recording: Mutex<Recording>,
    mode: Mutex<ExecutionMode>,
    lost: Arc<AtomicBool>,
    lost_message: Arc<Mutex<String>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("ordinal", &self.ordinal)
            .field("name", &self.info.name)
            .finish()
    }
}

impl GpuContext {
    /// Open a device on adapter `ordinal`: request every useful feature it has and its best
    /// limits, install the error and device-lost handlers.
    pub(crate) fn create(ordinal: usize) -> Result<GpuContext> {
        let (adapter, info) = super::adapters::adapter(ordinal)?;
        let wanted =
            wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        let features = adapter.features() & wanted;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("anygrad"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|error| Error::NoAdapter {
            hint: format!(
                "adapter gpu:{ordinal} ({}) refused to open a device: {error}",
                info.name
            ),
        })?;
        // Errors outside any scope would panic by default; log them instead.
        device.on_uncaptured_error(Arc::new(|error: wgpu::Error| {
            tracing::error!("uncaptured GPU error: {error}");
        }));
        let lost = Arc::new(AtomicBool::new(false));
        let lost_message = Arc::new(Mutex::new(String::new()));
        {
            let lost = Arc::clone(&lost);
            let lost_message = Arc::clone(&lost_message);
            device.set_device_lost_callback(move |reason, message| {
                // Dropping the device reports `Destroyed`; that is not a failure.
                if reason != wgpu::DeviceLostReason::Destroyed {
                    tracing::error!("GPU device lost ({reason:?}): {message}");
                    *lost_message.lock().unwrap_or_else(|p| p.into_inner()) =
                        format!("{reason:?}: {message}");
                    lost.store(true, Ordering::SeqCst);
                }
            });
        }
        let mode = ExecutionMode::from_env();
        let pool = Arc::new(Mutex::new(PoolState::default()));
        pool.lock().unwrap_or_else(|p| p.into_inner()).caching = mode.caches_buffers();
        Ok(GpuContext {
            ordinal,
            info: info.clone(),
            device,
            queue,
            limits,
            features,
            pipelines: Mutex::new(HashMap::new()),
            pool,
            recording: Mutex::new(Recording {
                encoder: None,
                dispatches: 0,
            }),
            mode: Mutex::new(mode),
            lost,
            lost_message,
        })
    }

    /// `Err(DeviceLost)` once the driver has reported the device lost.
    pub(crate) fn ensure_alive(&self) -> Result<()> {
        if self.lost.load(Ordering::SeqCst) {
            let message = self
                .lost_message
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            return Err(Error::DeviceLost {
                message: format!(
                    "gpu:{} was lost ({message}); recreate tensors on a new device",
                    self.ordinal
                ),
            });
        }
        Ok(())
    }

    /// Whether kernels may use f16.
    pub(crate) fn supports_f16(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F16)
    }

    /// The current execution mode.
    pub(crate) fn mode(&self) -> ExecutionMode {
        *self.mode.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Switch the execution mode (flushes pending work first).
    pub(crate) fn set_mode(&self, mode: ExecutionMode) -> Result<()> {
        self.flush()?;
        *self.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.caching = mode.caches_buffers();
        if !pool.caching {
            pool.empty_cache();
        }
        Ok(())
    }

    /// A tensor buffer of at least `bytes` bytes.
    pub(crate) fn allocate(&self, bytes: u64) -> Result<PooledBuffer> {
        self.ensure_alive()?;
        buffers::allocate(
            &self.device,
            &self.pool,
            bytes,
            BufferKind::Tensor,
            &self.limits,
        )
    }

    /// A small internal buffer holding `words` (kernel parameters), uploaded before the next
    /// submit. Each dispatch gets its own: the pool does not reuse it before that submit.
    pub(crate) fn parameter_buffer(&self, words: &[u32]) -> Result<PooledBuffer> {
        let bytes = (words.len().max(1) * 4) as u64;
        let buffer = buffers::allocate(
            &self.device,
            &self.pool,
            bytes,
            BufferKind::Internal,
            &self.limits,
        )?;
        self.queue
            .write_buffer(buffer.buffer(), 0, bytemuck::cast_slice(words));
        Ok(buffer)
    }

    /// The compute pipeline for `key`, compiled on first use and cached. Compilation errors
    /// come back as `Error::Shader` with naga's message.
    pub(crate) fn pipeline(&self, key: &KernelKey) -> Result<Arc<wgpu::ComputePipeline>> {
        if let Some(pipeline) = self
            .pipelines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Ok(Arc::clone(pipeline));
        }
        let source = key.source();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let descriptor = wgpu::ShaderModuleDescriptor {
            label: Some(&key.name()),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        // wgpu normally adds a bounds check to every buffer and array access (robustness for
        // untrusted shaders). Trusted kernels skip them: GPU-NOTES measured +7% on matmul.
        let module = if key.is_trusted() {
            // SAFETY: trusted kernels (the matmuls) index storage only at positions inside
            // views that `check_view` validated against the buffer lengths, guarded by explicit
            // `row < m`, `column < n`, `k < K`, `b < batch` tests, and index workgroup arrays
            // with constant-bounded expressions (see `matmul.wgsl`, `matmul_large.rs`).
            unsafe {
                self.device.create_shader_module_trusted(
                    descriptor,
                    wgpu::ShaderRuntimeChecks::unchecked(),
                )
            }
        } else {
            self.device.create_shader_module(descriptor)
        };
        // `layout: None` lets wgpu derive the bind-group layout from the shader's bindings.
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&key.name()),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(Error::Shader {
                kernel: key.name(),
                message: error.to_string(),
            });
        }
        let pipeline = Arc::new(pipeline);
        self.pipelines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), Arc::clone(&pipeline));
        Ok(pipeline)
    }

    /// Record one dispatch of `key` over `workgroups` with `bindings` as bind group 0 (in
    /// binding order). Returns at once; the GPU runs it after the next flush.
    pub(crate) fn dispatch(
        &self,
        key: &KernelKey,
        bindings: &[&wgpu::Buffer],
        workgroups: (u32, u32, u32),
    ) -> Result<()> {
        self.ensure_alive()?;
        let pipeline = self.pipeline(key)?;
        let entries: Vec<wgpu::BindGroupEntry<'_>> = bindings
            .iter()
            .enumerate()
            .map(|(binding, buffer)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource: buffer.as_entire_binding(),
            })
            .collect();
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let flush_now = {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            let encoder = recording.encoder.get_or_insert_with(|| {
                self.device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("anygrad ops"),
                    })
            });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: None,
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(workgroups.0, workgroups.1, workgroups.2);
            }
            recording.dispatches += 1;
            recording.dispatches >= self.mode().dispatches_per_submit()
        };
        if flush_now {
            self.flush()?;
        }
        Ok(())
    }

    /// Record a buffer-to-buffer copy into the open encoder.
    pub(crate) fn copy_buffer(
        &self,
        source: &wgpu::Buffer,
        destination: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<()> {
        self.ensure_alive()?;
        if bytes == 0 {
            return Ok(());
        }
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        let encoder = recording.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("anygrad ops"),
                })
        });
        encoder.copy_buffer_to_buffer(source, 0, destination, 0, bytes);
        Ok(())
    }

    /// Record zero-filling of a buffer's first `bytes` bytes (a multiple of 4).
    pub(crate) fn clear_buffer(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<()> {
        self.ensure_alive()?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        let encoder = recording.encoder.get_or_insert_with(|| {
            self.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("anygrad ops"),
                })
        });
        encoder.clear_buffer(buffer, 0, Some(bytes));
        Ok(())
    }

    /// Submit the open encoder (if any). Validation errors of the recorded work surface here.
    pub(crate) fn flush(&self) -> Result<()> {
        self.ensure_alive()?;
        // The recording lock is held through submit *and* pool promotion: otherwise another
        // thread could promote (and reuse) buffers that the encoder taken here still reads,
        // before this thread has submitted it.
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        recording.dispatches = 0;
        let encoder = recording.encoder.take();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        if let Some(encoder) = encoder {
            self.queue.submit(Some(encoder.finish()));
        } else {
            // Uploads made with `queue.write_buffer` still need a submit to be scheduled.
            self.queue.submit(None);
        }
        let internal_error = pollster::block_on(internal.pop());
        let validation_error = pollster::block_on(scope.pop());
        // Buffers released while that work was being recorded may be reused from now on.
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .promote_pending();
        drop(recording);
        if let Some(error) = validation_error.or(internal_error) {
            return Err(Error::DeviceLost {
                message: format!("the GPU rejected recorded work: {error}"),
            });
        }
        Ok(())
    }

    /// Flush and wait until the GPU has finished everything submitted.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.flush()?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|error| Error::DeviceLost {
                message: format!("waiting for the GPU failed: {error}"),
            })?;
        self.ensure_alive()
    }

    /// Copy the first `bytes` bytes of `source` to the host (blocks until the GPU is done).
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
        {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            let encoder = recording.encoder.get_or_insert_with(|| {
                self.device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("anygrad ops"),
                    })
            });
            encoder.copy_buffer_to_buffer(source, 0, &staging, 0, padded);
        }
        self.flush()?;
        let outcome: Arc<Mutex<Option<std::result::Result<(), wgpu::BufferAsyncError>>>> =
            Arc::new(Mutex::new(None));
        {
            let outcome = Arc::clone(&outcome);
            staging.map_async(wgpu::MapMode::Read, .., move |result| {
                *outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            });
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|error| Error::DeviceLost {
                message: format!("waiting for the GPU failed: {error}"),
            })?;
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
            view[..bytes as usize].to_vec()
        };
        staging.unmap();
        staging.destroy();
        Ok(data)
    }

    /// Memory counters.
    pub(crate) fn memory_stats(&self) -> MemoryStats {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).stats()
    }

    /// Release cached buffers (after finishing pending work, so nothing in flight is lost).
    pub(crate) fn empty_cache(&self) {
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

    /// A grid of `count` workgroups that respects the per-dimension limit: spill into `y`
    /// (kernels rebuild the linear workgroup id as `y * num_workgroups.x + x`).
    pub(crate) fn grid(&self, count: u32) -> (u32, u32, u32) {
        let max = self.limits.max_compute_workgroups_per_dimension.max(1);
        if count <= max {
            (count.max(1), 1, 1)
        } else {
            (max, count.div_ceil(max), 1)
        }
    }
}
