//! The tile machinery shared by the implicit-GEMM convolution kernels (`conv/direct.rs`: forward;
//! `conv/backward.rs`: input and weight gradients), generated as fully unrolled WGSL after
//! `matmul/large.rs`.
//!
//! Each kernel is a GEMM `out[row, col] = sum_r A[row, r] * B[r, col]` whose B (for the
//! weight gradient A as well) is gathered from a tensor while a workgroup stages its tile.
//! One workgroup of 256 invocations, (tx, ty) = (local % 16, local / 16), computes one
//! [`Tile::rows`] x [`TILE_N`] block, columns in a grid-stride loop:
//! - **narrow** (64 x 128): an invocation owns rows `ty * 4 + 0..4` and columns
//!   `tx * 4 + 0..4` and `64 + tx * 4 + 0..4`: eight *named* `vec4<f32>` accumulators (a local
//!   array indexed by a loop variable would spill to slow memory), 32 FMAs per three `vec4`
//!   reads of workgroup memory;
//! - **wide** (128 x 128, as `matmul/large.rs`): rows `64 + ty * 4 + 0..4` as well, sixteen
//!   accumulators, 64 FMAs per four `vec4` reads, and twice the FMAs per gathered B value (the
//!   B block has the same size). Chosen by [`prefers_wide`] where it still fills a big GPU.
//!
//! K is walked in steps of [`K_STEP`] through double-buffered `vec4` tiles in workgroup memory
//! (A's block transposed, so that its reads are vectors along the rows): the next block is
//! loaded into registers while the current one is multiplied out, one barrier per step. Each
//! staged row is padded by one `vec4`: A's loaders (and the weight gradient's B loaders) store
//! with consecutive invocations one row apart, and an unpadded row of 16 or 32 `vec4`s would
//! put all those stores in one memory bank.
//!
//! The tap walk: where B's row `r` is a tap `(channel, ki, kj)` (forward and input gradient),
//! an invocation's loader visits `r = ty, ty + K_STEP, ...`. Instead of decomposing `r` with
//! two divisions every step, it carries `(ki, kj)` and the storage shift of the tap from one
//! step to the next ([`walk_setup`], [`walk_advance`]): a fixed advance plus at most one carry
//! per axis, a dozen adds and selects.

use std::fmt::Write;

use crate::backend::gpu::conv::epilogue::{finish, ConvEpilogueKey};
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams};
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of every implicit-GEMM convolution kernel (`Conv2d`, `Conv2dBackwardInput`,
    /// `Conv2dBackwardWeight`): the GEMM `out[row, col] = sum_r A[row, r] * B[r, col]`, its
    /// B gathered from the view `b_*` and A read from `a_offset` (dense `[rows, depth]`, or
    /// for the weight gradient the view `a_*`).
    struct ConvParams {
        /// N: output columns of the GEMM.
        columns: u32,
        /// M: output rows.
        rows: u32,
        /// K: the reduced length.
        depth: u32,
        /// The other channel count (forward and weight gradient: c; input gradient: o).
        channels: u32,
        /// Height of the convolution's input.
        height: u32,
        /// Width of the convolution's input.
        width: u32,
        /// Height of the convolution's output.
        out_height: u32,
        /// Width of the convolution's output.
        out_width: u32,
        /// Kernel height.
        kernel_height: u32,
        /// Kernel width.
        kernel_width: u32,
        /// Vertical stride.
        stride_height: u32,
        /// Horizontal stride.
        stride_width: u32,
        /// Padding above.
        pad_height: u32,
        /// Padding on the left.
        pad_width: u32,
        /// Vertical dilation.
        dilation_height: u32,
        /// Horizontal dilation.
        dilation_width: u32,
        /// Offset of the gathered `[n, c, h, w]` view B (forward: the input; gradients: `g`
        /// for the input gradient, the input for the weight gradient).
        b_offset: u32,
        /// B's image stride.
        b_stride_n: u32,
        /// B's channel stride.
        b_stride_c: u32,
        /// B's row stride.
        b_stride_h: u32,
        /// B's column stride.
        b_stride_w: u32,
        /// Offset of A (forward: the dense weight; input gradient: the transposed weight;
        /// weight gradient: the view `g`).
        a_offset: u32,
        /// A's image stride (weight gradient only).
        a_stride_n: u32,
        /// A's channel stride (weight gradient only).
        a_stride_c: u32,
        /// A's row stride (weight gradient only).
        a_stride_h: u32,
        /// A's column stride (weight gradient only).
        a_stride_w: u32,
        /// The k-range of one split of the weight gradient (a multiple of `K_STEP`).
        k_chunk: u32,
    }
}

impl ConvParams {
    /// From the sixteen sizes (columns, rows, depth, channels, height, width, output height
    /// and width, kernel height and width, strides, paddings, dilations), the rank-4 view B
    /// and A's offset (the weight gradient sets A's strides and `k_chunk` after).
    pub(crate) fn new(sizes: [usize; 16], b: &Layout, a_offset: usize) -> Result<ConvParams> {
        let mut words = [0u32; 16];
        for (word_slot, &size) in words.iter_mut().zip(&sizes) {
            *word_slot = word(size)?;
        }
        let [columns, rows, depth, channels, height, width, out_height, out_width, kernel_height, kernel_width, stride_height, stride_width, pad_height, pad_width, dilation_height, dilation_width] =
            words;
        let [b_stride_n, b_stride_c, b_stride_h, b_stride_w] = view_strides(b)?;
        Ok(ConvParams {
            columns,
            rows,
            depth,
            channels,
            height,
            width,
            out_height,
            out_width,
            kernel_height,
            kernel_width,
            stride_height,
            stride_width,
            pad_height,
            pad_width,
            dilation_height,
            dilation_width,
            b_offset: word(b.offset)?,
            b_stride_n,
            b_stride_c,
            b_stride_h,
            b_stride_w,
            a_offset: word(a_offset)?,
            a_stride_n: 0,
            a_stride_c: 0,
            a_stride_h: 0,
            a_stride_w: 0,
            k_chunk: 0,
        })
    }
}

/// The four strides of a rank-4 view as words (missing dims read as 0; callers check ranks).
pub(crate) fn view_strides(layout: &Layout) -> Result<[u32; 4]> {
    let mut strides = [0u32; 4];
    for (slot, &stride) in strides.iter_mut().zip(&layout.strides) {
        *slot = word(stride)?;
    }
    Ok(strides)
}

/// The text every convolution kernel starts with (after `enable f16;` where needed): the
/// value header of `dtype`, [`ConvParams`] and `common.wgsl`.
pub(crate) fn source_start(dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(ConvParams::WGSL);
    text.push_str(COMMON);
    text
}

/// Output columns per workgroup tile.
pub(crate) const TILE_N: usize = 128;
/// K-step: rows `r` of B per staged block.
pub(crate) const K_STEP: usize = 16;
/// The wide tile is used when it still gives at least this many workgroups (about 0.7 per
/// streaming multiprocessor of a 132-SM GPU such as the H200). Measured there on ResNet-18
/// (batch 64): with 96 instead of 264 the 256- and 512-channel layers take the wide tile too,
/// and inference went from about 3,350 to 3,760 images/s, training from 830 to 867: the wide
/// tile's doubled work per gathered value outweighs its fewer workgroups.
pub(crate) const WIDE_MIN_WORKGROUPS: usize = 96;
/// vec4s per k row of the staged B block: `TILE_N / 4` and one of padding.
const B_PITCH: usize = TILE_N / 4 + 1;
/// Where the second half of an invocation's columns starts in a B row (in vec4s).
const B_HALF: usize = TILE_N / 8;
/// The vec4 lanes, in order.
pub(crate) const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// The row extent of a tile: 64 (narrow) or 128 (wide) rows by [`TILE_N`] columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) wide: bool,
}

impl Tile {
    /// Rows (M) per workgroup tile.
    pub(crate) fn rows(self) -> usize {
        if self.wide {
            128
        } else {
            64
        }
    }

    /// Groups of four rows per invocation, 64 rows apart (1 or 2): one `vec4` of A each.
    pub(crate) fn groups(self) -> usize {
        self.rows() / 64
    }

    /// Accumulator rows per invocation.
    pub(crate) fn row_count(self) -> usize {
        4 * self.groups()
    }

    /// vec4s per k row of the staged A block (one of padding).
    fn a_pitch(self) -> usize {
        self.rows() / 4 + 1
    }
}

/// Whether a GEMM with `m` rows and `columns` columns should use the wide (128-row) tile:
/// at least 128 rows, and at least [`WIDE_MIN_WORKGROUPS`] wide tiles.
pub(crate) fn prefers_wide(m: usize, columns: usize) -> bool {
    let wide = Tile { wide: true }.rows();
    m >= wide && m.div_ceil(wide) * columns.div_ceil(TILE_N) >= WIDE_MIN_WORKGROUPS
}

/// Column `j` (0..8) of an invocation's eight: `4 * tx + j % 4`, or 64 further for j >= 4.
pub(crate) fn column_shift(j: usize) -> usize {
    (j % 4) + (TILE_N / 2) * (j / 4)
}

/// Accumulator row `r` (0..row_count) of an invocation: `ty * 4 + r % 4`, or 64 further for
/// r >= 4. The WGSL offset of that row in the tile.
pub(crate) fn row_offset(r: usize) -> String {
    format!("ty * 4u + {}u", 64 * (r / 4) + r % 4)
}

/// The workgroup tiles and a bounds-checked loader per operand binding.
pub(crate) fn declarations(w: &mut String, tile: Tile, loaders: &[(&str, &str)]) {
    let a_pitch = tile.a_pitch();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "// Two copies (ping-pong) of [{K_STEP} k][{a_pitch} vec4]: A's block transposed (vectors along the
// rows), and of [{K_STEP} k][{B_PITCH} vec4]: B's block (vectors along the columns); the last
// vec4 of each row is padding.
var<workgroup> tile_a: array<vec4<f32>, {}>;
var<workgroup> tile_b: array<vec4<f32>, {}>;",
        2 * K_STEP * a_pitch,
        2 * K_STEP * B_PITCH
    );
    for (name, binding) in loaders {
        let _ = writeln!(
            w,
            "fn {name}(index: u32, inside: bool) -> f32 {{
    if (inside) {{
        return f32(load_value({binding}[index]));
    }}
    return 0.0;
}}"
        );
    }
}

/// The shared start of `main`: the entry point, tile roles and the sizes of [`ConvParams`].
pub(crate) fn entry(w: &mut String, tile: Tile) {
    let _ = writeln!(
        w,
        "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let columns = params.columns;
    let m = params.rows;
    let k = params.depth;
    let height = params.height;
    let width = params.width;
    let oh = params.out_height;
    let ow = params.out_width;
    let kh = params.kernel_height;
    let kw = params.kernel_width;
    let taps = kh * kw;
    let stride_h = params.stride_height;
    let stride_w = params.stride_width;
    let pad_h = params.pad_height;
    let pad_w = params.pad_width;
    let dilation_h = params.dilation_height;
    let dilation_w = params.dilation_width;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * {rows}u;
    let tiles = (columns + {last}u) / {TILE_N}u;
    // Where this invocation's loaded vectors go in a copy: A's rows at k0 + tx (transposed),
    // B's columns at k0 + ty.
    let a_store = tx * {a_pitch}u + ty;",
        rows = tile.rows(),
        last = TILE_N - 1,
        a_pitch = tile.a_pitch(),
    );
}

/// `b_store` for a B loader that stores row `ty` (`transposed: false`: each invocation loads
/// one r for its eight columns) or row `tx` (`true`: one r per invocation per four columns).
pub(crate) fn b_store(w: &mut String, transposed: bool) {
    let at = if transposed {
        format!("tx * {B_PITCH}u + ty")
    } else {
        format!("ty * {B_PITCH}u + tx")
    };
    let _ = writeln!(w, "    let b_store = {at};");
}

/// A dense `[M, K]` A (from `params.a_offset`), bound through `load_weight`: the row starts and
/// which of this invocation's rows exist. Emitted once, before the tile loop.
pub(crate) fn dense_a_setup(w: &mut String, tile: Tile) {
    let _ = writeln!(
        w,
        "    let a_start = params.a_offset + (row0 + ty * 4u) * k + tx;"
    );
    for r in 0..tile.row_count() {
        let _ = writeln!(w, "    let a_ok{r} = row0 + {} < m;", row_offset(r));
    }
}

/// The loads of a dense A at k-block `k0` into `pa{g}` (rows `row0 + 64 g + ty * 4 + 0..4` at
/// `k0 + tx`; consecutive invocations read consecutive k of a row).
pub(crate) fn dense_a_load(w: &mut String, tile: Tile, indent: &str, k0: &str) {
    let _ = writeln!(w, "{indent}{{\n{indent}    let a_k_ok = {k0} + tx < k;");
    for g in 0..tile.groups() {
        let loads: Vec<String> = (0..4)
            .map(|i| {
                let r = 4 * g + i;
                let row = 64 * g + i;
                let at = if row == 0 {
                    format!("a_start + {k0}")
                } else {
                    format!("a_start + {row}u * k + {k0}")
                };
                format!("{indent}        load_weight({at}, a_ok{r} && a_k_ok)")
            })
            .collect();
        let _ = writeln!(w, "{indent}    pa{g} = vec4<f32>(\n{});", loads.join(",\n"));
    }
    let _ = writeln!(w, "{indent}}}");
}

/// Start of the tap walk (once per invocation): `r = ty` as `(channel, ki, kj)` over taps of
/// `kh` x `kw` (`taps`), its storage shift `channel * s_c + ki * s_h + kj * s_w` (WGSL u32
/// expressions, wrapping arithmetic: only the shifts of positions inside a tensor are used,
/// and those fit 32 bits), and what one advance by [`K_STEP`] adds.
pub(crate) fn walk_setup(w: &mut String, [s_c, s_h, s_w]: [&str; 3]) {
    let _ = writeln!(
        w,
        "    // The tap walk: this invocation's B row r = ty + {K_STEP} * step as (channel, ki, kj).
    let walk_s_c = {s_c};
    let walk_s_h = {s_h};
    let walk_s_w = {s_w};
    let walk_c0 = ty / taps;
    let walk_t0 = ty - walk_c0 * taps;
    let walk_ki0 = walk_t0 / kw;
    let walk_kj0 = walk_t0 - walk_ki0 * kw;
    let walk_shift0 = walk_c0 * walk_s_c + walk_ki0 * walk_s_h + walk_kj0 * walk_s_w;
    // One advance by {K_STEP} taps, and the corrections when kj resp. ki wraps around.
    let step_c = {K_STEP}u / taps;
    let step_t = {K_STEP}u - step_c * taps;
    let step_ki = step_t / kw;
    let step_kj = step_t - step_ki * kw;
    let step_shift = step_c * walk_s_c + step_ki * walk_s_h + step_kj * walk_s_w;
    let wrap_kj = walk_s_h - kw * walk_s_w;
    let wrap_ki = walk_s_c - kh * walk_s_h;"
    );
}

/// The walk's state at the start of a column tile: `walk_r`, `walk_ki`, `walk_kj`,
/// `walk_shift`.
pub(crate) fn walk_start(w: &mut String) {
    let _ = writeln!(
        w,
        "        var walk_r = ty;
        var walk_ki = walk_ki0;
        var walk_kj = walk_kj0;
        var walk_shift = walk_shift0;"
    );
}

/// Advance the walk by [`K_STEP`] taps: kj + step_kj < 2 kw and ki + step_ki + 1 < 2 kh, so
/// one conditional subtraction per axis suffices.
pub(crate) fn walk_advance(w: &mut String, indent: &str) {
    let _ = writeln!(
        w,
        "{indent}{{
{indent}    walk_r = walk_r + {K_STEP}u;
{indent}    let kj_sum = walk_kj + step_kj;
{indent}    let carry_j = kj_sum >= kw;
{indent}    walk_kj = select(kj_sum, kj_sum - kw, carry_j);
{indent}    let ki_sum = walk_ki + step_ki + select(0u, 1u, carry_j);
{indent}    let carry_i = ki_sum >= kh;
{indent}    walk_ki = select(ki_sum, ki_sum - kh, carry_i);
{indent}    walk_shift = walk_shift + step_shift + select(0u, wrap_kj, carry_j) + select(0u, wrap_ki, carry_i);
{indent}}}"
    );
}

/// The double-buffered GEMM over one tile. Expects in scope `steps`, `k_first` (the first k
/// of this workgroup), `a_store` and `b_store`, `tx`, `ty`; `load(w, indent, k0)` must set the
/// registers `pa{g}` (four rows at one k per row group) and `pb0`, `pb1` (eight columns at one
/// k) for the k-block starting at `k0`; the blocks are loaded in order. Leaves the sums in
/// `c{r}{half}`: row [`row_offset`]`(r)`, columns `tx * 4 + 0..4` (half 0) and
/// `64 + tx * 4 + 0..4` (half 1).
pub(crate) fn main_loop(w: &mut String, tile: Tile, load: &dyn Fn(&mut String, &str, &str)) {
    accumulators(w, tile);
    main_loop_over(w, tile, load, true);
}

/// The zeroed accumulators `c{r}{half}` of [`main_loop`].
pub(crate) fn accumulators(w: &mut String, tile: Tile) {
    for r in 0..tile.row_count() {
        let _ = writeln!(
            w,
            "        var c{r}0 = vec4<f32>(0.0);\n        var c{r}1 = vec4<f32>(0.0);"
        );
    }
}

/// [`main_loop`] after [`accumulators`]: with `both_halves` false only the first half of the
/// columns (`c{r}0`) is staged and multiplied out (for a column tile whose second half lies
/// past N; `c{r}1` stays zero).
pub(crate) fn main_loop_over(
    w: &mut String,
    tile: Tile,
    load: &dyn Fn(&mut String, &str, &str),
    both_halves: bool,
) {
    let a_pitch = tile.a_pitch();
    let (a_copy, b_copy) = (K_STEP * a_pitch, K_STEP * B_PITCH);
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        for g in 0..tile.groups() {
            let _ = writeln!(w, "{indent}tile_a[{a_at} + a_store + {}u] = pa{g};", 16 * g);
        }
        let _ = writeln!(w, "{indent}tile_b[{b_at} + b_store] = pb0;");
        if both_halves {
            let _ = writeln!(w, "{indent}tile_b[{b_at} + b_store + {B_HALF}u] = pb1;");
        }
    };
    let _ = writeln!(w, "        // Registers of the block in flight.");
    for g in 0..tile.groups() {
        let _ = writeln!(w, "        var pa{g}: vec4<f32>;");
    }
    let _ = writeln!(
        w,
        "        var pb0: vec4<f32>;\n        var pb1: vec4<f32>;"
    );
    load(w, "        ", "k_first");
    store(w, "        ", "0u", "0u");
    let _ = writeln!(
        w,
        "        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * {a_copy}u;
            let b_current = current * {b_copy}u;
            let more = step + 1u < steps;
            if (more) {{
                let k_next = k_first + (step + 1u) * {K_STEP}u;"
    );
    load(w, "                ", "k_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..K_STEP {
        let _ = writeln!(w, "            {{");
        for g in 0..tile.groups() {
            let _ = writeln!(
                w,
                "                let a{g} = tile_a[a_current + {}u + ty];",
                kk * a_pitch + 16 * g
            );
        }
        let b = kk * B_PITCH;
        let _ = writeln!(
            w,
            "                let b_low = tile_b[b_current + {b}u + tx];"
        );
        if both_halves {
            let _ = writeln!(
                w,
                "                let b_high = tile_b[b_current + {b}u + {B_HALF}u + tx];"
            );
        }
        for r in 0..tile.row_count() {
            let (g, lane) = (r / 4, LANES[r % 4]);
            let _ = writeln!(w, "                c{r}0 = c{r}0 + a{g}.{lane} * b_low;");
            if both_halves {
                let _ = writeln!(w, "                c{r}1 = c{r}1 + a{g}.{lane} * b_high;");
            }
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(w, "            if (more) {{");
    store(
        w,
        "                ",
        &format!("{a_copy}u - a_current"),
        &format!("{b_copy}u - b_current"),
    );
    let _ = writeln!(
        w,
        "            }}\n            workgroupBarrier();\n        }}"
    );
}

/// The results into a contiguous `[n, M, plane]` output (`conv_output`): column j is
/// `(image{j}, pixel{j})`, present when `col{j} < columns`, each value through the forward
/// convolution's `epilogue` (`conv/epilogue.rs`; `None` for the gradients). Closes the tile
/// loop and `main`.
pub(crate) fn store_nchw(w: &mut String, tile: Tile, epilogue: Option<ConvEpilogueKey>) {
    let _ = writeln!(
        w,
        "        // out[image, row, pixel] = output[(image * m + row) * plane + pixel]."
    );
    for j in 0..8 {
        let _ = writeln!(
            w,
            "        let out{j} = image{j} * m * plane + pixel{j};\n        let inside{j} = col{j} < columns;"
        );
    }
    for r in 0..tile.row_count() {
        let _ = writeln!(
            w,
            "        {{\n            let row = row0 + {};\n            if (row < m) {{\n                let at = row * plane;",
            row_offset(r)
        );
        for j in 0..8 {
            let (half, lane) = (j / 4, LANES[j % 4]);
            let value = finish(
                epilogue,
                &format!("c{r}{half}.{lane}"),
                "row",
                &format!("out{j} + at"),
            );
            let _ = writeln!(
                w,
                "                if (inside{j}) {{ conv_output[out{j} + at] = store_value(T({value})); }}"
            );
        }
        let _ = writeln!(w, "            }}\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
}

/// Helpers of the convolution kernels' GPU tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::runtime::device::GpuDevice;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::dtype::DType;
    use crate::geometry::Conv2dParams;
    use half::f16;

    /// A test geometry: name, `[n, c, h, w]`, the other channel count, `[kh, kw]`,
    /// `[stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w]`, and whether an operand is
    /// a strided view.
    pub(crate) type Case = (
        &'static str,
        [usize; 4],
        usize,
        [usize; 2],
        [usize; 6],
        bool,
    );

    /// The one-group parameters of `[stride_h, stride_w, pad_h, pad_w, dil_h, dil_w]`.
    pub(crate) fn params([sh, sw, ph, pw, dh, dw]: [usize; 6]) -> Conv2dParams {
        Conv2dParams {
            stride: (sh, sw),
            padding: (ph, pw),
            dilation: (dh, dw),
            groups: 1,
        }
    }

    /// The first GPU; `None` (the test skips) without one, unless `ANYGRAD_REQUIRE_GPU=1`.
    pub(crate) use crate::backend::tests::support::gpu_device as gpu;

    /// `count` deterministic pseudo-random values in [-1, 1), rounded to `dtype`.
    pub(crate) fn values(count: usize, seed: u64, dtype: DType) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let x = ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                match dtype {
                    DType::F16 => f16::from_f32(x).to_f32(),
                    _ => x,
                }
            })
            .collect()
    }

    /// A storage of `dtype` holding `values` on `device`.
    pub(crate) fn upload(device: &GpuDevice, values: &[f32], dtype: DType) -> GpuStorage {
        let cpu = match dtype {
            DType::F16 => CpuStorage::F16(values.iter().map(|&x| f16::from_f32(x)).collect()),
            _ => CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values.to_vec())),
        };
        GpuStorage::from_cpu(device, &cpu).unwrap()
    }

    /// `actual` (a GPU result) against `expected` within `tolerance * (1 + |expected|)`:
    /// 1e-4 for F32, 3e-3 for F16 (one rounding of the result, accumulation in f32).
    pub(crate) fn check(actual: &GpuStorage, expected: &[f32], what: &str) {
        let (actual, tolerance): (Vec<f32>, f32) = match actual.to_cpu().unwrap() {
            CpuStorage::F32(values) => ((values).into_vec(), 1e-4),
            CpuStorage::F16(values) => (values.iter().map(|x| x.to_f32()).collect(), 3e-3),
            _ => panic!("{what}: dtype changed"),
        };
        assert_eq!(actual.len(), expected.len(), "{what}");
        for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
            assert!(
                (e - a).abs() <= tolerance * (1.0 + e.abs()),
                "{what}: element {i}: {e} vs {a}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{prefers_wide, WIDE_MIN_WORKGROUPS};

    /// The wide tile: at least 128 rows and enough wide tiles to fill a big GPU.
    #[test]
    fn wide_tile_selection() {
        // ResNet-18 at batch 64: 3x3 layers with 64 channels (56 x 56) never; 128 channels at
        // 28 x 28 (392 tiles), 256 at 14 x 14 (2 x 98 = 196 tiles) and 512 at 7 x 7
        // (4 x 25 = 100) take the wide tile. At batch 16, the last has 4 x 7 = 28: narrow.
        assert!(!prefers_wide(64, 64 * 56 * 56));
        assert!(prefers_wide(128, 64 * 28 * 28));
        assert!(prefers_wide(256, 64 * 14 * 14));
        assert!(prefers_wide(512, 64 * 7 * 7));
        assert!(!prefers_wide(512, 16 * 7 * 7));
        // The boundary: WIDE_MIN_WORKGROUPS wide tiles of 128 columns.
        let columns = WIDE_MIN_WORKGROUPS * 128;
        assert!(prefers_wide(128, columns));
        assert!(!prefers_wide(128, columns - 128));
        assert!(prefers_wide(128, columns - 127));
        // Two row tiles need half the columns; a partial row tile counts as one.
        assert!(prefers_wide(256, columns / 2));
        assert!(prefers_wide(129, columns / 2));
        assert!(!prefers_wide(128, columns / 2));
        // Fewer than 128 rows: never, however many columns.
        assert!(!prefers_wide(127, 1 << 30));
        assert!(!prefers_wide(0, 1 << 30));
        assert!(!prefers_wide(128, 0));
    }
}
