//! The f16 convolutions on cooperative matrices (tensor cores): conv2d forward and both
//! gradients as implicit GEMMs whose operands are gathered, as f16, into workgroup memory and
//! multiplied by `coop_mat16x16<f16>` fragments into f32 accumulators (`coopMultiplyAdd`).
//! They run where the f16 matmul's tensor cores run (`matmul_coop.rs`: the adapter reports a
//! 16x16x16 f16 x f16 -> f32 configuration, subgroups of 32), for F16 convolutions (autocast),
//! when `ANYGRAD_COOP_CONV=on`; everywhere else the regular kernels (`conv.rs`,
//! `conv_backward.rs`) run. Off by default: on the H200 (2026-11-30) they matched the CPU
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
//! of `matmul_coop.rs`); invocation `lane` then writes column `lane % 16`, rows
//! `(lane / 16) * 8 + 0..8` (16 consecutive pixels of a channel per store).
//!
//! Parameters: one [`ConvCoopParams`] (`#[repr(C)]`, the WGSL struct generated from the same
//! field list). `emulated` keys spell the cooperative-matrix operations in plain WGSL
//! (`matmul_coop.rs`'s emulation), so tests check the gathers, staging and epilogue on any f16
//! device.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::matmul_coop::Coop;
use super::GpuDevice;

mod launch;

pub(crate) use launch::CoopMode;

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
}

impl ConvCoopKey {
    /// Every instantiation (the naga catalogue).
    pub fn all() -> Vec<ConvCoopKey> {
        let mut keys = Vec::new();
        for pass in [
            ConvPass::Forward,
            ConvPass::BackwardInput,
            ConvPass::BackwardWeight,
        ] {
            for tile in [ConvCoopTile::Square, ConvCoopTile::Wide] {
                for k_block in [KBlock::Sixteen, KBlock::ThirtyTwo] {
                    for emulated in [false, true] {
                        keys.push(ConvCoopKey {
                            pass,
                            tile,
                            k_block,
                            emulated,
                        });
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
        source(self)
    }
}

/// Declares a `#[repr(C)]` parameter struct of `u32` fields and the WGSL text of the same
/// struct, from one field list (so the two cannot drift apart).
macro_rules! wgsl_params {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident),* $(,)? }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
        pub(crate) struct $name {
            $($(#[$field_meta])* pub(crate) $field: u32,)*
        }

        impl $name {
            /// The WGSL declaration of this struct.
            pub(crate) const WGSL: &'static str = concat!(
                "struct ", stringify!($name), " {\n",
                $("    ", stringify!($field), ": u32,\n",)*
                "}\n"
            );
        }
    };
}

wgsl_params! {
    /// The parameters of every cooperative-matrix convolution kernel (binding 0).
    ConvCoopParams {
        /// GEMM rows M.
        m,
        /// GEMM columns N.
        n,
        /// GEMM depth K.
        k,
        /// Column tiles (N / tile columns, rounded up).
        column_tiles,
        /// K per split (K itself unless the weight gradient is split).
        k_chunk,
        /// Epilogue: a column is `(column / plane, column % plane)`...
        plane,
        /// ... stored at `(column / plane) * image_stride + column % plane`...
        image_stride,
        /// ... plus `row * row_stride`...
        row_stride,
        /// ... plus `split * split_stride`.
        split_stride,
        /// Kernel rows kh.
        kernel_h,
        /// Kernel columns kw.
        kernel_w,
        /// Stride (rows).
        stride_h,
        /// Stride (columns).
        stride_w,
        /// Padding (rows).
        pad_h,
        /// Padding (columns).
        pad_w,
        /// Dilation (rows).
        dilation_h,
        /// Dilation (columns).
        dilation_w,
        /// A's offset (dense: `[M, K]` from here; weight gradient: `g`'s view offset).
        a_offset,
        /// `g`'s image stride (weight gradient).
        a_stride_n,
        /// A's row stride (dense: K; weight gradient: `g`'s channel stride).
        a_stride_c,
        /// `g`'s row stride (weight gradient).
        a_stride_h,
        /// `g`'s column stride (weight gradient).
        a_stride_w,
        /// The gathered B tensor's offset (input; input gradient: `g`).
        b_offset,
        /// Its image stride.
        b_stride_n,
        /// Its channel stride.
        b_stride_c,
        /// Its row stride.
        b_stride_h,
        /// Its column stride.
        b_stride_w,
        /// Its height.
        b_height,
        /// Its width.
        b_width,
        /// Rows of the pixel grid the columns (resp. the weight gradient's K) walk: oh (forward,
        /// weight gradient) or h (input gradient).
        grid_h,
        /// Its columns: ow or w.
        grid_w,
    }
}

/// The cooperative-matrix convolutions' state on one device (a field of `CoopSupport`).
#[derive(Debug)]
pub(crate) struct ConvCoopState {
    /// `ANYGRAD_COOP_CONV=on`.
    enabled: bool,
    /// Hardware kernels recorded, for `anygrad doctor` and the tests.
    dispatches: AtomicU64,
    /// Why the device stopped using them (the driver refused one), if it did.
    failure: Mutex<Option<String>>,
}

impl ConvCoopState {
    /// The state of a freshly opened device: enabled by `ANYGRAD_COOP_CONV=on` (off by
    /// default: on the H200 they measured slower than the regular kernels, see the module
    /// documentation).
    pub(crate) fn from_env() -> ConvCoopState {
        let enabled = match std::env::var("ANYGRAD_COOP_CONV")
            .ok()
            .as_deref()
            .map(str::trim)
        {
            Some("on") | Some("1") => true,
            None | Some("") | Some("off") | Some("0") | Some("none") => false,
            Some(other) => {
                tracing::warn!("ANYGRAD_COOP_CONV={other} is unknown (on|off); using off");
                false
            }
        };
        ConvCoopState {
            enabled,
            dispatches: AtomicU64::new(0),
            failure: Mutex::new(None),
        }
    }

    /// Enabled and not turned off by a failure.
    pub(crate) fn active(&self) -> bool {
        self.enabled && self.failure().is_none()
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
        let coop = &self.context().coop;
        coop.available && coop.conv.active()
    }

    /// The error that made the convolutions stop using cooperative matrices, if one did.
    pub fn cooperative_conv_failure(&self) -> Option<String> {
        self.context().coop.conv.failure()
    }

    /// Cooperative-matrix convolution kernels recorded on this device so far.
    pub fn cooperative_conv_dispatches(&self) -> u64 {
        self.context().coop.conv.dispatches.load(Ordering::Relaxed)
    }
}

/// The lines of one generated kernel (`write!` into a String cannot fail: results ignored).
struct Writer {
    text: String,
}

impl Writer {
    fn line(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.text, "{:indent$}{line}", "", indent = indent * 4);
    }
}

/// The kernel's WGSL source.
fn source(key: ConvCoopKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let kb = key.k_block.size();
    let (rows, columns) = (key.tile.rows(), key.tile.columns());
    let (a_row, b_row) = (key.a_row(), key.b_row());
    let (a_block, b_block) = key.blocks();
    // Subgroups per tile row (2 square, 4 wide); B columns per invocation; A values per
    // invocation per block and the rows between them.
    let subgroup_columns = columns / 64;
    let column_sets = columns / 128;
    let a_loads = rows * kb / 128;
    let a_row_step = 128 / kb;
    let output = match key.pass {
        ConvPass::BackwardWeight => "f32",
        ConvPass::Forward | ConvPass::BackwardInput => "f16",
    };
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    w.text.push_str(ConvCoopParams::WGSL);
    let _ = write!(
        w.text,
        "@group(0) @binding(0) var<storage, read> params: ConvCoopParams;
@group(0) @binding(1) var<storage, read> source_a: array<f16>;
@group(0) @binding(2) var<storage, read> source_b: array<f16>;
@group(0) @binding(3) var<storage, read_write> result: array<{output}>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 1024>;
// Two copies (ping-pong) of A's block [{rows} rows][{a_row}] and B's [{kb} k][{b_row}].
var<workgroup> tile_a: array<f16, {}>;
var<workgroup> tile_b: array<f16, {}>;
",
        2 * a_block,
        2 * b_block
    );
    if key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    let _ = write!(
        w.text,
        "
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
        coop.subgroup_builtins()
    );
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    for field in [
        "m",
        "n",
        "k",
        "plane",
        "kernel_h",
        "kernel_w",
        "stride_h",
        "stride_w",
        "pad_h",
        "pad_w",
        "dilation_h",
        "dilation_w",
        "b_height",
        "b_width",
        "grid_h",
        "grid_w",
    ] {
        w.line(1, &format!("let {field} = params.{field};"));
    }
    w.line(1, "let taps = kernel_h * kernel_w;");
    w.line(1, &format!("let row0 = workgroup.y * {rows}u;"));
    w.line(
        1,
        &format!("let sub_row = (subgroup / {subgroup_columns}u) * 64u;"),
    );
    w.line(
        1,
        &format!("let sub_column = (subgroup % {subgroup_columns}u) * 64u;"),
    );
    w.line(1, &format!("let a_fragment = sub_row * {a_row}u;"));
    w.line(1, "let scratch_at = subgroup * 256u;");
    w.line(
        1,
        "// This invocation's scratch values in the epilogue: column lane % 16, rows (lane / 16) * 8 + 0..8.",
    );
    w.line(
        1,
        "let scratch_read = scratch_at + (lane / 16u) * 128u + lane % 16u;",
    );
    w.line(1, "let lane_row = row0 + sub_row + (lane / 16u) * 8u;");
    w.line(
        1,
        "// This workgroup's part of K (the weight gradient's split).",
    );
    w.line(1, "let k_first = workgroup.z * params.k_chunk;");
    w.line(1, "let k_end = min(k, k_first + params.k_chunk);");
    w.line(
        1,
        &format!("let steps = (k_end - k_first + {}u) / {kb}u;", kb - 1),
    );
    w.line(1, "let split_base = workgroup.z * params.split_stride;");
    w.line(
        1,
        &format!("// A's loader: k `local % {kb}`, rows `local / {kb} + {a_row_step} p` (p = 0..{a_loads})."),
    );
    w.line(1, &format!("let a_column = local % {kb}u;"));
    w.line(1, &format!("let a_row_first = row0 + local / {kb}u;"));
    w.line(1, "let a_rows_left = m - min(m, a_row_first);");
    w.line(1, "let a_rows_base = a_row_first * params.a_stride_c;");
    w.line(
        1,
        &format!("let a_row_step = {a_row_step}u * params.a_stride_c;"),
    );
    w.line(
        1,
        &format!("let a_store = (local / {kb}u) * {a_row}u + a_column;"),
    );
    // Pass-wide constants of the walks.
    match key.pass {
        ConvPass::Forward => {
            w.line(1, "let dilation_shift_h = dilation_h * params.b_stride_h;");
            w.line(1, "let dilation_shift_w = dilation_w * params.b_stride_w;");
            w.line(1, "// Shift corrections when kj resp. ki wraps around.");
            w.line(
                1,
                "let wrap_j = dilation_shift_h - kernel_w * dilation_shift_w;",
            );
            w.line(
                1,
                "let wrap_i = params.b_stride_c - kernel_h * dilation_shift_h;",
            );
        }
        ConvPass::BackwardInput => {
            w.line(
                1,
                "// One tap step (dilation) as quotient and remainder by the stride.",
            );
            w.line(1, "let dilation_q_h = dilation_h / stride_h;");
            w.line(1, "let dilation_r_h = dilation_h % stride_h;");
            w.line(1, "let dilation_q_w = dilation_w / stride_w;");
            w.line(1, "let dilation_r_w = dilation_w % stride_w;");
        }
        ConvPass::BackwardWeight => {
            w.line(1, "let grid_plane = grid_h * grid_w;");
            w.line(1, "let walk_step_w = stride_w * params.b_stride_w;");
            w.line(
                1,
                "let wrap_w = stride_h * params.b_stride_h - grid_w * walk_step_w;",
            );
            w.line(
                1,
                "let wrap_h = params.b_stride_n - grid_h * stride_h * params.b_stride_h;",
            );
        }
    }
    // Accumulators and prefetch registers.
    let accumulators: Vec<String> = (0..16).map(|t| format!("c{}{}", t / 4, t % 4)).collect();
    for c in &accumulators {
        w.line(1, &format!("var {c}: {};", coop.ty('C')));
    }
    for p in 0..a_loads {
        w.line(1, &format!("var ra{p}: f16;"));
    }
    for q in 0..column_sets {
        for kk in 0..kb {
            w.line(1, &format!("var rb{q}_{kk}: f16;"));
        }
    }
    w.line(
        1,
        "// Column tiles in a grid-stride loop (any N fits the grid).",
    );
    w.line(
        1,
        "for (var tile = workgroup.x; tile < params.column_tiles; tile = tile + workgroups.x) {",
    );
    w.line(2, &format!("let column0 = tile * {columns}u;"));
    for q in 0..column_sets {
        column_setup(&mut w, key.pass, q);
    }
    walk_start(&mut w, key.pass);
    for c in &accumulators {
        w.line(2, &format!("{c} = {}();", coop.ty('C')));
    }
    w.line(2, "// k-block 0 into copy 0.");
    load_block(&mut w, key, 2, "k_first");
    store_block(&mut w, key, 2, "0u", "0u");
    w.line(2, "workgroupBarrier();");
    w.line(2, "for (var step = 0u; step < steps; step = step + 1u) {");
    w.line(
        3,
        "// Multiply out copy `step % 2` while the next block's gathers are in flight, then",
    );
    w.line(
        3,
        "// store them into the other copy (read by nobody since the last barrier).",
    );
    w.line(3, "let current = step % 2u;");
    w.line(3, &format!("let a_current = current * {a_block}u;"));
    w.line(3, &format!("let b_current = current * {b_block}u;"));
    w.line(3, "let more = step + 1u < steps;");
    w.line(3, "if (more) {");
    load_block(&mut w, key, 4, &format!("k_first + (step + 1u) * {kb}u"));
    w.line(3, "}");
    for kk in 0..kb / 16 {
        w.line(3, "{");
        for j in 0..4 {
            let start = format!("b_current + sub_column + {}u", kk * 16 * b_row + j * 16);
            let load = coop.load('B', "tile_b", &start, &format!("{b_row}u"));
            w.line(4, &format!("let fb{j} = {load};"));
        }
        for i in 0..4 {
            let start = format!("a_current + a_fragment + {}u", i * 16 * a_row + kk * 16);
            let load = coop.load('A', "tile_a", &start, &format!("{a_row}u"));
            w.line(4, &format!("let fa{i} = {load};"));
            for j in 0..4 {
                let product =
                    coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &format!("c{i}{j}"));
                w.line(4, &format!("c{i}{j} = {product};"));
            }
        }
        w.line(3, "}");
    }
    w.line(3, "if (more) {");
    w.line(4, &format!("let a_other = {a_block}u - a_current;"));
    w.line(4, &format!("let b_other = {b_block}u - b_current;"));
    store_block(&mut w, key, 4, "a_other", "b_other");
    w.line(3, "}");
    w.line(3, "workgroupBarrier();");
    w.line(2, "}");
    epilogue(&mut w, coop, output);
    w.line(1, "}");
    w.line(0, "}");
    w.text
}

/// Per column tile: the state of this invocation's B column `q` (`column0 + local + 128 q`).
fn column_setup(w: &mut Writer, pass: ConvPass, q: usize) {
    w.line(2, &format!("let col{q} = column0 + local + {}u;", 128 * q));
    w.line(2, &format!("let col_ok{q} = col{q} < n;"));
    match pass {
        ConvPass::Forward => {
            w.line(
                2,
                "// Where the window starts (h may be negative in the padding; a column past N gets h = height, which no tap brings back inside) and its storage position (wrapping).",
            );
            w.line(2, &format!("let image{q} = col{q} / plane;"));
            w.line(2, &format!("let pixel{q} = col{q} - image{q} * plane;"));
            w.line(2, &format!("let oi{q} = pixel{q} / grid_w;"));
            w.line(2, &format!("let oj{q} = pixel{q} - oi{q} * grid_w;"));
            w.line(2, &format!("let h{q} = select(i32(b_height), i32(oi{q} * stride_h) - i32(pad_h), col_ok{q});"));
            w.line(
                2,
                &format!("let w{q} = i32(oj{q} * stride_w) - i32(pad_w);"),
            );
            w.line(2, &format!("let base{q} = params.b_offset + image{q} * params.b_stride_n + bitcast<u32>(h{q}) * params.b_stride_h + bitcast<u32>(w{q}) * params.b_stride_w;"));
        }
        ConvPass::BackwardInput => {
            w.line(
                2,
                "// y + pad and x + pad as quotient and remainder by the stride (a column past N gets quotient -1: never inside).",
            );
            w.line(2, &format!("let image{q} = col{q} / plane;"));
            w.line(2, &format!("let pixel{q} = col{q} - image{q} * plane;"));
            w.line(2, &format!("let y{q} = pixel{q} / grid_w + pad_h;"));
            w.line(
                2,
                &format!("let x{q} = pixel{q} - (pixel{q} / grid_w) * grid_w + pad_w;"),
            );
            w.line(
                2,
                &format!("let qy{q} = select(-1, i32(y{q} / stride_h), col_ok{q});"),
            );
            w.line(2, &format!("let ry{q} = y{q} % stride_h;"));
            w.line(2, &format!("let qx{q} = i32(x{q} / stride_w);"));
            w.line(2, &format!("let rx{q} = x{q} % stride_w;"));
            w.line(2, &format!("let base{q} = params.b_offset + image{q} * params.b_stride_n + bitcast<u32>(qy{q}) * params.b_stride_h + bitcast<u32>(qx{q}) * params.b_stride_w;"));
        }
        ConvPass::BackwardWeight => {
            w.line(
                2,
                "// The tap (channel, ki, kj) of this column: its reach and storage shift (a column past N reaches beyond the image).",
            );
            w.line(2, &format!("let channel{q} = col{q} / taps;"));
            w.line(2, &format!("let tap{q} = col{q} - channel{q} * taps;"));
            w.line(2, &format!("let ki{q} = tap{q} / kernel_w;"));
            w.line(2, &format!("let kj{q} = tap{q} - ki{q} * kernel_w;"));
            w.line(
                2,
                &format!("let dy{q} = select(i32(b_height + pad_h), i32(ki{q} * dilation_h), col_ok{q});"),
            );
            w.line(2, &format!("let dx{q} = i32(kj{q} * dilation_w);"));
            w.line(2, &format!("let shift{q} = channel{q} * params.b_stride_c + ki{q} * dilation_h * params.b_stride_h + kj{q} * dilation_w * params.b_stride_w;"));
        }
    }
}

/// Per column tile: the uniform walk over B's rows, at `k_first`.
fn walk_start(w: &mut Writer, pass: ConvPass) {
    w.line(2, "var walk_r = k_first;");
    match pass {
        ConvPass::Forward => {
            w.line(
                2,
                "// The tap walk (channel, ki, kj) from r = 0: reach and storage shift.",
            );
            w.line(2, "var walk_ki = 0u;");
            w.line(2, "var walk_kj = 0u;");
            w.line(2, "var walk_dy = 0;");
            w.line(2, "var walk_dx = 0;");
            w.line(2, "var walk_shift = 0u;");
        }
        ConvPass::BackwardInput => {
            w.line(
                2,
                "// The tap walk (o, ki, kj) from r = 0: ki * dil and kj * dil by the stride, o's shift.",
            );
            w.line(2, "var walk_ki = 0u;");
            w.line(2, "var walk_kj = 0u;");
            w.line(2, "var walk_qy = 0;");
            w.line(2, "var walk_ry = 0u;");
            w.line(2, "var walk_qx = 0;");
            w.line(2, "var walk_rx = 0u;");
            w.line(2, "var walk_channel = 0u;");
        }
        ConvPass::BackwardWeight => {
            w.line(
                2,
                "// The pixel walk (image, oi, oj) from k_first: window origin and storage position.",
            );
            w.line(2, "let first_image = k_first / grid_plane;");
            w.line(2, "let first_pixel = k_first - first_image * grid_plane;");
            w.line(2, "var walk_oi = first_pixel / grid_w;");
            w.line(2, "var walk_oj = first_pixel - walk_oi * grid_w;");
            w.line(2, "var walk_h = i32(walk_oi * stride_h) - i32(pad_h);");
            w.line(2, "var walk_w = i32(walk_oj * stride_w) - i32(pad_w);");
            w.line(2, "var walk_base = params.b_offset + first_image * params.b_stride_n + bitcast<u32>(walk_h) * params.b_stride_h + bitcast<u32>(walk_w) * params.b_stride_w;");
        }
    }
}

/// The gathers of the k-block starting at `k0` into the registers (B through the walk, which
/// advances by the block; blocks are loaded in order).
fn load_block(w: &mut Writer, key: ConvCoopKey, indent: usize, k0: &str) {
    let kb = key.k_block.size();
    let column_sets = key.tile.columns() / 128;
    let a_loads = key.tile.rows() * kb / 128;
    let a_row_step = 128 / kb;
    w.line(indent, "{");
    let i = indent + 1;
    w.line(i, &format!("let a_k = {k0} + a_column;"));
    w.line(i, "let a_k_ok = a_k < k_end;");
    match key.pass {
        ConvPass::Forward | ConvPass::BackwardInput => {
            w.line(i, "let a_at = params.a_offset + a_rows_base + a_k;");
        }
        ConvPass::BackwardWeight => {
            w.line(i, "let g_image = a_k / grid_plane;");
            w.line(i, "let g_pixel = a_k - g_image * grid_plane;");
            w.line(i, "let g_oi = g_pixel / grid_w;");
            w.line(i, "let g_oj = g_pixel - g_oi * grid_w;");
            w.line(i, "let a_at = params.a_offset + g_image * params.a_stride_n + g_oi * params.a_stride_h + g_oj * params.a_stride_w + a_rows_base;");
        }
    }
    for p in 0..a_loads {
        w.line(
            i,
            &format!("let a_ok{p} = a_k_ok && {}u < a_rows_left;", p * a_row_step),
        );
        w.line(
            i,
            &format!("ra{p} = select(0.0h, source_a[select(0u, a_at + {p}u * a_row_step, a_ok{p})], a_ok{p});"),
        );
    }
    for kk in 0..kb {
        w.line(i, "{");
        let j = i + 1;
        w.line(j, "let walk_ok = walk_r < k_end;");
        for q in 0..column_sets {
            let (inside, at) = match key.pass {
                ConvPass::Forward => (
                    format!("walk_ok && bitcast<u32>(h{q} + walk_dy) < b_height && bitcast<u32>(w{q} + walk_dx) < b_width"),
                    format!("base{q} + walk_shift"),
                ),
                ConvPass::BackwardInput => (
                    format!("walk_ok && ry{q} == walk_ry && rx{q} == walk_rx && bitcast<u32>(qy{q} - walk_qy) < b_height && bitcast<u32>(qx{q} - walk_qx) < b_width"),
                    format!("base{q} + walk_shift"),
                ),
                ConvPass::BackwardWeight => (
                    format!("walk_ok && bitcast<u32>(walk_h + dy{q}) < b_height && bitcast<u32>(walk_w + dx{q}) < b_width"),
                    format!("walk_base + shift{q}"),
                ),
            };
            if key.pass == ConvPass::BackwardInput && q == 0 {
                w.line(j, "let walk_shift = walk_channel - bitcast<u32>(walk_qy) * params.b_stride_h - bitcast<u32>(walk_qx) * params.b_stride_w;");
            }
            w.line(j, &format!("let inside{q} = {inside};"));
            w.line(
                j,
                &format!(
                    "rb{q}_{kk} = select(0.0h, source_b[select(0u, {at}, inside{q})], inside{q});"
                ),
            );
        }
        walk_advance(w, key.pass, j);
        w.line(i, "}");
    }
    w.line(indent, "}");
}

/// Advance the uniform walk by one row of B.
fn walk_advance(w: &mut Writer, pass: ConvPass, i: usize) {
    w.line(i, "walk_r = walk_r + 1u;");
    match pass {
        ConvPass::Forward => {
            w.line(i, "walk_kj = walk_kj + 1u;");
            w.line(i, "walk_dx = walk_dx + i32(dilation_w);");
            w.line(i, "walk_shift = walk_shift + dilation_shift_w;");
            w.line(i, "if (walk_kj == kernel_w) {");
            w.line(i + 1, "walk_kj = 0u;");
            w.line(i + 1, "walk_dx = 0;");
            w.line(i + 1, "walk_ki = walk_ki + 1u;");
            w.line(i + 1, "walk_dy = walk_dy + i32(dilation_h);");
            w.line(i + 1, "walk_shift = walk_shift + wrap_j;");
            w.line(i, "}");
            w.line(i, "if (walk_ki == kernel_h) {");
            w.line(i + 1, "walk_ki = 0u;");
            w.line(i + 1, "walk_dy = 0;");
            w.line(i + 1, "walk_shift = walk_shift + wrap_i;");
            w.line(i, "}");
        }
        ConvPass::BackwardInput => {
            w.line(i, "walk_kj = walk_kj + 1u;");
            w.line(i, "walk_qx = walk_qx + i32(dilation_q_w);");
            w.line(i, "walk_rx = walk_rx + dilation_r_w;");
            w.line(i, "if (walk_rx >= stride_w) {");
            w.line(i + 1, "walk_rx = walk_rx - stride_w;");
            w.line(i + 1, "walk_qx = walk_qx + 1;");
            w.line(i, "}");
            w.line(i, "if (walk_kj == kernel_w) {");
            w.line(i + 1, "walk_kj = 0u;");
            w.line(i + 1, "walk_qx = 0;");
            w.line(i + 1, "walk_rx = 0u;");
            w.line(i + 1, "walk_ki = walk_ki + 1u;");
            w.line(i + 1, "walk_qy = walk_qy + i32(dilation_q_h);");
            w.line(i + 1, "walk_ry = walk_ry + dilation_r_h;");
            w.line(i + 1, "if (walk_ry >= stride_h) {");
            w.line(i + 2, "walk_ry = walk_ry - stride_h;");
            w.line(i + 2, "walk_qy = walk_qy + 1;");
            w.line(i + 1, "}");
            w.line(i, "}");
            w.line(i, "if (walk_ki == kernel_h) {");
            w.line(i + 1, "walk_ki = 0u;");
            w.line(i + 1, "walk_qy = 0;");
            w.line(i + 1, "walk_ry = 0u;");
            w.line(i + 1, "walk_channel = walk_channel + params.b_stride_c;");
            w.line(i, "}");
        }
        ConvPass::BackwardWeight => {
            w.line(i, "walk_oj = walk_oj + 1u;");
            w.line(i, "walk_w = walk_w + i32(stride_w);");
            w.line(i, "walk_base = walk_base + walk_step_w;");
            w.line(i, "if (walk_oj == grid_w) {");
            w.line(i + 1, "walk_oj = 0u;");
            w.line(i + 1, "walk_w = -i32(pad_w);");
            w.line(i + 1, "walk_oi = walk_oi + 1u;");
            w.line(i + 1, "walk_h = walk_h + i32(stride_h);");
            w.line(i + 1, "walk_base = walk_base + wrap_w;");
            w.line(i, "}");
            w.line(i, "if (walk_oi == grid_h) {");
            w.line(i + 1, "walk_oi = 0u;");
            w.line(i + 1, "walk_h = -i32(pad_h);");
            w.line(i + 1, "walk_base = walk_base + wrap_h;");
            w.line(i, "}");
        }
    }
}

/// The registers into the block copies at `a_at`, `b_at`.
fn store_block(w: &mut Writer, key: ConvCoopKey, indent: usize, a_at: &str, b_at: &str) {
    let kb = key.k_block.size();
    let a_loads = key.tile.rows() * kb / 128;
    let a_row_step = 128 / kb;
    for p in 0..a_loads {
        w.line(
            indent,
            &format!(
                "tile_a[{a_at} + a_store + {}u] = ra{p};",
                p * a_row_step * key.a_row()
            ),
        );
    }
    for q in 0..key.tile.columns() / 128 {
        for kk in 0..kb {
            w.line(
                indent,
                &format!(
                    "tile_b[{b_at} + local + {}u] = rb{q}_{kk};",
                    kk * key.b_row() + 128 * q
                ),
            );
        }
    }
}

/// Each accumulator through the scratch tile into the output; closes nothing.
fn epilogue(w: &mut Writer, coop: Coop, output: &str) {
    w.line(
        2,
        "// Output positions of this invocation's four columns (one per accumulator column).",
    );
    for j in 0..4 {
        w.line(
            2,
            &format!(
                "let out_col{j} = column0 + sub_column + {}u + lane % 16u;",
                16 * j
            ),
        );
        w.line(2, &format!("let out_ok{j} = out_col{j} < n;"));
        w.line(2, &format!("let out_image{j} = out_col{j} / plane;"));
        w.line(2, &format!("let out_at{j} = split_base + out_image{j} * params.image_stride + out_col{j} - out_image{j} * plane;"));
    }
    for i in 0..4 {
        for j in 0..4 {
            w.line(2, &coop.store_scratch(&format!("c{i}{j}"), "scratch_at"));
            w.line(2, "workgroupBarrier();");
            w.line(2, &format!("if (out_ok{j}) {{"));
            for e in 0..8 {
                w.line(3, &format!("{{\n                let row = lane_row + {}u;\n                if (row < m) {{ result[out_at{j} + row * params.row_stride] = {output}(scratch[scratch_read + {}u]); }}\n            }}", 16 * i + e, 16 * e));
            }
            w.line(2, "}");
            w.line(2, "workgroupBarrier();");
        }
    }
}
