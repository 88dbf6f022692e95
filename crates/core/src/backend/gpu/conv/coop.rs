//! The f16 convolutions on cooperative matrices (tensor cores): conv2d forward and both
//! gradients as implicit GEMMs whose operands are gathered, as f16, into workgroup memory and
//! multiplied by `coop_mat16x16<f16>` fragments into f32 accumulators (`coopMultiplyAdd`).
//! They run where the f16 matmul's tensor cores run (`matmul/coop.rs`: the adapter reports a
//! 16x16x16 f16 x f16 -> f32 configuration, subgroups of 32), for F16 convolutions (autocast),
//! when `ANYGRAD_COOP_CONV=on`; everywhere else the regular kernels (`conv/direct.rs`,
//! `conv/backward.rs`) run. Off by default: on the H200 (2026-11-30) they matched the CPU
//! everywhere but ResNet-18 autocast ran slower with them (inference b64 3,029 vs 3,608
//! images/s, training 721 vs 766): the scalar gathers, not the tensor cores, bound them.
//!
//! The three GEMMs ([`ConvPass`]), with `r = (channel, ki, kj)` a tap and a column a pixel:
//! - **forward**: M = o, N = n * oh * ow, K = c * kh * kw; A the weight as a dense `[o, K]`,
//!   B[r, column] the input pixel that window `column` sees at tap `r` (zero in the padding);
//!   result `[n, o, oh, ow]` in f16.
//! - **input gradient** (the transposed convolution): M = c, N = n * h * w, K = o * kh * kw;
//!   A the weight transposed to a dense `[c, K]`, B[(o, ki, kj), (ni, y, x)] =
//!   `g[ni, o, oy, ox]` where `oy = (y + pad - ki * dil) / stride` is exact and in range.
//!   Each column's `y + pad` is split once per tile into quotient and remainder by the stride,
//!   each tap's `ki * dil` likewise while the taps are walked: the division is exact when the
//!   remainders agree, and `oy` is the difference of the quotients. Result `[n, c, h, w]` f16.
//! - **weight gradient**: M = o, N = c * kh * kw, K = n * oh * ow; A[o, pixel] = `g` (gathered
//!   through its strides), B[pixel, r] the input window. K is split over `workgroup.z`; every
//!   split writes its f32 partial sums and `Conv2dSplitSum` adds them in a fixed order
//!   (deterministic) into the f16 result.
//!
//! Tiles ([`ConvCoopTile`]): a workgroup of four subgroups (128 invocations) computes a
//! 128 x 128 (square) or 64 x 256 (wide, for M <= 64: ResNet's 64-channel layers) output tile;
//! each subgroup owns 64 x 64 as 4 x 4 f32 accumulators, as the f16 matmul's staged kernels
//! (measured best there). K is walked in blocks of 32 (16 where the workgroup memory is
//! smaller than 48 KiB, [`KBlock`]); A's block `[rows][kb + 8]` and B's `[kb][columns + 8]`
//! live twice in workgroup memory (ping-pong): the next block's gathers are issued into
//! registers before the current block is multiplied out, one barrier per block.
//!
//! The gathers: every invocation owns one (square) or two (wide) columns of B and loads all
//! `kb` rows of them; the tap (resp. pixel, for the weight gradient) that row `kk` of a block
//! stands for is the same for the whole workgroup, so it is walked incrementally (no
//! division) by uniform code, and a gathered element costs two adds, two compares and one
//! load. A's loaders read `kb` consecutive k of a row per 32 invocations (coalesced). Every
//! load is bounds-checked (the index is replaced by 0 and the value by zero outside), so any
//! sizes and strides work and the kernels run without wgpu's runtime checks.
//!
//! Epilogue: WGSL cannot convert a cooperative matrix, so each accumulator goes through a
//! per-subgroup 16 x 16 f32 scratch tile (`coopStoreT`, literal stride: the naga 30 pitfalls
//! of `matmul/coop.rs`); invocation `lane` then writes column `lane % 16`, rows
//! `(lane / 16) * 8 + 0..8` (16 consecutive pixels of a channel per store). The forward may
//! carry the convolution epilogue there (`conv/epilogue.rs`: scale, shift, residual and
//! activation per stored value; its bindings from 4): a fused 1x1 convolution (ResNet's
//! shortcuts) is a tuning candidate on tensor cores by default (`conv/tuning.rs`).
//!
//! Parameters: one [`ConvCoopParams`] (`#[repr(C)]`, the WGSL struct generated from the same
//! field list). `emulated` keys spell the cooperative-matrix operations in plain WGSL
//! (`matmul/coop.rs`'s emulation), so tests check the gathers, staging and epilogue on any f16
//! device.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::gpu::conv::epilogue::ConvEpilogueKey;
use crate::backend::gpu::runtime::context::GpuContext;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::kernel_params;

mod launch;
mod source;

pub(crate) use launch::{dispatch_counted, key_for, CoopMode};

#[cfg(test)]
mod tests;

/// Which convolution GEMM a kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvPass {
    /// conv2d: `[n, c, h, w]` x `[o, c, kh, kw]` -> `[n, o, oh, ow]`.
    Forward,
    /// The input gradient (transposed convolution of the output gradient).
    BackwardInput,
    /// The weight gradient (f32 partial sums per split of K).
    BackwardWeight,
}

/// The output tile of one workgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConvCoopTile {
    /// 128 rows x 128 columns (subgroups in 2 x 2).
    Square,
    /// 64 rows x 256 columns (subgroups in 1 x 4), for M <= 64.
    Wide,
}

impl ConvCoopTile {
    /// Rows (M) of the tile.
    pub fn rows(self) -> usize {
        match self {
            ConvCoopTile::Square => 128,
            ConvCoopTile::Wide => 64,
        }
    }

    /// Columns (N) of the tile (four subgroups of 64 x 64).
    pub fn columns(self) -> usize {
        4 * 64 * 64 / self.rows()
    }

    /// The tile for M rows: wide when one 64-row tile covers them.
    pub fn for_rows(m: usize) -> ConvCoopTile {
        if m <= 64 {
            ConvCoopTile::Wide
        } else {
            ConvCoopTile::Square
        }
    }
}

/// The k-block (K rows staged per barrier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KBlock {
    /// 16 k per block (fits 32 KiB of workgroup memory).
    Sixteen,
    /// 32 k per block (needs up to 47 KiB; half the barriers).
    ThirtyTwo,
}

impl KBlock {
    /// k per block.
    pub fn size(self) -> usize {
        match self {
            KBlock::Sixteen => 16,
            KBlock::ThirtyTwo => 32,
        }
    }
}

/// One cooperative-matrix convolution kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvCoopKey {
    /// Which GEMM.
    pub pass: ConvPass,
    /// The output tile.
    pub tile: ConvCoopTile,
    /// The k-block.
    pub k_block: KBlock,
    /// Plain-WGSL emulation of the matrix operations (tests on any f16 device).
    pub emulated: bool,
    /// The forward's epilogue in its store (`conv/epilogue.rs`; `None` for the gradients).
    pub epilogue: Option<ConvEpilogueKey>,
}

impl ConvCoopKey {
    /// Every instantiation (the naga catalogue): each pass, tile, k-block and form, and the
    /// forward with every epilogue.
    pub fn all() -> Vec<ConvCoopKey> {
        let mut keys = Vec::new();
        for pass in [
            ConvPass::Forward,
            ConvPass::BackwardInput,
            ConvPass::BackwardWeight,
        ] {
            let mut epilogues = vec![None];
            if pass == ConvPass::Forward {
                epilogues.extend(ConvEpilogueKey::all().into_iter().map(Some));
            }
            for tile in [ConvCoopTile::Square, ConvCoopTile::Wide] {
                for k_block in [KBlock::Sixteen, KBlock::ThirtyTwo] {
                    for emulated in [false, true] {
                        for &epilogue in &epilogues {
                            keys.push(ConvCoopKey {
                                pass,
                                tile,
                                k_block,
                                emulated,
                                epilogue,
                            });
                        }
                    }
                }
            }
        }
        keys
    }

    /// Halves per row of A's staged block (the k-block plus 8 halves of padding: 16-byte
    /// rows whose eight-row fragment loads fall on different banks).
    fn a_row(self) -> usize {
        self.k_block.size() + 8
    }

    /// Halves per row of B's staged block (the tile's columns plus 8).
    fn b_row(self) -> usize {
        self.tile.columns() + 8
    }

    /// Halves of one copy of A's and of B's block.
    fn blocks(self) -> (usize, usize) {
        (
            self.tile.rows() * self.a_row(),
            self.k_block.size() * self.b_row(),
        )
    }

    /// Bytes of workgroup memory one workgroup uses (two copies of both blocks, and four
    /// 16 x 16 f32 scratch tiles).
    pub fn workgroup_bytes(self) -> u32 {
        let (a, b) = self.blocks();
        (2 * (a + b) * 2 + 4 * 256 * 4) as u32
    }

    /// The complete WGSL source.
    pub fn source(self) -> String {
        source::source(self)
    }
}

kernel_params! {
    /// The parameters of every cooperative-matrix convolution kernel (binding 0).
    struct ConvCoopParams {
        /// GEMM rows M.
        m: u32,
        /// GEMM columns N.
        n: u32,
        /// GEMM depth K.
        k: u32,
        /// Column tiles (N / tile columns, rounded up).
        column_tiles: u32,
        /// K per split (K itself unless the weight gradient is split).
        k_chunk: u32,
        /// Epilogue: a column is `(column / plane, column % plane)`...
        plane: u32,
        /// ... stored at `(column / plane) * image_stride + column % plane`...
        image_stride: u32,
        /// ... plus `row * row_stride`...
        row_stride: u32,
        /// ... plus `split * split_stride`.
        split_stride: u32,
        /// Kernel rows kh.
        kernel_h: u32,
        /// Kernel columns kw.
        kernel_w: u32,
        /// Stride (rows).
        stride_h: u32,
        /// Stride (columns).
        stride_w: u32,
        /// Padding (rows).
        pad_h: u32,
        /// Padding (columns).
        pad_w: u32,
        /// Dilation (rows).
        dilation_h: u32,
        /// Dilation (columns).
        dilation_w: u32,
        /// A's offset (dense: `[M, K]` from here; weight gradient: `g`'s view offset).
        a_offset: u32,
        /// `g`'s image stride (weight gradient).
        a_stride_n: u32,
        /// A's row stride (dense: K; weight gradient: `g`'s channel stride).
        a_stride_c: u32,
        /// `g`'s row stride (weight gradient).
        a_stride_h: u32,
        /// `g`'s column stride (weight gradient).
        a_stride_w: u32,
        /// The gathered B tensor's offset (input; input gradient: `g`).
        b_offset: u32,
        /// Its image stride.
        b_stride_n: u32,
        /// Its channel stride.
        b_stride_c: u32,
        /// Its row stride.
        b_stride_h: u32,
        /// Its column stride.
        b_stride_w: u32,
        /// Its height.
        b_height: u32,
        /// Its width.
        b_width: u32,
        /// Rows of the pixel grid the columns (resp. the weight gradient's K) walk: oh (forward,
        /// weight gradient) or h (input gradient).
        grid_h: u32,
        /// Its columns: ow or w.
        grid_w: u32,
    }
}

/// The cooperative-matrix convolutions' state on one device (`GpuContext::family_state`).
#[derive(Debug)]
pub(crate) struct ConvCoopState {
    /// `ANYGRAD_COOP_CONV=on`, or `GpuDevice::set_cooperative_conv`.
    enabled: std::sync::atomic::AtomicBool,
    /// The channels-last forward kernels (`conv/nhwc.rs`) may run: unless
    /// `ANYGRAD_COOP_CONV=off`.
    channels_last: bool,
    /// Hardware kernels recorded, for `anygrad doctor` and the tests.
    dispatches: AtomicU64,
    /// Why the device stopped using them (the driver refused one), if it did.
    failure: Mutex<Option<String>>,
}

impl ConvCoopState {
    /// The state of `context`'s device, made from `ANYGRAD_COOP_CONV` at first use.
    pub(crate) fn of(context: &GpuContext) -> Arc<ConvCoopState> {
        context.family_state(|_| ConvCoopState::from_env())
    }

    /// The state of a freshly opened device under `ANYGRAD_COOP_CONV`: `auto` (the default)
    /// offers the channels-last forward kernels (`conv/nhwc.rs`) to the autotuner, `on` these
    /// kernels too (off by default: on the H200 they measured slower than the regular
    /// kernels, see the module documentation), `off` no tensor-core convolution.
    pub(crate) fn from_env() -> ConvCoopState {
        let (enabled, channels_last) = match std::env::var("ANYGRAD_COOP_CONV")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            Some("on") | Some("1") => (true, true),
            None | Some("") | Some("auto") => (false, true),
            Some("off") | Some("0") | Some("none") => (false, false),
            Some(other) => {
                tracing::warn!("ANYGRAD_COOP_CONV={other} is unknown (auto|on|off); using auto");
                (false, true)
            }
        };
        ConvCoopState {
            enabled: std::sync::atomic::AtomicBool::new(enabled),
            channels_last,
            dispatches: AtomicU64::new(0),
            failure: Mutex::new(None),
        }
    }

    /// The channels-last kernels may run (not switched off, no failure).
    pub(crate) fn channels_last_active(&self) -> bool {
        self.channels_last && self.failure().is_none()
    }

    /// Enabled and not turned off by a failure.
    pub(crate) fn active(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) && self.failure().is_none()
    }

    /// Why the kernels were turned off, if they were.
    pub(crate) fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stop using the kernels on this device.
    pub(crate) fn disable(&self, error: &crate::error::Error) {
        tracing::warn!("cooperative-matrix convolutions turned off: {error}");
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
    }

    /// Count one recorded hardware kernel.
    pub(crate) fn count(&self) {
        self.dispatches.fetch_add(1, Ordering::Relaxed);
    }
}

impl GpuDevice {
    /// Whether F16 convolutions (forward and both gradients) run on cooperative matrices on
    /// this device: it has usable 16x16x16 f16 -> f32 tensor cores (see
    /// [`GpuDevice::cooperative_matmul`]), `ANYGRAD_COOP_CONV=on`, and the driver
    /// built every kernel asked for so far.
    pub fn cooperative_conv(&self) -> bool {
        self.context().coop.available && ConvCoopState::of(self.context()).active()
    }

    /// Whether f16 convolutions may run on the channels-last tensor-core kernels on this
    /// device (`conv/nhwc.rs`: the forward, the weight gradient and stride-1 input gradients
    /// are then the autotuner's candidates): usable 16x16x16 f16 -> f32 tensor cores,
    /// `ANYGRAD_COOP_CONV` not `off`, and no kernel refused by the driver.
    pub fn channels_last_conv(&self) -> bool {
        self.context().coop.available && ConvCoopState::of(self.context()).channels_last_active()
    }

    /// Make the cooperative-matrix convolutions the default choice (`true`) or not, as
    /// `ANYGRAD_COOP_CONV` does at start; the autotuner, when on, still times them against the
    /// regular kernels. No effect where the adapter has no cooperative matrices.
    pub fn set_cooperative_conv(&self, on: bool) {
        ConvCoopState::of(self.context())
            .enabled
            .store(on, Ordering::Relaxed);
    }

    /// The error that made the convolutions stop using cooperative matrices, if one did.
    pub fn cooperative_conv_failure(&self) -> Option<String> {
        ConvCoopState::of(self.context()).failure()
    }

    /// Cooperative-matrix convolution kernels recorded on this device so far.
    pub fn cooperative_conv_dispatches(&self) -> u64 {
        ConvCoopState::of(self.context())
            .dispatches
            .load(Ordering::Relaxed)
    }
}
