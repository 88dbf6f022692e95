//! The fused attention forward on cooperative matrices (tensor cores), for f16: the key of
//! its kernels ([`CoopForward`], WGSL in `attention/coop/source.rs`), which calls it covers,
//! its per-device state (`ANYGRAD_COOP_ATTENTION`, the dispatch count, a driver's refusal)
//! and its launch (the uniform kernel, then the redo of the workgroups it flagged:
//! `attention/coop/uniform.rs`). `attention/`'s forward launcher tries it first; it writes
//! the same output and log-sum-exp as the scalar forward, so either backward (scalar, or the
//! cooperative one of `attention/coop/backward.rs`, which shares this state) takes its
//! results unchanged.
//!
//! It runs where the f16 matmul's tensor cores run (the context's `coop`, `CooperativeMatrices`: a
//! 16x16x16 f16 x f16 -> f32 configuration, subgroups of exactly 32), for F16 calls whose head
//! and value sizes are multiples of 16 up to 128, when its workgroup memory fits, unless
//! `ANYGRAD_COOP_ATTENTION=off`. Everywhere else (and after the driver refused the kernel:
//! `Error::Shader`, the device then stops trying) the scalar kernels run.

pub(crate) mod backward;
pub(crate) mod layout;
pub(crate) mod source;
pub(crate) mod spell;
pub(crate) mod staging;
pub(crate) mod uniform;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::gpu::attention::coop::layout::{double_buffer_applies, workgroup_bytes};
pub(crate) use crate::backend::gpu::attention::coop::source::{CoopForward, ForwardMode};
use crate::backend::gpu::attention::kernel::AttentionKernel;
use crate::backend::gpu::runtime::context::GpuContext;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::AttentionShape;

/// The largest head or value size the cooperative kernel is generated for.
const MAX_WIDTH: usize = 128;

impl CoopForward {
    /// The complete WGSL source (`enable` lines included).
    pub(crate) fn source(&self) -> String {
        format!(
            "enable f16;\n{}",
            crate::backend::gpu::attention::coop::source::forward_source(self)
        )
    }
}

/// The catalogue entries (`kernel_catalog.rs`): the common head sizes, both flags, the
/// subgroup layouts each size takes, real and emulated.
pub(crate) fn catalogue(keys: &mut Vec<AttentionKernel>) {
    for (head_dim, value_dim) in [(16, 16), (32, 32), (64, 64), (128, 128), (48, 80)] {
        for (causal, key_bias) in [(false, false), (true, false), (false, true)] {
            for subgroups in SUBGROUPS {
                if !layout_takes(subgroups, head_dim as usize, value_dim as usize) {
                    continue;
                }
                for emulated in [false, true] {
                    for mode in [ForwardMode::Exact, ForwardMode::Uniform, ForwardMode::Redo] {
                        for double_buffered in [true, false] {
                            let key = CoopForward {
                                head_dim,
                                value_dim,
                                causal,
                                key_bias,
                                subgroups,
                                emulated,
                                double_buffered,
                                mode,
                            };
                            if !double_buffered || double_buffer_applies(&key) {
                                keys.push(AttentionKernel::AttentionCoop(key));
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The cooperative attention's state on one device (`GpuContext::family_state`).
#[derive(Debug)]
pub(crate) struct AttentionCoopState {
    /// `ANYGRAD_COOP_ATTENTION` (on unless `off`), or `GpuDevice::set_cooperative_attention`.
    enabled: AtomicBool,
    /// Hardware kernels recorded, for `anygrad doctor` and the tests.
    dispatches: AtomicU64,
    /// Hardware key-value kernels recorded that summed the query gradient too
    /// (`attention/coop/backward/fold.rs`): backward calls without a query kernel.
    folds: AtomicU64,
    /// Why the device stopped using them (the driver refused one), if it did.
    failure: Mutex<Option<String>>,
}

impl AttentionCoopState {
    /// The state of `context`'s device, made from `ANYGRAD_COOP_ATTENTION` at first use.
    pub(crate) fn of(context: &GpuContext) -> Arc<AttentionCoopState> {
        context.family_state(|_| AttentionCoopState::from_env())
    }

    /// Whether the hardware attention kernels (`coop.rs`, `coop/backward.rs`) run on
    /// `context`'s device: cooperative matrices (`context.coop.available`), subgroup
    /// barriers, and no refusal or `ANYGRAD_COOP_ATTENTION=off`.
    pub(crate) fn usable(context: &GpuContext) -> bool {
        context.coop.available
            && context.coop.subgroup_barrier
            && AttentionCoopState::of(context).active()
    }

    /// The state of a freshly opened device: `ANYGRAD_COOP_ATTENTION=on` (default) or `off`.
    pub(crate) fn from_env() -> AttentionCoopState {
        let enabled = match std::env::var("ANYGRAD_COOP_ATTENTION")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            None | Some("") | Some("on") | Some("1") => true,
            Some("off") | Some("0") | Some("none") => false,
            Some(other) => {
                tracing::warn!("ANYGRAD_COOP_ATTENTION={other} is unknown (on|off); using on");
                true
            }
        };
        AttentionCoopState {
            enabled: AtomicBool::new(enabled),
            dispatches: AtomicU64::new(0),
            folds: AtomicU64::new(0),
            failure: Mutex::new(None),
        }
    }

    /// Enabled and not turned off by a failure.
    pub(crate) fn active(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) && self.failure().is_none()
    }

    /// Why the kernels were turned off, if they were.
    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stop using the cooperative kernels (forward and backward) after the driver refused one.
    pub(crate) fn disable(&self, error: &Error) {
        tracing::warn!("cooperative-matrix attention turned off: {error}");
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }

    /// Count one hardware key-value kernel that summed the query gradient (besides its
    /// [`AttentionCoopState::count_dispatch`]).
    pub(crate) fn count_fold(&self) {
        self.folds.fetch_add(1, Ordering::Relaxed);
    }

    /// Count one recorded hardware kernel.
    pub(crate) fn count_dispatch(&self) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
        #[cfg(test)]
        HARDWARE_RUNS.with(|runs| runs.set(runs.get() + 1));
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: take the emulated kernel (on any f16 device) instead of the hardware one.
    pub(crate) static EMULATE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: the last forward this thread recorded.
    pub(crate) static LAST_FORWARD: std::cell::Cell<Option<CoopForward>> =
        const { std::cell::Cell::new(None) };
    /// Tests: stage K and V in one buffer.
    pub(crate) static SINGLE_BUFFER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: stage K and V in two buffers wherever they fit, even where that takes more
    /// workgroup memory than one.
    pub(crate) static ANY_SIZE_DOUBLE: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
    /// Tests: run the uniform forward without its redo.
    pub(crate) static SKIP_REDO: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: emulated kernels recorded by this thread.
    pub(crate) static EMULATED_RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Tests: hardware kernels (forward and backward) recorded by this thread; the device's
    /// count also sees other tests' kernels (an emulated forward's backward runs the
    /// hardware kernels).
    pub(crate) static HARDWARE_RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Whether this thread's tests asked for the emulated kernel.
fn emulate() -> bool {
    #[cfg(test)]
    {
        EMULATE.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Whether the cooperative kernels take a head or value size: a multiple of 16 up to
/// [`MAX_WIDTH`].
pub(crate) fn width_ok(width: usize) -> bool {
    width > 0 && width.is_multiple_of(16) && width <= MAX_WIDTH
}

/// The cooperative forward for `shape` in `dtype` on `device`, or `None` where the scalar
/// kernel runs (the caller checked `attention::supports`).
pub(crate) fn forward_key(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
) -> Option<CoopForward> {
    let context = device.context();
    let emulated = emulate();
    let usable = if emulated {
        context.supports_f16()
    } else {
        AttentionCoopState::usable(context)
    };
    if !usable || dtype != DType::F16 || !width_ok(shape.head_dim) || !width_ok(shape.value_dim) {
        return None;
    }
    let limits = &context.limits;
    // Each layout with K and V in two buffers where that pays (`two_buffers_pay`), else in one.
    SUBGROUPS
        .into_iter()
        .filter(|&g| layout_takes(g, shape.head_dim, shape.value_dim))
        .flat_map(|subgroups| [(subgroups, true), (subgroups, false)])
        .filter(|&(_, double_buffered)| !(double_buffered && single_buffer()))
        .map(|(subgroups, double_buffered)| CoopForward {
            head_dim: shape.head_dim as u32,
            value_dim: shape.value_dim as u32,
            causal: shape.causal,
            key_bias: shape.key_bias_group.is_some(),
            subgroups,
            emulated,
            double_buffered,
            mode: ForwardMode::Uniform,
        })
        .filter(|key| !key.double_buffered || two_buffers_pay(key))
        .find(|key| {
            let blocks = shape.query_length.div_ceil(key.block_rows() as usize);
            launchable(limits, blocks, key.threads(), workgroup_bytes(key))
        })
}

/// Whether `blocks` workgroups (one grid dimension) of `threads` invocations using `bytes` of
/// workgroup memory each fit a device with `limits` (the forward's and the backward's layouts).
pub(crate) fn launchable(limits: &wgpu::Limits, blocks: usize, threads: u32, bytes: u32) -> bool {
    blocks <= limits.max_compute_workgroups_per_dimension as usize
        && threads <= limits.max_compute_invocations_per_workgroup
        && threads <= limits.max_compute_workgroup_size_x
        && bytes <= limits.max_compute_workgroup_storage_size
}

/// Whether the layout of `subgroups` subgroups takes these head and value sizes: eight stage a
/// 32-row key tile in whole vectors per invocation only for widths that are multiples of 64.
fn layout_takes(subgroups: u32, head_dim: usize, value_dim: usize) -> bool {
    subgroups != 8 || (head_dim.is_multiple_of(64) && value_dim.is_multiple_of(64))
}

/// The layouts in order of preference: eight subgroups (128 query rows: each key tile staged
/// for more rows), then four.
const SUBGROUPS: [u32; 2] = [8, 4];

/// Record the cooperative forward `key`; `Ok(false)` when the driver refused the hardware
/// kernel (the device then stops using it, and the caller runs the scalar kernel). A
/// `ForwardMode::Uniform` key runs the uniform kernel and then its redo
/// (`attention/coop/uniform.rs`) over the same bindings plus one flag a workgroup.
pub(crate) fn run_forward(
    device: &GpuDevice,
    key: CoopForward,
    params: &[u32],
    bindings: &[&wgpu::Buffer],
    shape: &AttentionShape,
) -> Result<bool> {
    let context = device.context();
    let grid = (
        shape.query_length.div_ceil(key.block_rows() as usize) as u32,
        shape.batch_heads as u32,
        1,
    );
    // The uniform kernel raises one flag a workgroup for its redo to read.
    let flags = match key.mode {
        ForwardMode::Uniform => {
            let count = grid.0 as usize * grid.1 as usize;
            Some(GpuStorage::allocate(
                device,
                "scaled_dot_product_attention",
                count,
                DType::U32,
            )?)
        }
        ForwardMode::Exact | ForwardMode::Redo => None,
    };
    let mut pass_bindings = bindings.to_vec();
    if let Some(flags) = &flags {
        pass_bindings.push(flags.raw()?);
    }
    let mut passes = vec![key];
    if key.mode == ForwardMode::Uniform && !skip_redo() {
        passes.push(CoopForward {
            mode: ForwardMode::Redo,
            ..key
        });
    }
    for pass in passes {
        match context.dispatch(
            &AttentionKernel::AttentionCoop(pass),
            params,
            &pass_bindings,
            grid,
        ) {
            Err(error @ Error::Shader { .. }) if !key.emulated => {
                AttentionCoopState::of(context).disable(&error);
                return Ok(false);
            }
            Err(error) => return Err(error),
            Ok(()) => {}
        }
    }
    #[cfg(test)]
    {
        if key.emulated {
            EMULATED_RUNS.with(|runs| runs.set(runs.get() + 1));
        }
        LAST_FORWARD.with(|last| last.set(Some(key)));
    }
    if !key.emulated {
        AttentionCoopState::of(context).count_dispatch();
    }
    Ok(true)
}

/// Whether `key`'s two K/V buffers pay: they apply (the next tile's loads stay in registers)
/// and take no more workgroup memory than one (with 32-key tiles, eight subgroups at d = 64,
/// the second filled the rest of Q's space; with 16-key tiles no layout has such room).
/// Where they would take more they do not: on the H200 the four-subgroup forward took 178.9
/// µs with two (32.7 KB) against 113.8 with one (23.5 KB), as fewer workgroups then share a
/// multiprocessor (docs/PERFORMANCE.md, 2026-12-04). Tests may ask for two
/// buffers at any size.
fn two_buffers_pay(key: &CoopForward) -> bool {
    let single = CoopForward {
        double_buffered: false,
        ..*key
    };
    double_buffer_applies(key)
        && (any_size_double() || workgroup_bytes(key) <= workgroup_bytes(&single))
}

/// Tests: whether this thread asked for two K/V buffers at any size.
fn any_size_double() -> bool {
    #[cfg(test)]
    {
        ANY_SIZE_DOUBLE.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Tests: whether this thread asked for K and V in one buffer.
fn single_buffer() -> bool {
    #[cfg(test)]
    {
        SINGLE_BUFFER.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// Tests: whether this thread asked to leave out the redo of the uniform forward (to show
/// what it repairs).
fn skip_redo() -> bool {
    #[cfg(test)]
    {
        SKIP_REDO.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

impl GpuDevice {
    /// Whether f16 fused attention forwards and backwards (head and value sizes multiples of
    /// 16 up to 128) run on cooperative matrices on this device: usable 16x16x16 f16 -> f32
    /// tensor cores (see [`GpuDevice::cooperative_matmul`]) with subgroup barriers,
    /// `ANYGRAD_COOP_ATTENTION` not `off`, and the driver built the kernels wherever it was
    /// asked to.
    pub fn cooperative_attention(&self) -> bool {
        AttentionCoopState::usable(self.context())
    }

    /// Whether f16 attention with these head and value sizes runs on cooperative matrices
    /// here ([`GpuDevice::cooperative_attention`] and sizes the kernels take).
    pub fn cooperative_attention_covers(&self, head_dim: usize, value_dim: usize) -> bool {
        self.cooperative_attention() && width_ok(head_dim) && width_ok(value_dim)
    }

    /// Use the cooperative-matrix attention kernels (`true`, the default) or the scalar ones,
    /// forward and backward, as `ANYGRAD_COOP_ATTENTION` does at start. No effect without
    /// tensor cores.
    pub fn set_cooperative_attention(&self, on: bool) {
        AttentionCoopState::of(self.context())
            .enabled
            .store(on, Ordering::Relaxed);
    }

    /// The error that made attention stop using cooperative matrices, if one did.
    pub fn cooperative_attention_failure(&self) -> Option<String> {
        AttentionCoopState::of(self.context()).failure()
    }

    /// Cooperative-matrix attention kernels recorded on this device so far.
    pub fn cooperative_attention_dispatches(&self) -> u64 {
        AttentionCoopState::of(self.context())
            .dispatches
            .load(Ordering::Relaxed)
    }

    /// Fused attention backward calls on this device whose cooperative key-value kernel also
    /// summed the query gradient (with float atomics), so that no query kernel ran: each
    /// counts one kernel in [`GpuDevice::cooperative_attention_dispatches`] where the other
    /// backward calls count two.
    pub fn cooperative_attention_folds(&self) -> u64 {
        AttentionCoopState::of(self.context())
            .folds
            .load(Ordering::Relaxed)
    }
}

#[cfg(test)]
pub(crate) mod tests;
