//! The fused attention backward on cooperative matrices (tensor cores), for f16: the key of its
//! two kernels ([`CoopBackward`], WGSL in `attention/coop/backward/source.rs`), which calls
//! they cover and their launch. `attention/`'s backward launcher runs the scalar delta
//! kernel, then tries these for the key-value and the query pass (each falls back to its
//! scalar kernel on its own): same bindings, parameters and outputs. Where the device adds
//! f32 atomically, the key-value kernel first tries to sum the query gradient itself
//! ([`run_folded`], `attention/coop/backward/fold.rs`), and the query pass does not run.
//!
//! They run where the cooperative forward runs (`attention/coop.rs`: usable 16x16x16
//! f16 x f16 -> f32 tensor cores, `ANYGRAD_COOP_ATTENTION` not `off`, no earlier refusal by
//! the driver), for F16 calls whose head and value sizes are multiples of 16 up to 128, when
//! the kernel's workgroup memory fits the device. A driver's refusal (`Error::Shader`) turns
//! the cooperative attention off on that device, forward included, and the scalar kernel runs.

pub(crate) mod fold;
pub(crate) mod layout;
pub(crate) mod source;

use crate::backend::gpu::attention::coop::backward::fold::{fold_applies, padded_rows};
use crate::backend::gpu::attention::coop::backward::layout::{eight_subgroups, workgroup_bytes};
pub(crate) use crate::backend::gpu::attention::coop::backward::source::{
    CoopBackward, CoopBackwardPass,
};
use crate::backend::gpu::attention::coop::{launchable, width_ok, AttentionCoopState};
use crate::backend::gpu::attention::kernel::AttentionKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::AttentionShape;
use crate::layout::Layout;

impl CoopBackward {
    /// The complete WGSL source (`enable` lines included).
    pub(crate) fn source(&self) -> String {
        format!(
            "enable f16;\n{}",
            crate::backend::gpu::attention::coop::backward::source::backward_source(self)
        )
    }
}

/// The catalogue entries (`kernel_catalog.rs`): both passes, the common head sizes, both
/// flags, both layouts, real and emulated.
pub(crate) fn catalogue(keys: &mut Vec<AttentionKernel>) {
    for pass in [CoopBackwardPass::KeyValue, CoopBackwardPass::Query] {
        for (head_dim, value_dim) in [(16, 16), (32, 32), (64, 64), (128, 128), (48, 80)] {
            // A mask and the causal flag never come together (the op refuses both).
            for (causal, key_bias) in [(false, false), (true, false), (false, true)] {
                for subgroups in [8].into_iter().chain(SUBGROUPS) {
                    let hardware = CoopBackward {
                        pass,
                        head_dim,
                        value_dim,
                        causal,
                        key_bias,
                        subgroups,
                        emulated: false,
                        fold_query: false,
                    };
                    if subgroups == 8 && !eight_subgroups(&hardware) {
                        continue;
                    }
                    let folds = pass == CoopBackwardPass::KeyValue
                        && fold_applies(head_dim, subgroups, causal);
                    for emulated in [false, true] {
                        if emulated && subgroups == 8 {
                            continue;
                        }
                        for fold_query in [false, true] {
                            if fold_query && !folds {
                                continue;
                            }
                            keys.push(AttentionKernel::AttentionCoopBackward(CoopBackward {
                                emulated,
                                fold_query,
                                ..hardware
                            }));
                        }
                    }
                }
            }
        }
    }
}

/// The layouts after the eight-subgroup kernels (`eight_subgroups`, tried first on tensor
/// cores), in order of preference: four subgroups (64 owned rows:
/// each tile staged for more rows), then two.
const SUBGROUPS: [u32; 2] = [4, 2];

#[cfg(test)]
use std::cell::Cell;

#[cfg(test)]
thread_local! {
    /// Tests: take the emulated backward kernels (on any f16 device) instead of the hardware
    /// ones (the forward has its own switch, `attention_coop::EMULATE`).
    pub(crate) static EMULATE_BACKWARD: Cell<bool> = const { Cell::new(false) };
    /// Tests: emulated backward kernels recorded by this thread (one per pass; one in all
    /// where the key-value kernel sums the query gradient).
    pub(crate) static EMULATED_BACKWARD_RUNS: Cell<u64> = const { Cell::new(0) };
    /// Tests: run the query kernel even where the key-value kernel could sum dQ.
    pub(crate) static NO_FOLD: Cell<bool> = const { Cell::new(false) };
    /// Tests: key-value kernels recorded by this thread that summed dQ (hardware or emulated).
    pub(crate) static FOLDED_RUNS: Cell<u64> = const { Cell::new(0) };
}

/// Whether the separate query kernel runs even where the key-value kernel could sum dQ:
/// deterministic algorithms are required (`determinism.rs`: the sum by float atomics is in
/// arrival order, so dQ may differ in its last bits from run to run; the query kernel's is
/// the same every run), or this thread's tests asked for it.
fn fold_refused() -> bool {
    let deterministic = crate::determinism::are_deterministic_algorithms_enabled();
    #[cfg(test)]
    let deterministic = deterministic || NO_FOLD.with(std::cell::Cell::get);
    deterministic
}

/// Whether this thread's tests asked for the emulated kernels.
fn emulate() -> bool {
    #[cfg(test)]
    {
        EMULATE_BACKWARD.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// The cooperative kernel of `pass` for `shape` in `dtype` on `device` (the eight-subgroup
/// key-value kernel where it applies and fits, else four subgroups where their workgroup
/// memory fits, else two), or `None` where the scalar kernel runs (the caller checked
/// `attention::supports`).
pub(crate) fn backward_key(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
    pass: CoopBackwardPass,
) -> Option<CoopBackward> {
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
    [8].into_iter()
        .chain(SUBGROUPS)
        .map(|subgroups| CoopBackward {
            pass,
            head_dim: shape.head_dim as u32,
            value_dim: shape.value_dim as u32,
            causal: shape.causal,
            key_bias: shape.key_bias_group.is_some(),
            subgroups,
            emulated,
            fold_query: false,
        })
        .filter(|key| key.subgroups != 8 || eight_subgroups(key))
        .find(|key| {
            let blocks = own_length(shape, pass).div_ceil(key.block_rows() as usize);
            launchable(limits, blocks, key.threads(), workgroup_bytes(key))
        })
}

/// Where the key-value kernel sums the query gradient itself (`attention/coop/backward/fold.rs`): its
/// key and the length of its f32 sums.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FoldPlan {
    key: CoopBackward,
    /// Floats of the sums: [`padded_rows`] rows of `head_dim` a batch-head.
    pub(crate) sums_numel: usize,
}

/// The fold of `shape` in `dtype` on `device`: where the device adds f32 atomically, the
/// chosen key-value layout shares the fold out evenly, deterministic algorithms are not
/// required and the sums fit one binding (twice the f16 query's bytes); `None` elsewhere (the
/// key-value and the query kernels then run).
pub(crate) fn fold_plan(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
) -> Option<FoldPlan> {
    let atomics = device
        .context()
        .features
        .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC);
    if !atomics || fold_refused() {
        return None;
    }
    let key = backward_key(device, dtype, shape, CoopBackwardPass::KeyValue)
        .filter(|key| fold_applies(key.head_dim, key.subgroups, key.causal))?;
    // Whole tiles of rows a batch-head (`attention/coop/backward/fold.rs`); the cast reads the rows
    // up to the length.
    let sums_numel = shape.batch_heads * padded_rows(shape.query_length) * shape.head_dim;
    if GpuStorage::exceeds_binding(device, sums_numel, DType::F32) {
        return None;
    }
    Some(FoldPlan {
        key: CoopBackward {
            fold_query: true,
            ..key
        },
        sums_numel,
    })
}

/// The key-value kernel that also sums the query gradient, as `plan` says: records the
/// kernel (same `params` and `bindings` as the key-value kernel, the f32 `sums` after them,
/// which the delta pass zeroed: `AttentionPass::DeltaZeroing`) and the cast of the sums to
/// `dtype`, and returns the query's gradient. `Ok(None)` where the driver refused the
/// kernel: the caller then runs the key-value and the query passes.
pub(crate) fn run_folded(
    device: &GpuDevice,
    dtype: DType,
    shape: &AttentionShape,
    plan: FoldPlan,
    sums: GpuStorage,
    params: &[u32],
    bindings: &[&wgpu::Buffer],
) -> Result<Option<GpuStorage>> {
    let key = plan.key;
    let mut all = bindings.to_vec();
    all.push(sums.raw()?);
    if !run_backward(device, key, params, &all, shape)? {
        return Ok(None);
    }
    if !key.emulated {
        AttentionCoopState::of(device.context()).count_fold();
    }
    #[cfg(test)]
    FOLDED_RUNS.with(|runs| runs.set(runs.get() + 1));
    let rows = padded_rows(shape.query_length);
    let rows_of_heads = Layout {
        shape: vec![shape.batch_heads, shape.query_length, shape.head_dim],
        strides: vec![rows * shape.head_dim, shape.head_dim, 1],
        offset: 0,
    };
    Ok(Some(sums.cast(&rows_of_heads, dtype)?))
}

/// Rows per batch-head of the side whose gradient `pass` writes (keys or queries).
fn own_length(shape: &AttentionShape, pass: CoopBackwardPass) -> usize {
    match pass {
        CoopBackwardPass::KeyValue => shape.key_length,
        CoopBackwardPass::Query => shape.query_length,
    }
}

/// Record the cooperative backward kernel `key`; `Ok(false)` when the driver refused the
/// hardware kernel (the device then stops using cooperative attention, and the caller runs the
/// scalar kernel of the pass).
pub(crate) fn run_backward(
    device: &GpuDevice,
    key: CoopBackward,
    params: &[u32],
    bindings: &[&wgpu::Buffer],
    shape: &AttentionShape,
) -> Result<bool> {
    let context = device.context();
    let grid = (
        own_length(shape, key.pass).div_ceil(key.block_rows() as usize) as u32,
        shape.batch_heads as u32,
        1,
    );
    let state = AttentionCoopState::of(context);
    match context.dispatch(
        &AttentionKernel::AttentionCoopBackward(key),
        params,
        bindings,
        grid,
    ) {
        Err(error @ Error::Shader { .. }) if !key.emulated => {
            state.disable(&error);
            Ok(false)
        }
        Err(error) => Err(error),
        Ok(()) => {
            #[cfg(test)]
            if key.emulated {
                EMULATED_BACKWARD_RUNS.with(|runs| runs.set(runs.get() + 1));
            }
            if !key.emulated {
                state.count_dispatch();
            }
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests;
