//! The backward kernels of the direct (implicit-GEMM) 2-D convolution (`conv.rs`): one group,
//! F32 or F16 (stored as themselves, computed and accumulated in f32). Like the forward, no
//! im2col (or col2im) buffer is ever written: each GEMM operand that is a rearranged image is
//! gathered from the tensor, through its strides, while a workgroup stages its tile.
//!
//! - **grad_input** (`KernelKey::Conv2dBackwardInput`), the transposed convolution:
//!   `dx[ni, ci, y, x] = sum_(o, ki, kj) W[o, ci, ki, kj] * g[ni, o, oy, ox]` where
//!   `oy = (y + pad - ki * dil) / stride` when that division is exact and `oy` in range (the
//!   same for `ox`). A GEMM with M = c, N = n * h * w (columns `(ni, y, x)`), K = o * kh * kw
//!   (`r = (o, ki, kj)`): A is the weight transposed to a dense `[c, K]` (one small copy on
//!   the host side), B is gathered from `g`. With stride 1 (`unit_stride`) every tap lands on
//!   an output pixel and the exactness test disappears from the generated code. Otherwise
//!   each column's `y + pad` is split once per tile into quotient and remainder by the stride,
//!   and each k-step splits the tap's `ki * dil` likewise: the division is exact when the
//!   remainders agree, and then `oy` is the difference of the quotients (two divisions per
//!   k-step instead of two per column). Like the forward, it has the 128-row tile (`wide`)
//!   where `prefers_wide(c, n * h * w)`. A strided convolution without dilation runs as one
//!   unit-stride GEMM per phase of the stride (`backward_input_by_phases`), so no tap that
//!   falls between output pixels is walked.
//! - **grad_weight** (`KernelKey::Conv2dBackwardWeight`):
//!   `dW[o, ci, ki, kj] = sum_(ni, oi, oj) g[ni, o, oi, oj] * x[ni, ci, y, x]`, a GEMM with
//!   M = o, N = c * kh * kw, K = n * oh * ow: A is `g` read as `[o, K]` and B the input
//!   windows, both gathered. K is huge and M, N small for most layers, so K is split over
//!   `workgroup.z` ([`split_count`]): each split writes f32 partial sums, and a second small
//!   dispatch (`KernelKey::Conv2dSplitSum`) adds them up in a fixed order (deterministic) and
//!   converts to the storage type. Narrow tile only.
//!
//! Both GEMMs use the forward's tiles, K loop and (grad_input) tap walk (`conv_gemm.rs`).
//! For grad_weight the loaders walk K with consecutive invocations (K is the pixel axis, where
//! `g` and `x` are contiguous), so their global reads coalesce. Every global access is
//! bounds-checked, so any sizes work and the kernels run without wgpu's runtime checks.

use std::fmt::Write;

use super::conv_gemm::{
    self, column_shift, prefers_wide, view_strides, ConvParams, Tile, K_STEP, LANES, TILE_N,
};
use super::kernels::KernelKey;
use super::ops::{same_device, same_dtype, unsupported};
use super::params::{check_view, kernel_params, word, KernelParams, Params};
use super::storage::GpuStorage;
use super::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::backward_shape;
use crate::geometry::Conv2dParams;
use crate::geometry::Conv2dShape;
use crate::layout::Layout;

/// Workgroups the weight-gradient kernel aims for (about one full wave of a large GPU).
const TARGET_WORKGROUPS: usize = 1024;
/// Fewest k-steps one split of the weight gradient walks.
const MIN_SPLIT_STEPS: usize = 32;
/// Most splits of the weight gradient's K.
pub(crate) const MAX_SPLITS: usize = 256;
/// Largest buffer of partial sums (f32 elements: 256 MiB).
pub(crate) const MAX_PARTIALS: usize = 1 << 26;

kernel_params! {
    /// Parameters of the split-sum kernel.
    struct SplitSumParams {
        /// Elements of the weight gradient.
        len: u32,
        /// Blocks of partial sums.
        splits: u32,
    }
}

/// WGSL of `KernelKey::Conv2dBackwardInput` (after `enable f16;` where needed).
pub(crate) fn input_source(dtype: DType, unit_stride: bool, wide: bool) -> String {
    let mut text = conv_gemm::source_start(dtype);
    text.push_str(&input_source_body(unit_stride, wide));
    text
}

/// WGSL of `KernelKey::Conv2dBackwardWeight` (after `enable f16;` where needed).
pub(crate) fn weight_source(dtype: DType, partial: bool) -> String {
    let mut text = conv_gemm::source_start(dtype);
    text.push_str(&weight_source_body(partial));
    text
}

/// WGSL of `KernelKey::Conv2dSplitSum` (after `enable f16;` where needed).
pub(crate) fn split_sum_source(dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(SplitSumParams::WGSL);
    text.push_str(COMMON);
    text.push_str(SPLIT_SUM);
    text
}

/// The catalogue entries of the three gradient families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<KernelKey>, dtype: DType) {
    if !dtype.is_float() {
        return;
    }
    for flag in [false, true] {
        for wide in [false, true] {
            keys.push(KernelKey::Conv2dBackwardInput {
                dtype,
                unit_stride: flag,
                wide,
            });
        }
        keys.push(KernelKey::Conv2dBackwardWeight {
            dtype,
            partial: flag,
        });
    }
    keys.push(KernelKey::Conv2dSplitSum { dtype });
}

/// The grad_input kernel body (after `conv_gemm::source_start`) for the narrow or `wide`
/// tile. params: [`ConvParams`] with M = c, K = o * kh * kw, `channels` = o, B = `g`'s view
/// and A = the transposed weight (dense `[c, K]`).
fn input_source_body(unit_stride: bool, wide: bool) -> String {
    let tile = Tile { wide };
    let mut w = String::new();
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_grad: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;"
    );
    conv_gemm::declarations(
        &mut w,
        tile,
        &[("load_weight", "conv_weight"), ("load_grad", "conv_grad")],
    );
    conv_gemm::entry(&mut w, tile);
    conv_gemm::b_store(&mut w, false);
    let _ = writeln!(
        w,
        "    let g_offset = params.b_offset;
    let g_n = params.b_stride_n;
    let g_c = params.b_stride_c;
    let g_h = params.b_stride_h;
    let g_w = params.b_stride_w;
    let plane = height * width;
    let k_first = 0u;
    let steps = (k + {k_last}u) / {K_STEP}u;",
        k_last = K_STEP - 1,
    );
    conv_gemm::dense_a_setup(&mut w, tile);
    // The walk's shift: with unit stride, tap (oc, ki, kj) reads g at
    // oc * g_c + (y + pad - ki * dil) * g_h + ...: the tap's part is linear in (oc, ki, kj).
    // Otherwise only oc's part is; the rest is computed per k-step.
    let strides = if unit_stride {
        ["g_c", "0u - dilation_h * g_h", "0u - dilation_w * g_w"]
    } else {
        ["g_c", "0u", "0u"]
    };
    conv_gemm::walk_setup(&mut w, strides);
    let _ = writeln!(
        w,
        "    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;"
    );
    // Column j is input pixel (image, y, x); `hy`, `wx` are y + pad, x + pad. Unit stride:
    // `corner` is where g would hold (image, 0, hy, wx) (wrapping: only the taps' in-range
    // positions are read), and a column past N gets hy = 0xffffffff, which no tap brings back
    // into range. Otherwise `qy`, `ey` (`qx`, `ex`) are hy (wx) divided by the stride and the
    // remainder; a column past N gets ey = 0xffffffff, which no tap's remainder matches.
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let col{j} = column0 + tx * 4u + {shift}u;
        let image{j} = col{j} / plane;
        let pixel{j} = col{j} - image{j} * plane;
        let y{j} = pixel{j} / width;
        let wx{j} = pixel{j} - y{j} * width + pad_w;"
        );
        if unit_stride {
            let _ = writeln!(
                w,
                "        let hy{j} = select(0xffffffffu, y{j} + pad_h, col{j} < columns);
        let corner{j} = g_offset + image{j} * g_n + hy{j} * g_h + wx{j} * g_w;"
            );
        } else {
            let _ = writeln!(
                w,
                "        let hy{j} = y{j} + pad_h;
        let qy{j} = hy{j} / stride_h;
        let ey{j} = select(0xffffffffu, hy{j} - qy{j} * stride_h, col{j} < columns);
        let qx{j} = wx{j} / stride_w;
        let ex{j} = wx{j} - qx{j} * stride_w;
        let corner{j} = g_offset + image{j} * g_n + qy{j} * g_h + qx{j} * g_w;"
            );
        }
    }
    conv_gemm::walk_start(&mut w);
    // `hy - dh` (and `qy - qdh`) wraps to >= 2^31 when negative (the host keeps every
    // coordinate below 2^31), so the `< oh` test rejects it.
    let load = |w: &mut String, indent: &str, k0: &str| {
        let _ = writeln!(
            w,
            "{indent}{{
{indent}    let r_ok = walk_r < k;
{indent}    let dh = walk_ki * dilation_h;
{indent}    let dw = walk_kj * dilation_w;"
        );
        if unit_stride {
            for j in 0..8 {
                let _ = writeln!(
                    w,
                    "{indent}    let v{j} = load_grad(corner{j} + walk_shift, r_ok && hy{j} - dh < oh && wx{j} - dw < ow);"
                );
            }
        } else {
            let _ = writeln!(
                w,
                "{indent}    let qdh = dh / stride_h;
{indent}    let edh = dh - qdh * stride_h;
{indent}    let qdw = dw / stride_w;
{indent}    let edw = dw - qdw * stride_w;
{indent}    let shift = walk_shift - qdh * g_h - qdw * g_w;"
            );
            for j in 0..8 {
                let _ = writeln!(
                    w,
                    "{indent}    let v{j} = load_grad(corner{j} + shift, r_ok && ey{j} == edh && ex{j} == edw && qy{j} - qdh < oh && qx{j} - qdw < ow);"
                );
            }
        }
        let _ = writeln!(
            w,
            "{indent}    pb0 = vec4<f32>(v0, v1, v2, v3);
{indent}    pb1 = vec4<f32>(v4, v5, v6, v7);
{indent}}}"
        );
        conv_gemm::walk_advance(w, indent);
        conv_gemm::dense_a_load(w, tile, indent, k0);
    };
    conv_gemm::main_loop(&mut w, tile, &load);
    conv_gemm::store_nchw(&mut w, tile);
    w
}

/// The grad_weight kernel body (narrow tile). params: [`ConvParams`] with M = o,
/// N = c * kh * kw, K = n * oh * ow, `channels` = c, B = the input's view, A = `g`'s view and
/// `k_chunk`, the k-range of one split (a multiple of the k-step). `partial`: the output is
/// `array<f32>` with one `[M, N]` block of partial sums per split (`workgroup.z`); otherwise
/// `array<S>`, `[M, N]`.
fn weight_source_body(partial: bool) -> String {
    let tile = Tile { wide: false };
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
    // row0 + ty * 4 + 0..4; B: columns ty * 4 + 0..4 and {half_n} + ty * 4 + 0..4.
    let a_rows = params.a_offset + (row0 + ty * 4u) * g_c;
    let a_ok0 = row0 + ty * 4u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;",
        k_last = K_STEP - 1,
        out_base = if partial {
            "workgroup.z * m * columns"
        } else {
            "0u"
        },
        half_n = TILE_N / 2,
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
    let load = |w: &mut String, indent: &str, k0: &str| {
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
{indent}    let corner = x_offset + image * x_n + bitcast<u32>(ih) * x_h + bitcast<u32>(iw) * x_w;"
        );
        for j in 0..8 {
            let _ = writeln!(
                w,
                "{indent}    let v{j} = load_input(corner + off{j}, k_ok && lok{j} && bitcast<u32>(ih + dh{j}) < height && bitcast<u32>(iw + dw{j}) < width);"
            );
        }
        let _ = writeln!(
            w,
            "{indent}    pb0 = vec4<f32>(v0, v1, v2, v3);
{indent}    pb1 = vec4<f32>(v4, v5, v6, v7);
{indent}    let g_at = a_rows + image * g_n + oi * g_h + oj * g_w;
{indent}    pa0 = vec4<f32>(
{indent}        load_grad(g_at, a_ok0 && k_ok),
{indent}        load_grad(g_at + g_c, a_ok1 && k_ok),
{indent}        load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
{indent}        load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
{indent}}}"
        );
    };
    conv_gemm::main_loop(&mut w, tile, &load);
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let oc{j} = column0 + tx * 4u + {shift}u;\n        let inside{j} = oc{j} < columns;"
        );
    }
    for i in 0..4 {
        let _ = writeln!(
            w,
            "        {{\n            let row = row0 + ty * 4u + {i}u;\n            if (row < m) {{\n                let at = out_base + row * columns;"
        );
        for j in 0..8 {
            let (half, lane) = (j / 4, LANES[j % 4]);
            let value = format!("c{i}{half}.{lane}");
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

/// The split-sum kernel body: `out[i] = sum over s of partials[s * len + i]` (f32, in split
/// order), stored as `S`. params: [`SplitSumParams`].
const SPLIT_SUM: &str = r#"@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> reduced: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    let len = params.len;
    let splits = params.splits;
    if (i >= len) {
        return;
    }
    var total: f32 = 0.0;
    for (var s = 0u; s < splits; s = s + 1u) {
        total = total + partials[s * len + i];
    }
    reduced[i] = store_value(T(total));
}
"#;

/// How many splits the weight gradient's K gets: enough workgroups to fill the GPU, each
/// split at least [`MIN_SPLIT_STEPS`] k-steps long, the partial sums within [`MAX_PARTIALS`].
pub(crate) fn split_count(tiles: usize, k: usize, outputs: usize) -> usize {
    let wanted = TARGET_WORKGROUPS.div_ceil(tiles.max(1));
    let by_work = k.div_ceil(K_STEP) / MIN_SPLIT_STEPS;
    let by_memory = MAX_PARTIALS / outputs.max(1);
    wanted.min(by_work).min(by_memory).clamp(1, MAX_SPLITS)
}

/// [`split_count`] for the weight gradient's GEMM of `rows` x `columns` outputs over `k`
/// (narrow tiles, column tiles capped at the grid's `max` per dimension): the kernel's
/// default and the autotuner's centre (`conv_tuning.rs`).
pub(crate) fn weight_split_count(rows: usize, columns: usize, k: usize, max: usize) -> usize {
    let tiles = rows.div_ceil(Tile { wide: false }.rows()) * columns.div_ceil(TILE_N).min(max);
    split_count(tiles, k, rows * columns)
}

/// Largest value a coordinate computation in the kernels may reach (they compute window
/// positions in i32 and rely on negative ones wrapping to at least 2^31 as u32).
const COORDINATE_LIMIT: usize = i32::MAX as usize;

/// Refuse geometries whose coordinates (image size + padding + kernel reach + output origin)
/// could overflow the kernels' 32-bit arithmetic (the forward's check).
pub(crate) fn check_coordinates(op: &'static str, shape: &Conv2dShape) -> Result<()> {
    let fits = |size: usize, out: usize, stride: usize, pad: usize, k: usize, d: usize| match (
        (k - 1).checked_mul(d),
        out.checked_mul(stride),
    ) {
        (Some(reach), Some(origin)) => [size, pad, reach, origin]
            .iter()
            .try_fold(0usize, |sum, &value| sum.checked_add(value))
            .is_some_and(|sum| sum <= COORDINATE_LIMIT),
        _ => false,
    };
    let ((h, w), (kh, kw), (oh, ow)) = (shape.input, shape.kernel, shape.output);
    let (s, p, d) = (shape.stride, shape.padding, shape.dilation);
    if fits(h, oh, s.0, p.0, kh, d.0) && fits(w, ow, s.1, p.1, kw, d.1) {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            "sizes, padding, stride or dilation too large for the GPU's 32-bit indexing",
        ))
    }
}

/// The parameters shared by both gradient kernels (`other`: the channel count that is
/// neither M nor N), B's view `b` and A's offset.
fn conv_params(
    [columns, m, k, other]: [usize; 4],
    shape: &Conv2dShape,
    b: &Layout,
    a_offset: usize,
) -> Result<ConvParams> {
    let (s, p, d) = (shape.stride, shape.padding, shape.dilation);
    ConvParams::new(
        [
            columns,
            m,
            k,
            other,
            shape.input.0,
            shape.input.1,
            shape.output.0,
            shape.output.1,
            shape.kernel.0,
            shape.kernel.1,
            s.0,
            s.1,
            p.0,
            p.1,
            d.0,
            d.1,
        ],
        b,
        a_offset,
    )
}

/// Row tiles of M for `tile`, refused beyond the grid's limit.
fn row_tiles(op: &'static str, m: usize, tile: Tile, max: usize) -> Result<usize> {
    let tiles = m.div_ceil(tile.rows());
    if tiles > max {
        return Err(Error::invalid(
            op,
            format!("{m} channels need more than {max} tiles; split the weight"),
        ));
    }
    Ok(tiles)
}

impl GpuStorage {
    /// [`GpuStorage::conv2d_backward_input`] with the tile forced (`Some(wide)`) or chosen by
    /// `prefers_wide` (`None`).
    pub(crate) fn conv2d_backward_input_with(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
        wide: Option<bool>,
    ) -> Result<GpuStorage> {
        const OP: &str = "conv2d_backward_input";
        same_device(OP, self, weight)?;
        same_dtype(OP, self.dtype, weight.dtype)?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let shape = backward_shape(OP, layout, input_shape, &weight_layout.shape, params)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, weight_layout, weight.len)?;
        check_coordinates(OP, &shape)?;
        let (batch, c, (h, w)) = (shape.batch, shape.channels, shape.input);
        let k = shape.out_channels * shape.kernel.0 * shape.kernel.1;
        let numel = batch * c * h * w;
        if numel > 0 && k == 0 {
            // No output channel: nothing flows back.
            return GpuStorage::full(&self.device, numel, self.dtype, 0.0);
        }
        if numel == 0 {
            return GpuStorage::allocate(&self.device, OP, numel, self.dtype);
        }
        if shape.stride != (1, 1) && shape.dilation == (1, 1) {
            return self.backward_input_by_phases(layout, weight, weight_layout, &shape, wide);
        }
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        self.launch_backward_input(layout, weight, weight_layout, &shape, wide, &out)?;
        Ok(out)
    }

    /// The input gradient of a strided convolution as `stride.0 · stride.1` unit-stride ones.
    /// With stride `s`, input row `y = s·y' + φ` receives only the taps `ki ≡ φ + pad (mod s)`
    /// (the others fall between output pixels): `ki = k0 + s·a` with `k0 = (φ + pad) mod s`,
    /// from output row `oy = y' + ⌊(φ + pad) / s⌋ − a`. So each phase `(φh, φw)` is the input
    /// gradient of a unit-stride convolution with the sub-kernel `W[.., k0h::s, k0w::s]` (a
    /// strided view) and padding `⌊(φ + pad) / s⌋`, over the phase's `⌈(h − φ) / s⌉` rows, and
    /// is copied into every `s`-th row and column of the result. No tap that lands between
    /// output pixels is walked (three quarters of them at stride 2); a phase without taps
    /// (a 1×1 kernel at stride 2, odd rows) stays zero.
    fn backward_input_by_phases(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        shape: &Conv2dShape,
        wide: Option<bool>,
    ) -> Result<GpuStorage> {
        const OP: &str = "conv2d_backward_input";
        let (batch, c, (h, w)) = (shape.batch, shape.channels, shape.input);
        let ((stride_h, stride_w), (pad_h, pad_w)) = (shape.stride, shape.padding);
        let (kernel_h, kernel_w) = shape.kernel;
        let numel = batch * c * h * w;
        let tapless = |stride: usize, pad: usize, kernel: usize| {
            (0..stride).any(|phase| (phase + pad) % stride >= kernel)
        };
        let mut out = if tapless(stride_h, pad_h, kernel_h) || tapless(stride_w, pad_w, kernel_w) {
            GpuStorage::full(&self.device, numel, self.dtype, 0.0)?
        } else {
            GpuStorage::allocate(&self.device, OP, numel, self.dtype)?
        };
        let weight_strides = &weight_layout.strides;
        for phase_h in 0..stride_h.min(h) {
            for phase_w in 0..stride_w.min(w) {
                let (first_h, first_w) =
                    ((phase_h + pad_h) % stride_h, (phase_w + pad_w) % stride_w);
                if first_h >= kernel_h || first_w >= kernel_w {
                    continue;
                }
                let (rows, columns) = (
                    (h - phase_h).div_ceil(stride_h),
                    (w - phase_w).div_ceil(stride_w),
                );
                let taps = (
                    (kernel_h - first_h).div_ceil(stride_h),
                    (kernel_w - first_w).div_ceil(stride_w),
                );
                let sub_weight = Layout {
                    shape: vec![shape.out_channels, c, taps.0, taps.1],
                    strides: vec![
                        weight_strides[0],
                        weight_strides[1],
                        weight_strides[2] * stride_h,
                        weight_strides[3] * stride_w,
                    ],
                    offset: weight_layout.offset
                        + first_h * weight_strides[2]
                        + first_w * weight_strides[3],
                };
                let phase = Conv2dShape {
                    input: (rows, columns),
                    kernel: taps,
                    stride: (1, 1),
                    padding: ((phase_h + pad_h) / stride_h, (phase_w + pad_w) / stride_w),
                    ..*shape
                };
                let part_shape = [batch, c, rows, columns];
                let part = GpuStorage::allocate(
                    &self.device,
                    OP,
                    part_shape.iter().product(),
                    self.dtype,
                )?;
                self.launch_backward_input(layout, weight, &sub_weight, &phase, wide, &part)?;
                let target = Layout {
                    shape: part_shape.to_vec(),
                    strides: vec![c * h * w, h * w, stride_h * w, stride_w],
                    offset: phase_h * w + phase_w,
                };
                part.copy_into(&Layout::contiguous(&part_shape), &mut out, &target)?;
            }
        }
        Ok(out)
    }

    /// Record the input-gradient GEMM of `shape` (its output `[n, c, h, w]` into `out`).
    fn launch_backward_input(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        shape: &Conv2dShape,
        wide: Option<bool>,
        out: &GpuStorage,
    ) -> Result<()> {
        const OP: &str = "conv2d_backward_input";
        let (batch, c, (h, w)) = (shape.batch, shape.channels, shape.input);
        let (columns, k) = (
            batch * h * w,
            shape.out_channels * shape.kernel.0 * shape.kernel.1,
        );
        let numel = batch * c * h * w;
        // A = the weight transposed to a dense [c, o * kh * kw] (weights are small to copy).
        let transposed = weight.copy_strided(&weight_layout.permute(&[1, 0, 2, 3]))?;
        let header = conv_params([columns, c, k, shape.out_channels], shape, layout, 0)?;
        // Positions the kernel computes (output and weight) must fit 32 bits as well.
        word(numel)?;
        word(c * k)?;
        let words = Params::with_header(&header, 0);
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let wide = wide.unwrap_or_else(|| prefers_wide(c, columns));
        let tiles_m = row_tiles(OP, c, Tile { wide }, max)?;
        // Column tiles beyond the grid's limit are walked by the kernel's grid-stride loop.
        let grid = (columns.div_ceil(TILE_N).min(max) as u32, tiles_m as u32, 1);
        let key = KernelKey::Conv2dBackwardInput {
            dtype: self.dtype,
            unit_stride: shape.stride == (1, 1),
            wide,
        };
        context.dispatch(
            &key,
            words.words(),
            &[self.raw()?, transposed.raw()?, out.raw()?],
            grid,
        )?;
        Ok(())
    }

    /// [`GpuStorage::conv2d_backward_weight`] by the f32/f16 kernel with K split `splits` ways
    /// (`None`: `split_count`'s choice; the count is rounded to whole k-steps).
    pub(crate) fn conv2d_backward_weight_with(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
        splits: Option<usize>,
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
        let tiles_m = row_tiles(OP, o, Tile { wide: false }, max)?;
        let tiles_n = columns.div_ceil(TILE_N);
        let splits = splits
            .unwrap_or_else(|| weight_split_count(o, columns, k, max))
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
        let key = KernelKey::Conv2dBackwardWeight {
            dtype: self.dtype,
            partial,
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
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        let header = SplitSumParams {
            len: word(numel)?,
            splits: word(splits)?,
        };
        let words = Params::with_header(&header, 0);
        let key = KernelKey::Conv2dSplitSum { dtype: self.dtype };
        GpuStorage::launch(
            &self.device,
            &key,
            &words,
            &[target.raw()?, out.raw()?],
            numel,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
