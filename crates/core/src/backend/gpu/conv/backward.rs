//! The backward kernels of the direct (implicit-GEMM) 2-D convolution (`conv/direct.rs`): one group,
//! F32 or F16 (stored as themselves, computed and accumulated in f32). Like the forward, no
//! im2col (or col2im) buffer is ever written: each GEMM operand that is a rearranged image is
//! gathered from the tensor, through its strides, while a workgroup stages its tile.
//!
//! - **grad_input** (`ConvKernel::Conv2dBackwardInput`), the transposed convolution:
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
//! - **grad_weight** (`ConvKernel::Conv2dBackwardWeight`, `conv/backward/weight.rs`):
//!   `dW[o, ci, ki, kj] = sum_(ni, oi, oj) g[ni, o, oi, oj] * x[ni, ci, y, x]`, a GEMM with
//!   M = o, N = c * kh * kw, K = n * oh * ow, K split over `workgroup.z` with a deterministic
//!   split-sum (`ConvKernel::Conv2dSplitSum`); narrow or wide tile, lean (pixel walk, half-tile
//!   skip) or not.
//!
//! Both GEMMs use the forward's tiles, K loop and (grad_input) tap walk (`conv/gemm.rs`).
//! For grad_weight the loaders walk K with consecutive invocations (K is the pixel axis, where
//! `g` and `x` are contiguous), so their global reads coalesce. Every global access is
//! bounds-checked, so any sizes work and the kernels run without wgpu's runtime checks.

use std::fmt::Write;

use crate::backend::gpu::conv::gemm::{
    self as conv_gemm, column_shift, prefers_wide, ConvParams, Tile, K_STEP, TILE_N,
};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, word, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::backward_shape;
use crate::geometry::Conv2dParams;
use crate::geometry::Conv2dShape;
use crate::layout::Layout;

mod split_sum;
mod weight;

pub(crate) use split_sum::{split_sum_source, sum_splits, Permutation};
pub(crate) use weight::{
    weight_source, weight_split_count, WeightKernel, MAX_PARTIALS, MAX_SPLITS,
};

/// WGSL of `ConvKernel::Conv2dBackwardInput` (after `enable f16;` where needed).
pub(crate) fn input_source(dtype: DType, unit_stride: bool, wide: bool) -> String {
    let mut text = conv_gemm::source_start(dtype);
    text.push_str(&input_source_body(unit_stride, wide));
    text
}

/// The catalogue entries of the three gradient families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<ConvKernel>, dtype: DType) {
    if !dtype.is_float() {
        return;
    }
    for flag in [false, true] {
        for wide in [false, true] {
            keys.push(ConvKernel::Conv2dBackwardInput {
                dtype,
                unit_stride: flag,
                wide,
            });
        }
        for kernel in WeightKernel::ALL {
            keys.push(ConvKernel::Conv2dBackwardWeight {
                dtype,
                partial: flag,
                wide: kernel.wide,
                lean: kernel.lean,
            });
        }
    }
    keys.push(ConvKernel::Conv2dSplitSum { dtype });
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
    conv_gemm::store_nchw(&mut w, tile, None);
    w
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
        let key = ConvKernel::Conv2dBackwardInput {
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
}

#[cfg(test)]
mod tests;
