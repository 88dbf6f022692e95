//! `GpuContext`: everything one opened GPU needs — the wgpu device and queue, the adapter's
//! limits and features, the pipeline cache, the buffer pool, and the one open command encoder.
//!
//! **Asynchronous execution.** A GPU runs work that the CPU records into *command buffers* and
//! submits to a *queue*. Submitting costs tens of microseconds, so ops do not submit: each op
//! records its dispatch into the context's open encoder and returns at once. The encoder is
//! finished and submitted (a *flush*) when data is read back, on `synchronize()`, or after
//! `dispatches_per_submit` dispatches (set by the execution mode; the first submission after a
//! flush is small and each next one doubles, so a GPU left idle by a readback starts at once).
//! Reading data is therefore the only blocking call, as in PyTorch's CUDA backend.
//!
//! **Cheap recording.** What an op costs on the host is what small models are bound by, so the
//! per-dispatch path avoids every avoidable driver object:
//! - one *compute pass* stays open across dispatches (`ComputePass::forget_lifetime`); it is
//!   ended only for buffer copies and at flush. wgpu still places a barrier between dependent
//!   dispatches of one pass, so results are correct.
//! - kernel parameters go into a host-side *arena* (one per submission); each dispatch binds its
//!   slice of one device buffer at an aligned offset, and the whole arena is uploaded with a
//!   single `write_buffer` just before the submit — one staging copy per submission instead of a
//!   buffer and a staging copy per dispatch. (A later submission may reuse the same device
//!   buffer: the queue orders the upload after the earlier submissions that read it.)
//! - parameter words that repeat are bound from a cache written once (`runtime/context/reuse.rs`): a
//!   loop that repeats its steps uploads no parameters after its first steps.
//! - pipelines are cached with their bind-group layout (`get_bind_group_layout` is not free).
//!
//! **Deferred index checks.** Index kernels never read or write out of bounds; a bad index sets
//! a word in a small device buffer (`index_flags`), one word (*slot*) per index dispatch. The
//! used words are copied out with the next readback (or `synchronize`) — like CUDA's
//! device-side asserts, without a GPU round trip per index op. Each slot remembers the op and
//! the thread that recorded it, so the error is returned by *that thread's* next readback or
//! synchronize (threads sharing a device do not receive each other's errors).
//!
//! **Errors.** wgpu reports misuse and driver failures asynchronously; we catch them with error
//! scopes around submits and pipeline creation and turn them into `Error`s, log anything that
//! escapes, and mark the context lost when the driver says so.

mod copies;
mod family_state;
mod index_flags;
mod loss;
mod pipeline_store;
mod readback;
mod reuse;
mod shutdown;
mod staging;
mod stats;
mod timing;

pub(crate) use readback::PendingBytes;
pub(crate) use staging::GpuStaging;

use index_flags::FlagCopy;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;

use super::adapters::cooperative::CooperativeMatrices;
use super::buffers::{self, BufferKind, PoolState, PooledBuffer, SharedPool};
use super::hooks::{DeferredWork, DenseCopies, ElementwiseRequest, Hooks};
use super::kernel::KernelId;
use super::storage::GpuStorage;
use crate::backend::gpu_facts::ExecutionMode;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::BinaryOp;

/// Workgroup size of the one-dimensional kernels (elementwise, copies, indexing).
pub(crate) const WORKGROUP_SIZE: u32 = 256;

/// Most workgroups of a grid-stride launch (x dimension only): the vectorized elementwise
/// kernels, fused programs, softmax and layer norm rows, batch norm's sums.
pub(crate) const MAX_WORKGROUPS: u32 = 8192;

/// Bytes of the device buffer that holds one submission's kernel parameters. When a
/// submission's parameters would not fit, it is flushed early.
const ARENA_BYTES: u64 = 256 * 1024;

/// Words of the index-flag buffer: index dispatches recorded between two checks. When they
/// are used up, the flags are copied out (without waiting) and the slots start over.
const INDEX_FLAG_SLOTS: usize = 1024;

/// The parameter word of an index kernel that the context fills with its flag slot.
pub(crate) const INDEX_SLOT_WORD: usize = 6;

/// Most workgroups along y of a row-walking kernel (`index_rows.wgsl`).
pub(crate) const MAX_ROW_WORKGROUPS: u32 = 65535;

/// Dispatches in the first submission after a flush. After a readback or a synchronize the
/// GPU has nothing queued: submitting the first few dispatches at once lets it start while
/// the host records the rest, and each later submission doubles up to the mode's
/// `dispatches_per_submit` (an idle GPU otherwise waited for a whole submission's recording).
const FIRST_SUBMIT_DISPATCHES: u32 = 4;

/// A dispatch of at least this many workgroups recorded while the GPU is idle (nothing
/// submitted since the last wait) is submitted at once, so that the GPU works on it while the
/// host records what follows. H200, attention forward + backward at 8 x 12 x 512 x 64 (whose
/// forward kernel, 384 workgroups, comes first): 0.513–0.514 ms a synchronized step against
/// 0.548–0.581 in the same call.
const EARLY_SUBMIT_WORKGROUPS: u64 = 256;

/// A compiled kernel and the layout of its bind group 0.
pub(crate) struct CachedPipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// The kernel's name (`Kernel::name`), for the profiler's per-kernel times.
    label: Arc<str>,
}

/// The recording state: the open encoder, its open compute pass, and this submission's
/// parameter words. Field order matters: the pass must be dropped (ended) before the encoder.
struct Recording {
    pass: Option<wgpu::ComputePass<'static>>,
    encoder: Option<wgpu::CommandEncoder>,
    dispatches: u32,
    /// Dispatches after which this submission is flushed: [`FIRST_SUBMIT_DISPATCHES`] after
    /// every flush, doubled by each flush it triggers, never above `dispatches_per_submit`.
    submit_after: u32,
    params: Vec<u32>,
    /// Owner (thread, op) of each used slot of the index-flag buffer.
    index_owners: Vec<(ThreadId, &'static str)>,
    /// Flushes so far.
    submissions: u64,
    /// While the profiler times an op: the timestamp queries its passes write to (one pass
    /// per kernel then; `runtime/context/timing.rs`).
    timing: Option<timing::OpTimer>,
    /// Elementwise ops waiting to be fused (`fusion/`); drained before any other work.
    deferred: Vec<DeferredWork>,
    /// Nothing has been submitted since the last wait: the GPU is idle.
    idle: bool,
    /// Parameter words seen more than once, and where they live (`runtime/context/reuse.rs`).
    param_cache: reuse::ParamCache,
    /// Kernels dispatched since the device opened, by kernel name (`kernel_dispatches`).
    dispatch_counts: HashMap<Arc<str>, u64>,
    /// The index of the last submission `queue.submit` returned: blocking waits wait for it
    /// (`runtime/context/readback.rs`), never for "the last one" as wgpu counts it, which may be
    /// another thread's submission still being handed to the driver.
    last_submission: Option<wgpu::SubmissionIndex>,
}

impl Recording {
    /// The open encoder, with the compute pass ended (copies cannot be recorded inside a pass).
    fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("anygrad ops"),
            })
        })
    }

    /// The open compute pass (opening the encoder and the pass when needed).
    fn pass(&mut self, device: &wgpu::Device) -> &mut wgpu::ComputePass<'static> {
        let pass = match self.pass.take() {
            Some(pass) => pass,
            None => {
                let encoder = self.encoder.get_or_insert_with(|| {
                    device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("anygrad ops"),
                    })
                });
                // GPU timestamps (profiler): the GPU writes its clock when the pass begins and
                // ends (`runtime/context/timing.rs`).
                let timestamp_writes = self.timing.as_mut().map(timing::OpTimer::open_pass);
                encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes,
                    })
                    .forget_lifetime()
            }
        };
        self.pass.insert(pass)
    }
}

/// One opened GPU.
pub(crate) struct GpuContext {
    pub(crate) ordinal: usize,
    pub(crate) info: crate::backend::gpu_facts::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    pub(crate) features: wgpu::Features,
    pipelines: Mutex<HashMap<Box<dyn KernelId>, Arc<CachedPipeline>>>,
    /// Pipelines compiled so far (counting each recompilation after the bounds-check mode
    /// changed).
    pipelines_compiled: AtomicU64,
    /// When set, every kernel is compiled with wgpu's runtime bounds checks, trusted ones
    /// too (`ANYGRAD_GPU_BOUNDS_CHECKS=on`, [`GpuContext::set_bounds_checks`]).
    bounds_checks: AtomicBool,
    pub(crate) pool: SharedPool,
    recording: Mutex<Recording>,
    /// Device buffer of the parameter arena (`ARENA_BYTES`).
    arena: wgpu::Buffer,
    /// Device buffer of the parameter cache (`reuse::PARAM_CACHE_BYTES`): slots written once.
    param_cache: wgpu::Buffer,
    /// Parameter offsets are multiples of this many words (the storage offset alignment).
    arena_alignment_words: usize,
    /// One u32 per index dispatch: non-zero once its kernel saw an out-of-range index.
    index_flags: wgpu::Buffer,
    /// Flag copies recorded but not yet read.
    flag_copies: Mutex<Vec<FlagCopy>>,
    /// Out-of-range errors found but not yet returned, per recording thread.
    index_errors: Mutex<HashMap<ThreadId, &'static str>>,
    /// Serializes `check_index_errors` (see there).
    index_check: Mutex<()>,
    mode: Mutex<ExecutionMode>,
    /// `mode.dispatches_per_submit()`, readable without a lock on the dispatch path.
    dispatches_per_submit: AtomicU32,
    lost: Arc<AtomicBool>,
    lost_message: Arc<Mutex<String>>,
    /// A `queue.write_buffer` upload waits for the next submission
    /// ([`GpuContext::write_buffer`]).
    uploads_pending: AtomicBool,
    /// Two timestamp queries for the profiler, created on first use.
    timestamps: Mutex<Option<Arc<wgpu::QuerySet>>>,
    /// The prefetch kernel's write-never outputs (`prefetch/`), created on first use, and
    /// the next one to bind.
    prefetch_sinks: std::sync::OnceLock<Vec<wgpu::Buffer>>,
    prefetch_next: std::sync::atomic::AtomicUsize,
    /// Elementwise ops deferred for fusion, and the kernels they became.
    fused_ops: AtomicU64,
    fused_kernels: AtomicU64,
    /// Cooperative-matrix (tensor-core) support (`adapters/cooperative.rs`).
    pub(crate) coop: CooperativeMatrices,
    /// State the kernel families keep for this device (`context/family_state.rs`).
    family_states: family_state::FamilyStates,
    /// Kernel choices timed on this device (`runtime/autotune.rs`).
    pub(crate) autotune: super::autotune::Autotuner,
    /// Compiled pipelines kept on disk between runs, where the driver allows
    /// (`runtime/context/pipeline_store.rs`).
    pipeline_store: Option<pipeline_store::PipelineStore>,
    /// What the kernel families registered: the planner of deferred work, their caches.
    hooks: &'static Hooks,
}
impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("ordinal", &self.ordinal)
            .field("name", &self.info.name)
            .finish()
    }
}

/// Bindings of one kernel at most, its parameters included: the attention key-value kernel
/// with a key bias that sums the query gradient (`attention/coop/backward/fold.rs`) binds eight
/// buffers; fused kernels bind up to `fusion::MAX_LEAVES` inputs and one output.
pub(crate) const MAX_BINDINGS: usize = 9;

/// Prefetch sinks in rotation (`GpuContext::prefetch_sink`). Where one submission records more
/// prefetches than this, some share a sink and wait on a barrier: slower, never wrong.
const PREFETCH_SINKS: usize = 64;

impl GpuContext {
    /// Open a device on adapter `ordinal`: request every useful feature it has and its best
    /// limits, install the error and device-lost handlers.
    pub(crate) fn create(ordinal: usize, hooks: &'static Hooks) -> Result<GpuContext> {
        let (adapter, info) = super::adapters::adapter(ordinal)?;
        // Cooperative matrices (tensor cores, `matmul/coop.rs`) are experimental in wgpu: they
        // are requested, with experimental features enabled, only where the adapter has them.
        let wanted = wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
            | wgpu::Features::SUBGROUP_BARRIER
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::SHADER_FLOAT32_ATOMIC
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
            | wgpu::Features::PIPELINE_CACHE;
        let mut features = super::adapters::usable_features(adapter) & wanted;
        let limits = adapter.limits();
        let open = |features: wgpu::Features| {
            let experimental_features =
                if features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
                    // SAFETY: wgpu warns that its experimental APIs may still have bugs with
                    // undefined behavior; the only one used is cooperative matrices, by the
                    // `MatmulCoop` kernels alone, on shapes that `coop_applies` checked.
                    unsafe { wgpu::ExperimentalFeatures::enabled() }
                } else {
                    wgpu::ExperimentalFeatures::disabled()
                };
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("anygrad"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features,
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            }))
        };
        let mut opened = open(features);
        if opened.is_err() && features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            tracing::warn!("gpu:{ordinal}: no device with cooperative matrices; opening without");
            features.remove(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
            opened = open(features);
        }
        let (device, queue) = opened.map_err(|error| Error::NoAdapter {
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
                    // The first report is kept (`runtime/context/loss.rs`).
                    let mut kept = lost_message.lock().unwrap_or_else(|p| p.into_inner());
                    if !lost.swap(true, Ordering::SeqCst) {
                        *kept = format!("{reason:?}: {message}");
                    }
                }
            });
        }
        let mode = ExecutionMode::from_env();
        let pool = Arc::new(Mutex::new(PoolState::default()));
        pool.lock().unwrap_or_else(|p| p.into_inner()).caching = mode.caches_buffers();
        let internal_buffer = |label: &'static str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: buffers::BUFFER_USAGE,
                mapped_at_creation: false,
            })
        };
        let arena = internal_buffer("anygrad parameters", ARENA_BYTES);
        let param_cache = internal_buffer("anygrad parameter cache", reuse::PARAM_CACHE_BYTES);
        let index_flags = internal_buffer("anygrad index flags", (INDEX_FLAG_SLOTS * 4) as u64);
        let arena_alignment_words =
            (limits.min_storage_buffer_offset_alignment.max(4) / 4) as usize;
        let coop = CooperativeMatrices::detect(adapter, features, &limits);
        let pipeline_store =
            pipeline_store::PipelineStore::open(&device, features, &adapter.get_info());
        Ok(GpuContext {
            ordinal,
            info: info.clone(),
            device,
            queue,
            limits: buffers::with_binding_cap(limits),
            features,
            pipelines: Mutex::new(HashMap::new()),
            pipelines_compiled: AtomicU64::new(0),
            bounds_checks: AtomicBool::new(bounds_checks_requested()),
            pool,
            recording: Mutex::new(Recording {
                pass: None,
                timing: None,
                encoder: None,
                dispatches: 0,
                submit_after: FIRST_SUBMIT_DISPATCHES,
                params: Vec::with_capacity((ARENA_BYTES / 4) as usize),
                index_owners: Vec::new(),
                submissions: 0,
                deferred: Vec::new(),
                idle: true,
                param_cache: reuse::ParamCache::new(
                    (reuse::PARAM_CACHE_BYTES / 4) as usize,
                    arena_alignment_words,
                ),
                dispatch_counts: HashMap::new(),
                last_submission: None,
            }),
            arena,
            param_cache,
            arena_alignment_words,
            index_flags,
            flag_copies: Mutex::new(Vec::new()),
            index_errors: Mutex::new(HashMap::new()),
            index_check: Mutex::new(()),
            mode: Mutex::new(mode),
            dispatches_per_submit: AtomicU32::new(mode.dispatches_per_submit()),
            lost,
            lost_message,
            uploads_pending: AtomicBool::new(false),
            timestamps: Mutex::new(None),
            prefetch_sinks: std::sync::OnceLock::new(),
            prefetch_next: std::sync::atomic::AtomicUsize::new(0),
            fused_ops: AtomicU64::new(0),
            fused_kernels: AtomicU64::new(0),
            coop,
            family_states: family_state::FamilyStates::default(),
            autotune: super::autotune::Autotuner::for_adapter(
                super::autotune::mode_from_env(info.device_type == "Cpu"),
                format!(
                    "{} | {} {} | {}",
                    info.name, info.driver, info.driver_info, info.backend
                ),
                super::autotune::Autotuner::default_file(),
            ),
            pipeline_store,
            hooks,
        })
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
        self.dispatches_per_submit
            .store(mode.dispatches_per_submit(), Ordering::Relaxed);
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.caching = mode.caches_buffers();
        if !pool.caching {
            pool.empty_cache();
        }
        Ok(())
    }

    /// The largest buffer one kernel binds (`buffers::binding_limit`, after
    /// `ANYGRAD_MAX_BINDING_BYTES`); larger tensors live in pieces (`runtime/parts.rs`).
    pub(crate) fn binding_limit(&self) -> u64 {
        buffers::binding_limit(&self.limits)
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

    /// The compute pipeline for `key`, compiled on first use and cached. Compilation errors
    /// come back as `Error::Shader` with naga's message.
    pub(crate) fn pipeline(&self, key: &dyn KernelId) -> Result<Arc<CachedPipeline>> {
        if let Some(pipeline) = self
            .pipelines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Ok(Arc::clone(pipeline));
        }
        let started = std::time::Instant::now();
        let source = key.source();
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let descriptor = wgpu::ShaderModuleDescriptor {
            label: Some(&key.name()),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        };
        // wgpu normally adds a bounds check to every buffer and array access (robustness for
        // untrusted shaders). Trusted kernels skip them: measured +7% on matmul (H200).
        let all_checked = self.bounds_checks.load(Ordering::Relaxed);
        let module = if key.is_trusted() && !all_checked {
            // SAFETY: trusted kernels (the matmuls, the contiguous vec4 elementwise kernels and
            // vec4 fused programs) index storage only at positions inside views that
            // `check_view` validated against the buffer lengths, guarded by explicit `row < m`,
            // `column < n`, `k < K`, `b < batch`, `i < numel` tests — or, for the aligned
            // matmul, by `aligned_applies` on the host (every vec4 it touches lies inside the
            // checked views; `matmul_with` refuses the key otherwise; likewise `coop_applies`
            // for the cooperative-matrix matmuls of `matmul/coop.rs`) — and index workgroup
            // arrays with constant-bounded expressions (see `matmul.wgsl`, `matmul/large.rs`,
            // `elementwise/vector.rs`, `fusion/source.rs`; the direct convolution in `conv/direct.rs` checks every
            // gathered input position against the image and every weight/output index against
            // its extent).
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
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: !key.writes_workgroup_memory_first(),
                    ..Default::default()
                },
                cache: self.pipeline_store.as_ref().map(|store| &store.cache),
            });
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(Error::Shader {
                kernel: key.name(),
                message: error.to_string(),
            });
        }
        if let Some(store) = &self.pipeline_store {
            store.created_one();
        }
        self.pipelines_compiled.fetch_add(1, Ordering::Relaxed);
        let layout = pipeline.get_bind_group_layout(0);
        tracing::debug!(
            kernel = %key.name(),
            milliseconds = started.elapsed().as_secs_f64() * 1e3,
            "compiled a pipeline"
        );
        let pipeline = Arc::new(CachedPipeline {
            pipeline,
            layout,
            label: key.name().into(),
        });
        let mut pipelines = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        // A pipeline compiled in the mode that `set_bounds_checks` just left is used once
        // and not kept.
        if self.bounds_checks.load(Ordering::Relaxed) == all_checked {
            pipelines.insert(key.boxed_id(), Arc::clone(&pipeline));
        }
        Ok(pipeline)
    }

    /// Compile every kernel from now on with wgpu's runtime bounds checks (`true`), trusted
    /// ones too, or let trusted kernels run without them again (`false`). A change empties
    /// the pipeline cache, so each kernel is compiled again in the new mode on its next use.
    pub(crate) fn set_bounds_checks(&self, on: bool) {
        let mut pipelines = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if self.bounds_checks.swap(on, Ordering::Relaxed) != on {
            pipelines.clear();
        }
    }

    /// Whether every kernel is compiled with bounds checks ([`GpuContext::set_bounds_checks`]).
    pub(crate) fn bounds_checks(&self) -> bool {
        self.bounds_checks.load(Ordering::Relaxed)
    }

    /// Pipelines compiled on this device so far.
    pub(crate) fn pipelines_compiled(&self) -> u64 {
        self.pipelines_compiled.load(Ordering::Relaxed)
    }

    /// Record one dispatch of `key` over `workgroups`. Bind group 0 is `params` (binding 0,
    /// placed in this submission's parameter arena) followed by `bindings` in binding order.
    /// Returns at once; the GPU runs it after the next flush.
    pub(crate) fn dispatch(
        &self,
        key: &dyn KernelId,
        params: &[u32],
        bindings: &[&wgpu::Buffer],
        workgroups: (u32, u32, u32),
    ) -> Result<()> {
        self.dispatch_checked(key, params, bindings, workgroups, None)
    }

    /// `dispatch` for an index kernel of `index_op` (`Some`): its parameter word
    /// `INDEX_SLOT_WORD` is set to a fresh slot of the index-flag buffer (binding 4).
    pub(crate) fn dispatch_checked(
        &self,
        key: &dyn KernelId,
        params: &[u32],
        bindings: &[&wgpu::Buffer],
        workgroups: (u32, u32, u32),
        index_op: Option<&'static str>,
    ) -> Result<()> {
        self.ensure_alive()?;
        let pipeline = self.pipeline(key)?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.drain_locked(&mut recording)?;
        self.record_dispatch_locked(
            &mut recording,
            &pipeline,
            params,
            bindings,
            workgroups,
            index_op,
        )
    }

    /// Defer an elementwise op for fusion (`fusion/`); it is dispatched, possibly fused
    /// with the ops around it, before any other work is recorded.
    pub(crate) fn defer(&self, op: DeferredWork) -> Result<()> {
        self.ensure_alive()?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        recording.deferred.push(op);
        if recording.deferred.len() >= self.hooks.deferred.capacity() {
            self.drain_locked(&mut recording)?;
        }
        Ok(())
    }

    /// Offer an elementwise op to the family that defers work (`Hooks::deferred`): its
    /// output where it was deferred, `None` where the caller dispatches it.
    pub(crate) fn defer_elementwise(
        &self,
        op_name: &'static str,
        input: (&GpuStorage, &Layout),
        request: ElementwiseRequest,
        rhs: Option<(&GpuStorage, &Layout)>,
    ) -> Result<Option<GpuStorage>> {
        self.hooks.deferred.defer(op_name, input, request, rhs)
    }

    /// The dense copies registered with this context (`Hooks::dense_copies`).
    pub(crate) fn dense_copies(&self) -> &'static dyn DenseCopies {
        self.hooks.dense_copies
    }

    /// `lhs op rhs` by the elementwise family (`Hooks::fold`), for sliced plans.
    pub(crate) fn fold(
        &self,
        lhs: &GpuStorage,
        lhs_layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<GpuStorage> {
        (self.hooks.fold)(lhs, lhs_layout, rhs, rhs_layout, op)
    }

    /// Record a read of `storage` into the L2 cache where that pays (`Hooks::prefetch`).
    pub(crate) fn prefetch(&self, storage: &GpuStorage) -> Result<()> {
        (self.hooks.prefetch)(storage)
    }

    /// Record the deferred elementwise ops now (a pending result is about to be used).
    pub(crate) fn drain(&self) -> Result<()> {
        self.ensure_alive()?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.drain_locked(&mut recording)
    }

    /// Plan and record the deferred elementwise ops (fused where possible).
    fn drain_locked(&self, recording: &mut MutexGuard<'_, Recording>) -> Result<()> {
        if recording.deferred.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut recording.deferred);
        self.fused_ops
            .fetch_add(ops.len() as u64, Ordering::Relaxed);
        let kernels = self.hooks.deferred.plan(ops);
        self.fused_kernels
            .fetch_add(kernels.len() as u64, Ordering::Relaxed);
        for kernel in kernels {
            let pipeline = self.pipeline(&*kernel.key)?;
            // The output gets its memory now; inputs are tensors' buffers or outputs of kernels
            // recorded before this one.
            if kernel.output.get().is_none() {
                let buffer = self.allocate(kernel.output_bytes)?;
                let _ = kernel.output.set(buffer);
            }
            let missing = || Error::invalid("fused kernel", "an input was never computed");
            let mut bindings: Vec<&wgpu::Buffer> = Vec::with_capacity(kernel.inputs.len() + 1);
            for input in &kernel.inputs {
                bindings.push(input.get().ok_or_else(missing)?.buffer());
            }
            bindings.push(kernel.output.get().ok_or_else(missing)?.buffer());
            self.record_dispatch_locked(
                recording,
                &pipeline,
                &kernel.params,
                &bindings,
                (kernel.workgroups, 1, 1),
                None,
            )?;
        }
        Ok(())
    }

    /// Record one dispatch with the recording lock held (see `dispatch_checked`).
    fn record_dispatch_locked(
        &self,
        recording: &mut MutexGuard<'_, Recording>,
        pipeline: &CachedPipeline,
        params: &[u32],
        bindings: &[&wgpu::Buffer],
        workgroups: (u32, u32, u32),
        index_op: Option<&'static str>,
    ) -> Result<()> {
        let bind_group = self.bind_group_locked(recording, pipeline, params, bindings, index_op)?;
        let pass = recording.pass(&self.device);
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(workgroups.0, workgroups.1, workgroups.2);
        if let Some(timer) = recording.timing.as_mut() {
            // Timed: each kernel in a pass of its own, named.
            timer.name_pass(&pipeline.label);
            recording.pass = None;
        }
        recording.dispatches += 1;
        match recording.dispatch_counts.get_mut(&*pipeline.label) {
            Some(count) => *count += 1,
            None => {
                recording.dispatch_counts.insert(pipeline.label.clone(), 1);
            }
        }
        let limit = self.dispatches_per_submit.load(Ordering::Relaxed);
        let grid = u64::from(workgroups.0) * u64::from(workgroups.1) * u64::from(workgroups.2);
        if recording.idle && grid >= EARLY_SUBMIT_WORKGROUPS {
            self.flush_locked(recording)?;
        } else if recording.dispatches >= recording.submit_after.min(limit) {
            let next = recording.submit_after.saturating_mul(2);
            self.flush_locked(recording)?;
            recording.submit_after = next;
        }
        Ok(())
    }

    /// Submit the open encoder (if any). Validation errors of the recorded work surface here.
    pub(crate) fn flush(&self) -> Result<()> {
        self.ensure_alive()?;
        let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
        self.flush_locked(&mut recording)
    }

    /// `flush` with the recording lock held by the caller. The lock is held through submit
    /// *and* pool promotion: otherwise another thread could promote (and reuse) buffers that
    /// the encoder taken here still reads, before this thread has submitted it.
    fn flush_locked(&self, recording: &mut MutexGuard<'_, Recording>) -> Result<()> {
        self.drain_locked(recording)?;
        recording.dispatches = 0;
        recording.submit_after = FIRST_SUBMIT_DISPATCHES;
        recording.submissions += 1;
        recording.pass = None;
        let encoder = recording.encoder.take();
        let uploads = self.uploads_pending.swap(false, Ordering::AcqRel);
        if encoder.is_none() && recording.params.is_empty() && !uploads {
            // Nothing recorded or uploaded since the last submission: a submit would only add
            // its own cost to the wait that follows.
            self.pool
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .promote_pending();
            return Ok(());
        }
        recording.idle = false;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        if !recording.params.is_empty() {
            // The queue runs this upload before the command buffer submitted next.
            self.queue
                .write_buffer(&self.arena, 0, bytemuck::cast_slice(&recording.params));
            recording.params.clear();
        }
        recording.last_submission = Some(if let Some(encoder) = encoder {
            self.queue.submit(Some(encoder.finish()))
        } else {
            // Uploads made with `queue.write_buffer` still need a submit to be scheduled.
            self.queue.submit(None)
        });
        let internal_error = pollster::block_on(internal.pop());
        let validation_error = pollster::block_on(scope.pop());
        // Buffers released while that work was being recorded may be reused from now on.
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .promote_pending();
        if let Some(error) = validation_error.or(internal_error) {
            return Err(Error::DeviceLost {
                message: format!("the GPU rejected recorded work: {error}"),
            });
        }
        Ok(())
    }

    /// An output buffer for the next prefetch kernel (`prefetch/`): bound for writing, never
    /// written. They rotate through [`PREFETCH_SINKS`] buffers: wgpu puts a barrier before a
    /// dispatch that binds for writing a buffer an earlier dispatch of the same submission
    /// wrote, and a barrier waits for every kernel before it; with a sink of its own, a
    /// prefetch runs alongside the kernel before it.
    pub(crate) fn prefetch_sink(&self) -> &wgpu::Buffer {
        let sinks = self.prefetch_sinks.get_or_init(|| {
            (0..PREFETCH_SINKS)
                .map(|_| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("anygrad prefetch sink"),
                        size: 16,
                        usage: wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    })
                })
                .collect()
        });
        let next = self.prefetch_next.fetch_add(1, Ordering::Relaxed);
        &sinks[next % sinks.len()]
    }

    /// Flush and wait until the GPU has finished everything submitted, leaving index-error
    /// flags for the next readback (the autotuner's timing).
    pub(crate) fn settle(&self) -> Result<()> {
        self.flush()?;
        self.wait()?;
        self.ensure_alive()
    }

    /// Flush and wait until the GPU has finished everything submitted. Reports an
    /// out-of-range index that this thread's index kernels saw since the last check.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.ensure_alive()?;
        let submitted = {
            let mut recording = self.recording.lock().unwrap_or_else(|p| p.into_inner());
            self.queue_flag_copy_locked(&mut recording);
            self.flush_locked(&mut recording)?;
            recording.submissions
        };
        self.wait()?;
        self.mark_idle();
        self.ensure_alive()?;
        self.check_index_errors(submitted)
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

/// Whether `ANYGRAD_GPU_BOUNDS_CHECKS` asks for every kernel with bounds checks (`on`, `1`,
/// `true`); anything else leaves trusted kernels without them.
fn bounds_checks_requested() -> bool {
    std::env::var("ANYGRAD_GPU_BOUNDS_CHECKS")
        .map(|value| {
            matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "on" | "1" | "true"
            )
        })
        .unwrap_or(false)
}
