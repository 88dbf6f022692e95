//! The f16 forward convolution on cooperative matrices (tensor cores) over channels-last
//! copies of its operands: an implicit GEMM whose A rows are output pixels and whose K runs
//! over `(ki, kj, channel)`, so that eight consecutive k of a row are eight consecutive
//! channels of one input pixel — one 16-byte load — instead of the scalar gathers that bound
//! `conv/coop.rs` (off by default for that reason).
//!
//! - The host copies the input `[n, c, h, w]` (any strides) to a dense `[n, h, w, c]` and the
//!   weight `[o, c, kh, kw]` to a dense `[kh, kw, c, o]` (= `[K, o]`, B of the GEMM;
//!   `conv/nhwc/copies.rs`, the weight's copy kept between calls): the input's pass is about
//!   4% of the arithmetic time of a ResNet layer.
//! - GEMM: M = n * oh * ow (pixels), N = o, K = kh * kw * c with c a multiple of 8 (fewer
//!   channels — an image's 3 in a network's stem — are padded to 8 with zeros in both
//!   copies), so each 16-byte load is 8 channels of one tap: a loader finds its tap from its
//!   k once per block, its pixel's `(image, oy, ox)` once, and a load outside the image
//!   (padding), past M or past K (rounded up to whole blocks) is zero.
//! - Tiles ([`NhwcTile`]): 256 invocations, eight subgroups; R x C (pixels x channels) of
//!   256 x 64, 128 x 128, 128 x 64 or 96 x 128, subgroups `R / 64` high (two for 96 rows);
//!   each owns 64 rows (48) as 4 (3) x (its columns / 16) f32 accumulators. The 96-pixel
//!   tiles fill a grid the 128-pixel ones leave short of the GPU's multiprocessors (ResNet-18's
//!   last stage: 3,136 pixels x 512 channels make 100 tiles of 128 x 128 but 132 of 96 x 128).
//!   K is staged in blocks of 32 halves, or of 64 for the deep tiles (half the barriers; 43
//!   KiB of workgroup memory at 128 rows). Blocks staged
//!   once in f16 workgroup memory (rows padded by 8 halves), next block's loads held in
//!   registers meanwhile, as the wide matmul kernels (`matmul/coop/wide.rs`).
//! - Epilogue: each accumulator goes through a per-subgroup 16 x 16 f32 scratch tile; lane
//!   `l` then writes channel `l % 16` of pixels `(l / 16) * 8 ..+ 8` into the `[n, o, oh, ow]`
//!   output, or — channels-last (`MemoryFormat::ChannelsLast`, `conv/nhwc/store.rs`) —
//!   channels `(l % 2) * 8 ..+ 8` of pixel `l / 2` as one 16-byte store, through
//!   `conv/epilogue.rs`'s scale, shift, residual and activation when the key has one
//!   (eval-mode batch norm folded into the store). A channels-last output is the next such
//!   convolution's input as it lies: no copy (`conv/nhwc/copies.rs::channels_last_input`).
//!
//! Every global read is clamped to its buffer and every store checked against M, so the
//! kernel runs without wgpu's runtime checks. `emulated` keys spell the matrix operations in
//! plain WGSL (`matmul/coop.rs`'s `Coop`), so tests check the loads, staging and epilogue on
//! any f16 device (the 32-deep 128-row tiles fit 32 KiB of workgroup memory, lavapipe's limit;
//! naga validates the deep tile in CI, the hardware tests run it where the device has 43 KiB).

use std::fmt::Write;

use crate::backend::gpu::conv::coop::{dispatch_counted, ConvCoopState};
use crate::backend::gpu::conv::epilogue::{self as conv_epilogue, BoundEpilogue, ConvEpilogueKey};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::same_device;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::cooperative::{block_product, store_register, Coop};
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

mod copies;
mod input_gradient;
mod patch;
mod patch_source;
mod space_to_depth;
mod store;
mod tile;
mod weight;

#[cfg(test)]
pub(crate) use copies::channels_last_copy;
pub(crate) use copies::{channels_last_input, gradient_copy, padded_channels, weight_copy};
pub(crate) use input_gradient::patch_applies as patch_input_gradient_applies;
pub(crate) use patch::{forward_applies as patch_applies, ConvPatchKey, PatchTile};
pub(crate) use space_to_depth::input_source as space_to_depth_source;
pub(crate) use space_to_depth::CHANNELS as SPACE_TO_DEPTH_CHANNELS;
pub use store::OutputStore;
use store::{channels_last_store, planes_store, preload_row_residuals, preloaded_residual};
pub use tile::NhwcTile;
pub(crate) use weight::ConvNhwcWeightKey;

#[cfg(test)]
mod tests;

/// Halves of one k-block (one tap, 32 channels) of the weight-gradient kernels and of every
/// forward tile but the deep one.
pub(crate) const K_BLOCK: usize = 32;

/// Invocations of one workgroup.
pub(super) const INVOCATIONS: usize = 256;

/// One channels-last cooperative-matrix convolution kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvNhwcKey {
    /// The output tile.
    pub tile: NhwcTile,
    /// Scale, shift, residual and activation applied in the store.
    pub epilogue: Option<ConvEpilogueKey>,
    /// How the output is written (row-major planes, packed or not, or channels-last).
    pub store: OutputStore,
    /// Plain-WGSL emulation of the matrix operations (tests on any f16 device).
    pub emulated: bool,
}

impl ConvNhwcKey {
    /// Every instantiation (the naga catalogue).
    pub(crate) fn all() -> Vec<ConvNhwcKey> {
        let epilogues = std::iter::once(None).chain(ConvEpilogueKey::all().into_iter().map(Some));
        let mut keys = Vec::new();
        for epilogue in epilogues {
            for tile in NhwcTile::ALL {
                for store in OutputStore::ALL {
                    for emulated in [false, true] {
                        keys.push(ConvNhwcKey {
                            tile,
                            epilogue,
                            store,
                            emulated,
                        });
                    }
                }
            }
        }
        keys
    }

    /// The complete WGSL source.
    pub(crate) fn source(self) -> String {
        source(self)
    }
}

kernel_params! {
    /// The parameters of the channels-last convolution kernels (binding 0).
    struct ConvNhwcParams {
        /// GEMM rows: n * oh * ow.
        m: u32,
        /// Output channels o (GEMM columns).
        out_channels: u32,
        /// Input channels c of the channels-last copy (a multiple of 8).
        channels: u32,
        /// Input height.
        height: u32,
        /// Input width.
        width: u32,
        /// Output pixels per image: oh * ow.
        plane: u32,
        /// Output width.
        out_width: u32,
        /// Kernel columns kw.
        kernel_w: u32,
        /// Kernel rows kh.
        kernel_h: u32,
        /// 1: taps are read flipped (`(kh - 1 - ki, kw - 1 - kj)`; the input gradient).
        flip: u32,
        /// k-blocks: K = kh * kw * c over 32, rounded up.
        steps: u32,
        /// GEMM depth K = kh * kw * c.
        depth: u32,
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
    }
}

/// The lines of one generated kernel (`write!` into a String cannot fail: results ignored).
pub(super) struct Writer {
    pub(super) text: String,
}

impl Writer {
    pub(super) fn line(&mut self, indent: usize, line: &str) {
        let _ = writeln!(self.text, "{:indent$}{line}", "", indent = indent * 4);
    }
}

/// The kernel's WGSL source.
fn source(key: ConvNhwcKey) -> String {
    let coop = Coop {
        emulated: key.emulated,
    };
    let (rows, columns, b_row) = (key.tile.rows(), key.tile.columns(), key.tile.b_row());
    let sub_rows = key.tile.subgroup_rows();
    let high = rows / sub_rows; // subgroups per tile column
    let wide = 8 / high; // subgroups per tile row
    let sub_columns = columns / wide;
    let (fragment_rows, fragment_columns) = (sub_rows / 16, sub_columns / 16);
    let (k_block, a_row) = (key.tile.k_block(), key.tile.a_row());
    let per_row = k_block / 8; // 16-byte loads per row of A's block
    let a_rows_per_pass = INVOCATIONS / per_row;
    // The last pass covers only part of the rows where they are not a whole number of passes
    // (96 rows in passes of 64): invocations past them neither load nor store.
    let a_loads = rows.div_ceil(a_rows_per_pass);
    let a_guard = |p: usize| -> Option<usize> {
        let end = (p + 1) * a_rows_per_pass;
        (end > rows).then(|| (rows - p * a_rows_per_pass) * per_row)
    };
    let b_per_row = columns / 8; // 16-byte loads per k-row of B's block
    let b_rows_per_pass = INVOCATIONS / b_per_row;
    let b_loads = k_block / b_rows_per_pass;
    let mut w = Writer {
        text: String::from("enable f16;\n"),
    };
    if !key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    w.text.push_str(<ConvNhwcParams as KernelParams>::WGSL);
    w.text.push_str(&value_header(DType::F16));
    w.text.push_str(COMMON);
    let _ = write!(
        w.text,
        "@group(0) @binding(1) var<storage, read> nhwc_input: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> nhwc_weight: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> result: array<{}>;
{}
// One 16 x 16 f32 tile per subgroup: accumulators pass through it to the output.
var<workgroup> scratch: array<f32, 2048>;
// A's block [{rows} pixels][{a_row}] and B's [{k_block} k][{b_row}] (padded rows).
var<workgroup> tile_a: array<f16, {}>;
var<workgroup> tile_b: array<f16, {}>;
",
        key.store.result_type(),
        key.store.epilogue_declarations(key.epilogue),
        rows * a_row,
        k_block * b_row
    );
    if key.emulated {
        w.text.push_str(&coop.prelude("tile_a", "tile_b"));
    }
    let _ = write!(
        w.text,
        "
@compute @workgroup_size({INVOCATIONS})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>,
        @builtin(local_invocation_index) local: u32{}) {{
",
        coop.subgroup_builtins()
    );
    if key.emulated {
        w.line(1, "let subgroup = local / 32u;");
        w.line(1, "let lane = local % 32u;");
        w.line(1, "emulated_lane = lane;");
    }
    for line in [
        "let m = params.m;".to_string(),
        "let out_channels = params.out_channels;".into(),
        "let c8 = params.channels / 8u;".into(),
        "let input_last = arrayLength(&nhwc_input) - 1u;".into(),
        "let weight_last = arrayLength(&nhwc_weight) - 1u;".into(),
        format!("let row0 = workgroup.y * {rows}u;"),
        format!("let column0 = workgroup.x * {columns}u;"),
        format!("let sub_row = (subgroup / {wide}u) * {sub_rows}u;"),
        format!("let sub_column = (subgroup % {wide}u) * {sub_columns}u;"),
        format!("let a_fragment = sub_row * {a_row}u;"),
        "let scratch_at = subgroup * 256u;".into(),
        format!("// Loader roles: 16-byte load `local % {per_row}` (8 channels) of A's rows `local / {per_row} + {a_rows_per_pass}p`,"),
        format!("// load `local % {b_per_row}` of B's k-rows `local / {b_per_row} + {b_rows_per_pass}p`."),
        format!("let a_store = (local / {per_row}u) * {a_row}u + (local % {per_row}u) * 8u;"),
        format!("let b_store = (local / {b_per_row}u) * {b_row}u + (local % {b_per_row}u) * 8u;"),
        format!("let b_row = local / {b_per_row}u;"),
        format!("let b_start = column0 / 8u + local % {b_per_row}u;"),
    ] {
        w.line(1, &line);
    }
    // Each A loader's pixel: image, output row and column, and whether it exists.
    for p in 0..a_loads {
        w.line(
            1,
            &format!(
                "let pixel{p} = row0 + local / {per_row}u + {}u;",
                p * a_rows_per_pass
            ),
        );
        w.line(1, &format!("let image{p} = pixel{p} / params.plane;"));
        w.line(1, &format!("let within{p} = pixel{p} % params.plane;"));
        w.line(
            1,
            &format!("let y{p} = i32((within{p} / params.out_width) * params.stride_h) - i32(params.pad_h);"),
        );
        w.line(
            1,
            &format!("let x{p} = i32((within{p} % params.out_width) * params.stride_w) - i32(params.pad_w);"),
        );
        w.line(1, &format!("let base{p} = image{p} * params.height;"));
        w.line(1, &format!("var a{p}: mat2x4<f16>;"));
    }
    for p in 0..b_loads {
        w.line(1, &format!("var b{p}: mat2x4<f16>;"));
    }
    let accumulators: Vec<String> = (0..fragment_rows * fragment_columns)
        .map(|t| format!("c{}{}", t / fragment_columns, t % fragment_columns))
        .collect();
    for c in &accumulators {
        w.line(1, &format!("var {c} = {}();", coop.ty('C')));
    }
    // The loads of k-block `step` into the registers.
    let load = |w: &mut Writer, indent: usize| {
        // This loader's 8 k: one tap, 8 channels (K past its end reads zeros).
        w.line(
            indent,
            &format!("let k = step * {k_block}u + (local % {per_row}u) * 8u;"),
        );
        w.line(indent, "let tap = k / params.channels;");
        w.line(indent, "var ki = tap / params.kernel_w;");
        w.line(indent, "var kj = tap % params.kernel_w;");
        w.line(
            indent,
            "if (params.flip != 0u) { ki = params.kernel_h - 1u - min(ki, params.kernel_h - 1u); kj = params.kernel_w - 1u - kj; }",
        );
        w.line(indent, "let channel8 = (k % params.channels) / 8u;");
        w.line(indent, "let dy = i32(ki * params.dilation_h);");
        w.line(indent, "let dx = i32(kj * params.dilation_w);");
        for p in 0..a_loads {
            w.line(indent, &format!("let iy{p} = y{p} + dy;"));
            w.line(indent, &format!("let ix{p} = x{p} + dx;"));
            let part = a_guard(p).map_or(String::new(), |limit| format!(" && local < {limit}u"));
            w.line(
                indent,
                &format!(
                    "let inside{p} = pixel{p} < m && k < params.depth && iy{p} >= 0 && iy{p} < i32(params.height) && ix{p} >= 0 && ix{p} < i32(params.width){part};"
                ),
            );
            w.line(
                indent,
                &format!(
                    "let at{p} = min(((base{p} + u32(max(iy{p}, 0))) * params.width + u32(max(ix{p}, 0))) * c8 + channel8, input_last);"
                ),
            );
            w.line(
                indent,
                &format!("if (inside{p}) {{ a{p} = nhwc_input[at{p}]; }} else {{ a{p} = mat2x4<f16>(); }}"),
            );
        }
        for p in 0..b_loads {
            let row = format!("step * {k_block}u + b_row + {}u", p * b_rows_per_pass);
            w.line(
                indent,
                &format!(
                    "if ({row} < params.depth) {{ b{p} = nhwc_weight[min(b_start + ({row}) * (out_channels / 8u), weight_last)]; }} else {{ b{p} = mat2x4<f16>(); }}"
                ),
            );
        }
    };
    w.line(1, "{");
    w.line(2, "let step = 0u;");
    load(&mut w, 2);
    w.line(1, "}");
    w.line(
        1,
        "for (var step = 0u; step < params.steps; step = step + 1u) {",
    );
    w.line(2, "// Everyone is done reading the previous block.");
    w.line(2, "workgroupBarrier();");
    for p in 0..a_loads {
        let target = ("tile_a", "a_store", p * a_rows_per_pass * a_row);
        match a_guard(p) {
            Some(limit) => {
                w.line(2, &format!("if (local < {limit}u) {{"));
                store_register(&mut w.text, "            ", target, &format!("a{p}"));
                w.line(2, "}");
            }
            None => store_register(&mut w.text, "        ", target, &format!("a{p}")),
        }
    }
    for p in 0..b_loads {
        let target = ("tile_b", "b_store", p * b_rows_per_pass * b_row);
        store_register(&mut w.text, "        ", target, &format!("b{p}"));
    }
    w.line(2, "workgroupBarrier();");
    w.line(
        2,
        "// The next block's loads fly while this one is multiplied out.",
    );
    w.line(2, "if (step + 1u < params.steps) {");
    w.line(3, "let step = step + 1u;");
    load(&mut w, 3);
    w.line(2, "}");
    let block = (k_block, a_row, b_row);
    let fragments = (fragment_rows, fragment_columns);
    block_product(&mut w.text, "        ", coop, block, fragments);
    w.line(1, "}");
    // Epilogue: row-major, lane writes channel `lane % 16` of pixels `(lane / 16) * 8 ..+ 8`
    // of each 16 x 16 accumulator; channels-last, channels `(lane % 2) * 8 ..+ 8` of pixel
    // `lane / 2`.
    w.line(1, "let lane_row = (lane / 16u) * 8u;");
    w.line(1, "let lane_column = lane % 16u;");
    w.line(1, "let lane_pixel = lane / 2u;");
    w.line(1, "let lane_channel = (lane % 2u) * 8u;");
    for (t, c) in accumulators.iter().enumerate() {
        let (i, j) = (t / fragment_columns, t % fragment_columns);
        if key.store == OutputStore::ChannelsLast && j == 0 {
            // The row's residuals at once (pixels past M are not stored).
            let pixel = format!("(row0 + sub_row + {}u + lane_pixel)", i * 16);
            let first_channel = "column0 + sub_column";
            preload_row_residuals(
                &mut w,
                key.epilogue,
                (i, fragment_columns),
                &pixel,
                first_channel,
            );
        }
        w.line(1, &coop.store_scratch(c, "scratch_at"));
        w.line(1, "workgroupBarrier();");
        w.line(1, "{");
        if key.store == OutputStore::ChannelsLast {
            w.line(
                2,
                &format!(
                    "let channel = column0 + sub_column + {}u + lane_channel;",
                    j * 16
                ),
            );
            w.line(
                2,
                &format!("let pixel = row0 + sub_row + {}u + lane_pixel;", i * 16),
            );
            w.line(2, "if (pixel < m) {");
            w.line(3, "let position = pixel * out_channels + channel;");
            let value_at = "scratch_at + lane_pixel * 16u + lane_channel";
            let preloaded = preloaded_residual(i, j);
            channels_last_store(&mut w, 3, key.epilogue, value_at, Some(&preloaded));
            w.line(2, "}");
            w.line(1, "}");
            w.line(1, "workgroupBarrier();");
            continue;
        }
        w.line(
            2,
            &format!(
                "let channel = column0 + sub_column + {}u + lane_column;",
                j * 16
            ),
        );
        w.line(
            2,
            &format!("let first = row0 + sub_row + {}u + lane_row;", i * 16),
        );
        if key.store == OutputStore::PlanesPacked {
            // The 8 pixels lie in one plane and are all inside M or all outside.
            w.line(2, "if (first < m) {");
            w.line(
                3,
                "let position = ((first / params.plane) * out_channels + channel) * params.plane + first % params.plane;",
            );
            w.line(3, "var packed: mat2x4<f16>;");
            if let Some(load) = conv_epilogue::packed_residual(key.epilogue, "position") {
                w.line(3, &load);
            }
            for r in 0..8 {
                let value = format!("scratch[scratch_at + (lane_row + {r}u) * 16u + lane_column]");
                w.line(
                    3,
                    &format!(
                        "packed[{}][{}] = f16({});",
                        r / 4,
                        r % 4,
                        conv_epilogue::finish_packed(key.epilogue, &value, "channel", r)
                    ),
                );
            }
            w.line(
                3,
                "result[min(position / 8u, arrayLength(&result) - 1u)] = packed;",
            );
            w.line(2, "}");
        } else {
            w.line(2, "for (var r = 0u; r < 8u; r = r + 1u) {");
            w.line(3, "let pixel = first + r;");
            w.line(3, "if (pixel < m) {");
            w.line(
                4,
                "let position = ((pixel / params.plane) * out_channels + channel) * params.plane + pixel % params.plane;",
            );
            w.line(
                4,
                "let value = scratch[scratch_at + (lane_row + r) * 16u + lane_column];",
            );
            planes_store(&mut w, 4, key.epilogue);
            w.line(3, "}");
            w.line(2, "}");
        }
        w.line(1, "}");
        w.line(1, "workgroupBarrier();");
    }
    w.line(0, "}");
    w.text
}

/// The tiles that may compute a convolution with `out_channels` outputs (they must divide
/// it), fastest-first by the heuristic: the 128 x 128 tile where 128 divides the channels,
/// else the 256-pixel one; the deep 128 x 128 tile and the 96-pixel ones last (candidates for
/// the autotuner). (Tiles of 64 x 64 per subgroup, 256 x 128 and 128 x 256, were tried on
/// the H200 and lost to the deep tile on every ResNet-18 layer but one, by 3%:
/// docs/PERFORMANCE.md.)
pub(crate) fn tiles_for(out_channels: usize) -> Vec<NhwcTile> {
    if out_channels.is_multiple_of(128) {
        vec![
            NhwcTile::Rows128Columns128,
            NhwcTile::Rows128Columns64,
            NhwcTile::Rows128Columns128Deep,
            NhwcTile::Rows96Columns128,
            NhwcTile::Rows96Columns128Deep,
        ]
    } else if out_channels.is_multiple_of(64) {
        vec![NhwcTile::Rows256Columns64, NhwcTile::Rows128Columns64]
    } else {
        Vec::new()
    }
}

/// Whether the channels-last kernels can compute this convolution: F16 operands, one group,
/// input channels a multiple of 8 or fewer than 8 (padded), output channels a multiple of
/// 64, a 4-D input.
pub(crate) fn applies(dtype: DType, weight_shape: &[usize], params: &Conv2dParams) -> bool {
    dtype == DType::F16
        && params.groups == 1
        && weight_shape.len() == 4
        && weight_shape[1] > 0
        && (weight_shape[1] < 8 || weight_shape[1].is_multiple_of(8))
        && !tiles_for(weight_shape[0]).is_empty()
}

/// A 1x1 convolution without padding and with a stride over 1 reads only every stride-th
/// pixel: the view of those pixels and the stride-1 parameters that convolve it to the same
/// output (so that the channels-last copy copies only what the kernel reads); `None` for
/// every other convolution.
pub(crate) fn pointwise_view(
    layout: &Layout,
    weight_shape: &[usize],
    params: &Conv2dParams,
) -> Option<(Layout, Conv2dParams)> {
    let (&[n, c, h, w], &[_, _, 1, 1]) = (layout.shape.as_slice(), weight_shape) else {
        return None;
    };
    let (stride_h, stride_w) = params.stride;
    if params.padding != (0, 0) || params.stride == (1, 1) || stride_h == 0 || stride_w == 0 {
        return None;
    }
    if h == 0 || w == 0 {
        return None;
    }
    let strides = &layout.strides;
    let pixels = Layout {
        shape: vec![n, c, (h - 1) / stride_h + 1, (w - 1) / stride_w + 1],
        strides: vec![
            strides[0],
            strides[1],
            strides[2] * stride_h,
            strides[3] * stride_w,
        ],
        offset: layout.offset,
    };
    let unit = Conv2dParams {
        stride: (1, 1),
        dilation: (1, 1),
        ..*params
    };
    Some((pixels, unit))
}

impl GpuStorage {
    /// The channels-last cooperative-matrix convolution with `tile` (`emulated`: the
    /// plain-WGSL kernel), with `epilogue` in its store (bound for `format`: `BoundEpilogue::new_in`)
    /// and its output dense in `format`; `Ok(None)` where it does not apply
    /// here (see [`applies`]; no tensor cores on this device unless emulated; the tile does
    /// not divide the output channels; a grid beyond the device's limits).
    pub(crate) fn conv2d_nhwc(
        &self,
        (layout, weight, weight_layout): (&Layout, &GpuStorage, &Layout),
        params: &Conv2dParams,
        (tile, emulated, format): (NhwcTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d (channels-last tensor cores)";
        same_device(OP, self, weight)?;
        if self.dtype != weight.dtype
            || !applies(self.dtype, &weight_layout.shape, params)
            || !weight_layout.shape[0].is_multiple_of(tile.columns())
            || !self.nhwc_usable(tile.workgroup_bytes(), emulated)
        {
            return Ok(None);
        }
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        // A strided 1x1 convolution of a row-major input copies only the pixels it reads; a
        // channels-last input is read where it lies, strided.
        let pointwise = pointwise_view(layout, &weight_layout.shape, params)
            .filter(|_| !MemoryFormat::ChannelsLast.holds(layout));
        if let Some((pixels, unit)) = pointwise {
            return self.conv2d_nhwc(
                (&pixels, weight, weight_layout),
                &unit,
                (tile, emulated, format),
                epilogue,
            );
        }
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        if space_to_depth::applies(layout, &weight_layout.shape, params) {
            return self.conv2d_nhwc_space_to_depth(
                (layout, weight, weight_layout),
                &shape,
                (tile, emulated, format),
                epilogue,
            );
        }
        let padded = padded_channels(layout.shape[1]);
        // Weight [o, c, kh, kw] as [kh, kw, c, o] (c padded).
        let weight = weight_copy(weight, weight_layout, [2, 3, 1, 0], padded)?;
        self.nhwc_gemm(layout, &weight, &shape, (tile, emulated, format), epilogue)
    }

    /// Whether a channels-last kernel using `workgroup_bytes` of workgroup memory can run on
    /// this device (`emulated`: any f16 device; hardware: tensor cores no kernel of which the
    /// driver refused).
    pub(super) fn nhwc_usable(&self, workgroup_bytes: u32, emulated: bool) -> bool {
        let context = self.device.context();
        let usable = if emulated {
            context.supports_f16()
        } else {
            context.coop.available && ConvCoopState::of(context).failure().is_none()
        };
        usable && workgroup_bytes <= context.limits.max_compute_workgroup_storage_size
    }

    /// The implicit GEMM of `shape` over the input view `layout` of `self` and the dense
    /// channels-last weight `weight` (`[kh, kw, c padded, o]`), the output in `format`.
    fn nhwc_gemm(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        shape: &Conv2dShape,
        (tile, emulated, format): (NhwcTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d (channels-last tensor cores)";
        let &[_, channels, height, width] = layout.shape.as_slice() else {
            return Err(Error::invalid(OP, "expects a [n, c, h, w] input"));
        };
        // Channels-last input [n, h, w, c] (c padded): the storage itself where it already is.
        let input = channels_last_input(self, layout, padded_channels(channels))?;
        Self::nhwc_gemm_channels_last(
            (&input, channels, height, width),
            weight,
            shape,
            false,
            (tile, emulated, format),
            epilogue,
        )
    }

    /// [`Self::nhwc_gemm`] over an input already copied channels-last (`[n, h, w, c padded]`
    /// of `channels` real channels), taps flipped where `flip`: the output is
    /// `shape.output_shape()`, dense in `format`.
    pub(super) fn nhwc_gemm_channels_last(
        (input, channels, height, width): (&GpuStorage, usize, usize, usize),
        weight: &GpuStorage,
        shape: &Conv2dShape,
        flip: bool,
        (tile, emulated, format): (NhwcTile, bool, MemoryFormat),
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<Option<GpuStorage>> {
        const OP: &str = "conv2d (channels-last tensor cores)";
        let context = input.device.context();
        let [batch, out_channels, out_height, out_width] = shape.output_shape();
        let pixels = batch * out_height * out_width;
        let grid_rows = pixels.div_ceil(tile.rows());
        let grid_columns = out_channels / tile.columns();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        if grid_rows > max || grid_columns > max {
            return Ok(None);
        }
        let out = GpuStorage::allocate(&input.device, OP, pixels * out_channels, input.dtype)?;
        if pixels == 0 {
            return Ok(Some(out));
        }
        let (kernel_h, kernel_w) = shape.kernel;
        let padded = padded_channels(channels);
        let depth = kernel_h * kernel_w * padded;
        let header = ConvNhwcParams {
            m: word(pixels)?,
            out_channels: word(out_channels)?,
            channels: word(padded)?,
            height: word(height)?,
            width: word(width)?,
            plane: word(out_height * out_width)?,
            out_width: word(out_width)?,
            kernel_w: word(kernel_w)?,
            kernel_h: word(kernel_h)?,
            flip: u32::from(flip),
            steps: word(depth.div_ceil(tile.k_block()))?,
            depth: word(depth)?,
            stride_h: word(shape.stride.0)?,
            stride_w: word(shape.stride.1)?,
            pad_h: word(shape.padding.0)?,
            pad_w: word(shape.padding.1)?,
            dilation_h: word(shape.dilation.0)?,
            dilation_w: word(shape.dilation.1)?,
        };
        let key = ConvNhwcKey {
            tile,
            epilogue: epilogue.map(|e| e.key),
            store: OutputStore::of(format, (out_height * out_width).is_multiple_of(8)),
            emulated,
        };
        let mut buffers = vec![input.raw()?, weight.raw()?, out.raw()?];
        if let Some(epilogue) = epilogue {
            buffers.extend(epilogue.buffers()?);
        }
        let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&header));
        let grid = (grid_columns as u32, grid_rows as u32, 1);
        let kernel = ConvKernel::ConvNhwc(key);
        weight.device.context().prefetch(weight)?;
        let recorded = dispatch_counted(input, (&kernel, emulated), words, &buffers, grid)?;
        Ok(recorded.then_some(out))
    }
}
