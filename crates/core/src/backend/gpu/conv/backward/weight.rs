//! The weight-gradient kernel of the direct (implicit-GEMM) 2-D convolution
//! (`ConvKernel::Conv2dBackwardWeight`), whose split sums `conv/backward/split_sum.rs` adds up:
//! `dW[o, ci, ki, kj] = sum_(ni, oi, oj) g[ni, o, oi, oj] * x[ni, ci, y, x]`, a GEMM with
//! M = o, N = c * kh * kw, K = n * oh * ow: A is `g` read as `[o, K]` and B the input windows,
//! both gathered through their strides (no im2col buffer). K is huge and M, N small for most
//! layers, so K is split over `workgroup.z` ([`split_count`]): each split writes f32 partial
//! sums, and a second small dispatch adds them up in a fixed order (deterministic) and
//! converts to the storage type. F32 or F16 (stored as themselves, computed in f32).
//!
//! The loaders walk K with consecutive invocations (K is the pixel axis, where `g` and `x` are
//! contiguous), so their global reads coalesce. Every global access is bounds-checked. The
//! kernel has variants ([`WeightKernel`]), each its own autotuner candidate (`conv/tuning.rs`):
//! - the narrow (64-row) or the **wide** (128-row) tile of `conv/gemm.rs`: the wide one
//!   doubles the FMAs per gathered input value and per read of workgroup memory, for layers
//!   with o >= 128, at the price of half the workgroups (more splits make up for them);
//! - **lean**: the pixel walk — instead of splitting each loader's k into (image, oi, oj) with
//!   two divisions every k-step, it carries (oi, oj) and the two storage positions from one
//!   k-step to the next (a fixed advance plus at most one carry per axis, like the tap walk of
//!   `conv/gemm.rs`) — and the half-tile skip: a column tile whose second half lies past N
//!   (N mod 128 in 1..=64: the stem's N = 147, 64-channel 3 x 3 layers' N = 576, 1 x 1
//!   layers' N = 64) multiplies out and stages only its first half, half the FMAs.

use std::fmt::Write;

use super::{check_coordinates, conv_params, row_tiles};
use crate::backend::gpu::conv::gemm::{
    self as conv_gemm, column_shift, row_offset, view_strides, Tile, K_STEP, LANES, TILE_N,
};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, word, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::backward_shape;
use crate::geometry::Conv2dParams;
use crate::layout::Layout;

/// Workgroups the weight-gradient kernel aims for (about one full wave of a large GPU).
const TARGET_WORKGROUPS: usize = 1024;
/// Fewest k-steps one split of the weight gradient walks.
const MIN_SPLIT_STEPS: usize = 32;
/// Most splits of the weight gradient's K.
pub(crate) const MAX_SPLITS: usize = 256;
/// Largest buffer of partial sums (f32 elements: 256 MiB).
pub(crate) const MAX_PARTIALS: usize = 1 << 26;

/// A variant of the weight-gradient kernel (the default: narrow tile, divisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct WeightKernel {
    /// The 128-row tile instead of the 64-row one.
    pub(crate) wide: bool,
    /// Carry each loader's pixel from one k-step to the next instead of dividing, and skip
    /// the second half of a column tile that lies past N.
    pub(crate) lean: bool,
}

impl WeightKernel {
    /// All four variants.
    pub(crate) const ALL: [WeightKernel; 4] = [
        WeightKernel {
            wide: false,
            lean: false,
        },
        WeightKernel {
            wide: true,
            lean: false,
        },
        WeightKernel {
            wide: false,
            lean: true,
        },
        WeightKernel {
            wide: true,
            lean: true,
        },
    ];

    /// The variant's prefix of an autotuner candidate's name: "", "wide-", "lean-" or
    /// "wide-lean-".
    pub(crate) fn prefix(self) -> &'static str {
        match (self.wide, self.lean) {
            (false, false) => "",
            (true, false) => "wide-",
            (false, true) => "lean-",
            (true, true) => "wide-lean-",
        }
    }
}

/// WGSL of `ConvKernel::Conv2dBackwardWeight` (after `enable f16;` where needed).
pub(crate) fn weight_source(dtype: DType, partial: bool, kernel: WeightKernel) -> String {
    let mut text = conv_gemm::source_start(dtype);
    text.push_str(&weight_source_body(partial, kernel));
    text
}

/// The grad_weight kernel body. params: [`ConvParams`](conv_gemm::ConvParams) with M = o,
/// N = c * kh * kw, K = n * oh * ow, `channels` = c, B = the input's view, A = `g`'s view and
/// `k_chunk`, the k-range of one split (a multiple of the k-step). `partial`: the output is
/// `array<f32>` with one `[M, N]` block of partial sums per split (`workgroup.z`); otherwise
/// `array<S>`, `[M, N]`.
fn weight_source_body(partial: bool, kernel: WeightKernel) -> String {
    let tile = Tile { wide: kernel.wide };
    let mut w = String::new();
    let output = if partial { "f32" } else { "S" };
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_grad: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<{output}>;"
    );
    conv_gemm::declarations(
        &mut w,
        tile,
        &[("load_input", "conv_input"), ("load_grad", "conv_grad")],
    );
    conv_gemm::entry(&mut w, tile);
    conv_gemm::b_store(&mut w, true);
    let _ = writeln!(
        w,
        "    let x_offset = params.b_offset;
    let x_n = params.b_stride_n;
    let x_c = params.b_stride_c;
    let x_h = params.b_stride_h;
    let x_w = params.b_stride_w;
    let g_n = params.a_stride_n;
    let g_c = params.a_stride_c;
    let g_h = params.a_stride_h;
    let g_w = params.a_stride_w;
    let k_chunk = params.k_chunk;
    let plane = oh * ow;
    // This split's k-range.
    let k_first = workgroup.z * k_chunk;
    let k_end = min(k_first + k_chunk, k);
    let steps = select(0u, (k_end - k_first + {k_last}u) / {K_STEP}u, k_end > k_first);
    let out_base = {out_base};
    // Loader roles: both at k0 + tx (consecutive invocations read consecutive pixels). A: rows
    // row0 + 64 * group + ty * 4 + 0..4; B: columns ty * 4 + 0..4 and {half_n} + ty * 4 + 0..4.
    let a_rows = params.a_offset + (row0 + ty * 4u) * g_c;",
        k_last = K_STEP - 1,
        out_base = if partial {
            "workgroup.z * m * columns"
        } else {
            "0u"
        },
        half_n = TILE_N / 2,
    );
    for r in 0..tile.row_count() {
        let _ = writeln!(w, "    let a_ok{r} = row0 + {} < m;", row_offset(r));
    }
    if kernel.lean {
        lean_setup(&mut w);
    }
    let _ = writeln!(
        w,
        "    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;"
    );
    // The loader's columns (ci, ki, kj): the tap's shift inside a window (`dh`, `dw`) and its
    // storage distance from the window's corner (`off`).
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let lc{j} = column0 + ty * 4u + {shift}u;
        let lok{j} = lc{j} < columns;
        let ci{j} = lc{j} / taps;
        let tap{j} = lc{j} - ci{j} * taps;
        let ki{j} = tap{j} / kw;
        let kj{j} = tap{j} - ki{j} * kw;
        let dh{j} = i32(ki{j} * dilation_h);
        let dw{j} = i32(kj{j} * dilation_w);
        let off{j} = ci{j} * x_c + ki{j} * dilation_h * x_h + kj{j} * dilation_w * x_w;"
        );
    }
    if kernel.lean {
        let _ = writeln!(
            w,
            "        var walk_k = k_first + tx;
        var walk_oi = walk_oi0;
        var walk_oj = walk_oj0;
        var walk_x = walk_x0;
        var walk_g = walk_g0;"
        );
    }
    let load = |w: &mut String, indent: &str, k0: &str| {
        // The pixel of this invocation's k (`kk`): its row and column (`oi`, `oj`), the
        // storage positions of its window's corner in x (`corner`) and of (image, row0 +
        // ty * 4, oi, oj) in g (`g_at`).
        if kernel.lean {
            let _ = writeln!(
                w,
                "{indent}{{
{indent}    let k_ok = walk_k < k_end;
{indent}    let oi = walk_oi;
{indent}    let oj = walk_oj;
{indent}    let corner = walk_x;
{indent}    let g_at = walk_g;
{indent}    let ih = i32(oi * stride_h) - i32(pad_h);
{indent}    let iw = i32(oj * stride_w) - i32(pad_w);"
            );
        } else {
            let _ = writeln!(
                w,
                "{indent}{{
{indent}    let kk = {k0} + tx;
{indent}    let k_ok = kk < k_end;
{indent}    let image = kk / plane;
{indent}    let pixel = kk - image * plane;
{indent}    let oi = pixel / ow;
{indent}    let oj = pixel - oi * ow;
{indent}    let ih = i32(oi * stride_h) - i32(pad_h);
{indent}    let iw = i32(oj * stride_w) - i32(pad_w);
{indent}    let corner = x_offset + image * x_n + bitcast<u32>(ih) * x_h + bitcast<u32>(iw) * x_w;
{indent}    let g_at = a_rows + image * g_n + oi * g_h + oj * g_w;"
            );
        }
        for j in 0..8 {
            let _ = writeln!(
                w,
                "{indent}    let v{j} = load_input(corner + off{j}, k_ok && lok{j} && bitcast<u32>(ih + dh{j}) < height && bitcast<u32>(iw + dw{j}) < width);"
            );
        }
        let _ = writeln!(
            w,
            "{indent}    pb0 = vec4<f32>(v0, v1, v2, v3);
{indent}    pb1 = vec4<f32>(v4, v5, v6, v7);"
        );
        for g in 0..tile.groups() {
            let loads: Vec<String> = (0..4)
                .map(|i| {
                    let (r, row) = (4 * g + i, 64 * g + i);
                    let at = match row {
                        0 => "g_at".to_string(),
                        1 => "g_at + g_c".to_string(),
                        _ => format!("g_at + {row}u * g_c"),
                    };
                    format!("{indent}        load_grad({at}, a_ok{r} && k_ok)")
                })
                .collect();
            let _ = writeln!(w, "{indent}    pa{g} = vec4<f32>(\n{});", loads.join(",\n"));
        }
        let _ = writeln!(w, "{indent}}}");
        if kernel.lean {
            lean_advance(w, indent);
        }
    };
    if kernel.lean {
        conv_gemm::accumulators(&mut w, tile);
        let _ = writeln!(
            w,
            "        // A column tile whose second half lies past N multiplies out its first half only.
        if (column0 + {half_n}u < columns) {{",
            half_n = TILE_N / 2
        );
        conv_gemm::main_loop_over(&mut w, tile, &load, true);
        let _ = writeln!(w, "        }} else {{");
        conv_gemm::main_loop_over(&mut w, tile, &load, false);
        let _ = writeln!(w, "        }}");
    } else {
        conv_gemm::main_loop(&mut w, tile, &load);
    }
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let oc{j} = column0 + tx * 4u + {shift}u;\n        let inside{j} = oc{j} < columns;"
        );
    }
    for r in 0..tile.row_count() {
        let _ = writeln!(
            w,
            "        {{\n            let row = row0 + {};\n            if (row < m) {{\n                let at = out_base + row * columns;",
            row_offset(r)
        );
        for j in 0..8 {
            let (half, lane) = (j / 4, LANES[j % 4]);
            let value = format!("c{r}{half}.{lane}");
            let value = if partial {
                value
            } else {
                format!("store_value(T({value}))")
            };
            let _ = writeln!(
                w,
                "                if (inside{j}) {{ conv_output[at + oc{j}] = {value}; }}"
            );
        }
        let _ = writeln!(w, "            }}\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// Start of the pixel walk (once per invocation, before the tile loop): this invocation's
/// first k, `k_first + tx`, as (oi, oj) and its positions in x (the window's corner, wrapping
/// u32 arithmetic: only in-image positions are read) and g, and what one advance by
/// [`K_STEP`] pixels adds (the image is implicit in the positions; past `k_end` nothing is
/// read).
fn lean_setup(w: &mut String) {
    let _ = writeln!(
        w,
        "    // The pixel walk: this invocation's k = k_first + tx + {K_STEP} * step as (image, oi, oj).
    let row_x = stride_h * x_h;
    let column_x = stride_w * x_w;
    let pad_x = pad_h * x_h + pad_w * x_w;
    let walk_k0 = k_first + tx;
    let walk_image0 = walk_k0 / plane;
    let walk_pixel0 = walk_k0 - walk_image0 * plane;
    let walk_oi0 = walk_pixel0 / ow;
    let walk_oj0 = walk_pixel0 - walk_oi0 * ow;
    let walk_x0 = x_offset + walk_image0 * x_n + walk_oi0 * row_x + walk_oj0 * column_x - pad_x;
    let walk_g0 = a_rows + walk_image0 * g_n + walk_oi0 * g_h + walk_oj0 * g_w;
    // One advance by {K_STEP} pixels, and the corrections when oj resp. oi wraps around.
    let pstep_image = {K_STEP}u / plane;
    let pstep_pixel = {K_STEP}u - pstep_image * plane;
    let pstep_oi = pstep_pixel / ow;
    let pstep_oj = pstep_pixel - pstep_oi * ow;
    let pstep_x = pstep_image * x_n + pstep_oi * row_x + pstep_oj * column_x;
    let pstep_g = pstep_image * g_n + pstep_oi * g_h + pstep_oj * g_w;
    let wrap_oj_x = row_x - ow * column_x;
    let wrap_oi_x = x_n - oh * row_x;
    let wrap_oj_g = g_h - ow * g_w;
    let wrap_oi_g = g_n - oh * g_h;"
    );
}

/// Advance the pixel walk by [`K_STEP`] pixels: oj + pstep_oj < 2 ow and
/// oi + pstep_oi + 1 < 2 oh, so one conditional subtraction per axis suffices.
fn lean_advance(w: &mut String, indent: &str) {
    let _ = writeln!(
        w,
        "{indent}{{
{indent}    walk_k = walk_k + {K_STEP}u;
{indent}    let oj_sum = walk_oj + pstep_oj;
{indent}    let carry_j = oj_sum >= ow;
{indent}    walk_oj = select(oj_sum, oj_sum - ow, carry_j);
{indent}    let oi_sum = walk_oi + pstep_oi + select(0u, 1u, carry_j);
{indent}    let carry_i = oi_sum >= oh;
{indent}    walk_oi = select(oi_sum, oi_sum - oh, carry_i);
{indent}    walk_x = walk_x + pstep_x + select(0u, wrap_oj_x, carry_j) + select(0u, wrap_oi_x, carry_i);
{indent}    walk_g = walk_g + pstep_g + select(0u, wrap_oj_g, carry_j) + select(0u, wrap_oi_g, carry_i);
{indent}}}"
    );
}

/// How many splits the weight gradient's K gets: enough workgroups to fill the GPU, each
/// split at least [`MIN_SPLIT_STEPS`] k-steps long, the partial sums within [`MAX_PARTIALS`].
pub(crate) fn split_count(tiles: usize, k: usize, outputs: usize) -> usize {
    let wanted = TARGET_WORKGROUPS.div_ceil(tiles.max(1));
    let by_work = k.div_ceil(K_STEP) / MIN_SPLIT_STEPS;
    let by_memory = MAX_PARTIALS / outputs.max(1);
    wanted.min(by_work).min(by_memory).clamp(1, MAX_SPLITS)
}

/// [`split_count`] for the weight gradient's GEMM of `rows` x `columns` outputs over `k`
/// (narrow or `wide` tiles, column tiles capped at the grid's `max` per dimension): the
/// kernel's default and the autotuner's centres (`conv/tuning.rs`).
pub(crate) fn weight_split_count(
    rows: usize,
    columns: usize,
    k: usize,
    max: usize,
    wide: bool,
) -> usize {
    let tiles = rows.div_ceil(Tile { wide }.rows()) * columns.div_ceil(TILE_N).min(max);
    split_count(tiles, k, rows * columns)
}

impl GpuStorage {
    /// [`GpuStorage::conv2d_backward_weight`] by the f32/f16 kernel variant `kernel` with K
    /// split `splits` ways (`None`: `split_count`'s choice for the variant's tile; the count is
    /// rounded to whole k-steps).
    pub(crate) fn conv2d_backward_weight_with(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
        (kernel, splits): (WeightKernel, Option<usize>),
    ) -> Result<GpuStorage> {
        const OP: &str = "conv2d_backward_weight";
        same_device(OP, self, grad)?;
        same_dtype(OP, self.dtype, grad.dtype)?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let shape = backward_shape(OP, grad_layout, &layout.shape, weight_shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, grad_layout, grad.len)?;
        check_coordinates(OP, &shape)?;
        let [batch, o, oh, ow] = shape.output_shape();
        let (columns, k) = (shape.patch(), batch * oh * ow);
        let numel = o * columns;
        if numel > 0 && k == 0 {
            // No images: an empty sum.
            return GpuStorage::full(&self.device, numel, self.dtype, 0.0);
        }
        if numel == 0 {
            return GpuStorage::allocate(&self.device, OP, 0, self.dtype);
        }
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let tiles_m = row_tiles(OP, o, Tile { wide: kernel.wide }, max)?;
        let tiles_n = columns.div_ceil(TILE_N);
        let splits = splits
            .unwrap_or_else(|| weight_split_count(o, columns, k, max, kernel.wide))
            .clamp(1, MAX_SPLITS);
        let k_chunk = k.div_ceil(K_STEP).div_ceil(splits) * K_STEP;
        let splits = k.div_ceil(k_chunk);
        let partial = splits > 1;
        let target = if partial {
            GpuStorage::allocate(&self.device, OP, splits * numel, DType::F32)?
        } else {
            GpuStorage::allocate(&self.device, OP, numel, self.dtype)?
        };
        let mut header = conv_params(
            [columns, o, k, shape.channels],
            &shape,
            layout,
            grad_layout.offset,
        )?;
        [
            header.a_stride_n,
            header.a_stride_c,
            header.a_stride_h,
            header.a_stride_w,
        ] = view_strides(grad_layout)?;
        header.k_chunk = word(k_chunk)?;
        // Positions the kernel computes (partial sums, split ranges) must fit 32 bits as well.
        word(splits * numel)?;
        word(splits * k_chunk)?;
        let words = Params::with_header(&header, 0);
        let grid = (tiles_n.min(max) as u32, tiles_m as u32, splits as u32);
        let key = ConvKernel::Conv2dBackwardWeight {
            dtype: self.dtype,
            partial,
            wide: kernel.wide,
            lean: kernel.lean,
        };
        context.dispatch(
            &key,
            words.words(),
            &[self.raw()?, grad.raw()?, target.raw()?],
            grid,
        )?;
        if !partial {
            return Ok(target);
        }
        super::sum_splits(&target, splits, numel, self.dtype, None)
    }
}
