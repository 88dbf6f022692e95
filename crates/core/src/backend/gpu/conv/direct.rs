//! The direct (implicit-GEMM) 2-D convolution: one group, no bias, F32 or F16 (stored as
//! themselves, computed and accumulated in f32). No im2col buffer is ever written.
//!
//! The convolution is the product `out[o, col] = sum_r W[o, r] * B[r, col]` with
//! `r = (ci, ki, kj)` (K = c * kh * kw) and `col = (ni, oi, oj)` (N = n * oh * ow: the batch is
//! folded into the columns, so late layers with 7 x 7 outputs still fill the tiles). `W` is
//! the weight read as a dense `[o, K]` matrix; `B[r, col]` is the input pixel that window
//! `col` sees at tap `r` — or zero in the padding — gathered from the input (any strides)
//! while a workgroup stages its tile of `B` into workgroup memory. Results go straight to
//! `out[ni, o, oi, oj]` (contiguous).
//!
//! The tiles, the double-buffered K loop and the tap walk are `conv/gemm.rs`'s: 64 x 128
//! (narrow) or 128 x 128 (wide, `ConvKernel::Conv2d { wide: true }`, chosen by
//! `prefers_wide`: at least 128 output channels and 264 wide tiles) per workgroup of 256
//! invocations, 4 x 8 resp. 8 x 8 outputs per invocation in named `vec4` accumulators, K-step
//! 16. Per k-step, each invocation loads:
//! - W's block: four (narrow) or eight (wide) channels at one k, consecutive invocations
//!   reading consecutive k of a row, into one resp. two `vec4` stores;
//! - B's block: one tap `r = k0 + ty` for its own eight columns, whose window origins (`base`,
//!   `h`, `w`) it computes once per column tile. The tap's `(ki, kj)` and storage shift are
//!   carried from one k-step to the next (no division); a k-step costs the walk's dozen
//!   adds and selects, two multiplications (the dilated offsets) and per column three adds,
//!   two compares and one bounds-checked scalar gather.
//!
//! Every global access is bounds-checked (row < o, r < K, col < N, 0 <= pixel < h, w), so any
//! sizes work and the kernel is safe to compile without wgpu's runtime checks.

use std::fmt::Write;

use crate::backend::gpu::conv::epilogue::{self as conv_epilogue, BoundEpilogue, ConvEpilogueKey};
use crate::backend::gpu::conv::gemm::{
    self as conv_gemm, column_shift, prefers_wide, ConvParams, Tile, K_STEP, TILE_N,
};
use crate::backend::gpu::conv::kernel::ConvKernel;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, is_dense, word, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::Conv2dParams;
use crate::geometry::Conv2dShape;
use crate::layout::Layout;

/// WGSL of `ConvKernel::Conv2d` (after `enable f16;` where needed).
pub(crate) fn source(dtype: DType, wide: bool, epilogue: Option<ConvEpilogueKey>) -> String {
    let mut text = conv_gemm::source_start(dtype);
    text.push_str(&source_body(wide, epilogue));
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<ConvKernel>, dtype: DType) {
    if dtype.is_float() {
        for wide in [false, true] {
            let epilogues =
                std::iter::once(None).chain(ConvEpilogueKey::all().into_iter().map(Some));
            for epilogue in epilogues {
                keys.push(ConvKernel::Conv2d {
                    dtype,
                    wide,
                    epilogue,
                });
            }
        }
    }
}

/// The kernel body (after `conv_gemm::source_start`) for the narrow or the `wide` tile, with
/// the `epilogue`'s bindings and store where it has one.
/// params: [`ConvParams`] with N = columns, M = o, K = c * kh * kw, B = the input's view and
/// A = the weight, dense `[o, K]`.
fn source_body(wide: bool, epilogue: Option<ConvEpilogueKey>) -> String {
    let tile = Tile { wide };
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;"
    );
    w.push_str(&conv_epilogue::declarations(epilogue, 4));
    conv_gemm::declarations(
        &mut w,
        tile,
        &[("load_weight", "conv_weight"), ("load_input", "conv_input")],
    );
    conv_gemm::entry(&mut w, tile);
    conv_gemm::b_store(&mut w, false);
    let _ = writeln!(
        w,
        "    let in_offset = params.b_offset;
    let in_n = params.b_stride_n;
    let in_c = params.b_stride_c;
    let in_h = params.b_stride_h;
    let in_w = params.b_stride_w;
    let plane = oh * ow;
    let k_first = 0u;
    let steps = (k + {k_last}u) / {K_STEP}u;",
        k_last = K_STEP - 1,
    );
    conv_gemm::dense_a_setup(&mut w, tile);
    conv_gemm::walk_setup(&mut w, ["in_c", "dilation_h * in_h", "dilation_w * in_w"]);
    let _ = writeln!(
        w,
        "    // Column tiles in a grid-stride loop (any N fits the grid).
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;"
    );
    // This invocation's eight columns: where their windows start (`h{j}`, `w{j}`: may be
    // negative in the padding) and the storage position of that corner (`base{j}`, wrapping
    // u32 arithmetic: only positions inside the image are ever read). A column past N gets
    // `h = height`, which no tap brings back inside.
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let col{j} = column0 + tx * 4u + {shift}u;
        let image{j} = col{j} / plane;
        let pixel{j} = col{j} - image{j} * plane;
        let oi{j} = pixel{j} / ow;
        let oj{j} = pixel{j} - oi{j} * ow;
        let h{j} = select(i32(height), i32(oi{j} * stride_h) - i32(pad_h), col{j} < columns);
        let w{j} = i32(oj{j} * stride_w) - i32(pad_w);
        let base{j} = in_offset + image{j} * in_n + bitcast<u32>(h{j}) * in_h + bitcast<u32>(w{j}) * in_w;"
        );
    }
    conv_gemm::walk_start(&mut w);
    // The global loads of the k-block starting at `k0` (B at the walk's tap, which then
    // advances; W at k0 + tx) into the registers.
    let load = |w: &mut String, indent: &str, k0: &str| {
        let _ = writeln!(
            w,
            "{indent}{{
{indent}    let r_ok = walk_r < k;
{indent}    let dh = i32(walk_ki * dilation_h);
{indent}    let dw = i32(walk_kj * dilation_w);"
        );
        for j in 0..8 {
            let _ = writeln!(
                w,
                "{indent}    let v{j} = load_input(base{j} + walk_shift, r_ok && bitcast<u32>(h{j} + dh) < height && bitcast<u32>(w{j} + dw) < width);"
            );
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
    conv_gemm::store_nchw(&mut w, tile, epilogue);
    w
}

/// Largest value a coordinate computation in the kernel may reach: it computes window
/// positions in i32.
const COORDINATE_LIMIT: usize = i32::MAX as usize;

impl GpuStorage {
    /// [`GpuStorage::conv2d`] with the tile forced (`Some(wide)`) or chosen by
    /// `prefers_wide` (`None`), and the `epilogue` applied in the store where there is one.
    pub(crate) fn conv2d_with(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        wide: Option<bool>,
        epilogue: Option<&BoundEpilogue<'_>>,
    ) -> Result<GpuStorage> {
        same_device("conv2d", self, weight)?;
        same_dtype("conv2d", self.dtype, weight.dtype)?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported("conv2d", self.dtype, &self.device));
        }
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        check_view("conv2d", layout, self.len)?;
        check_view("conv2d", weight_layout, weight.len)?;
        let (h, w) = shape.input;
        let (kh, kw) = shape.kernel;
        let (oh, ow) = shape.output;
        // Every window coordinate (origin, tap shift, padding, image size) must fit i32.
        let axis_fits = |size: usize, out: usize, stride: usize, pad: usize, k: usize, d: usize| {
            let reach = (k - 1).checked_mul(d);
            let origin = out.checked_mul(stride);
            match (reach, origin) {
                (Some(reach), Some(origin)) => [size, pad, reach, origin]
                    .iter()
                    .try_fold(0usize, |sum, &value| sum.checked_add(value))
                    .is_some_and(|sum| sum <= COORDINATE_LIMIT),
                _ => false,
            }
        };
        let (s, p, d) = (shape.stride, shape.padding, shape.dilation);
        if !axis_fits(h, oh, s.0, p.0, kh, d.0) || !axis_fits(w, ow, s.1, p.1, kw, d.1) {
            return Err(Error::invalid(
                "conv2d",
                "sizes, padding, stride or dilation too large for the GPU's 32-bit indexing",
            ));
        }
        let [batch, o, _, _] = shape.output_shape();
        let (columns, patch) = (batch * oh * ow, shape.patch());
        let numel = batch * o * oh * ow;
        if patch == 0 && epilogue.is_none() {
            // An empty sum (no input channels): zeros.
            return GpuStorage::full(&self.device, numel, self.dtype, 0.0);
        }
        let out = GpuStorage::allocate(&self.device, "conv2d", numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        // The kernel reads the weight as a dense [o, K] matrix (weights are small to copy).
        let dense;
        let (weight, weight_layout) = if is_dense(weight_layout) {
            (weight, weight_layout)
        } else {
            dense = (
                weight.copy_strided(weight_layout)?,
                Layout::contiguous(&weight_layout.shape),
            );
            (&dense.0, &dense.1)
        };
        let header = ConvParams::new(
            [
                columns,
                o,
                patch,
                shape.channels,
                h,
                w,
                oh,
                ow,
                kh,
                kw,
                s.0,
                s.1,
                p.0,
                p.1,
                d.0,
                d.1,
            ],
            layout,
            weight_layout.offset,
        )?;
        // Positions the kernel computes (output and weight) must fit 32 bits as well.
        word(numel)?;
        word(weight_layout.offset + o * patch)?;
        let words = Params::with_header(&header, 0);
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let wide = wide.unwrap_or_else(|| prefers_wide(o, columns));
        let tiles_m = o.div_ceil(Tile { wide }.rows());
        if tiles_m > max {
            return Err(Error::invalid(
                "conv2d",
                format!("{o} output channels need more than {max} tiles; split the weight"),
            ));
        }
        // Column tiles beyond the grid's limit are walked by the kernel's grid-stride loop.
        let grid = (columns.div_ceil(TILE_N).min(max) as u32, tiles_m as u32, 1);
        let key = ConvKernel::Conv2d {
            dtype: self.dtype,
            wide,
            epilogue: epilogue.map(|e| e.key),
        };
        let mut buffers = vec![self.raw()?, weight.raw()?, out.raw()?];
        if let Some(epilogue) = epilogue {
            buffers.extend(epilogue.buffers()?);
        }
        context.dispatch(&key, words.words(), &buffers, grid)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::contract::Convolution;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::conv::gemm::testing::{check, gpu, params, upload, values, Case};
    use crate::backend::gpu::conv::kernel::ConvKernel;
    use crate::backend::gpu::runtime::kernel::Kernel;
    use crate::dtype::DType;
    use crate::layout::Layout;

    /// Both tiles' kernels parse, validate and translate to SPIR-V for both float storage
    /// types (`all_kernel_sources` covers them too; this names the failure).
    #[test]
    fn conv_kernels_validate() {
        for dtype in [DType::F32, DType::F16] {
            for wide in [false, true] {
                let source = ConvKernel::Conv2d {
                    dtype,
                    wide,
                    epilogue: None,
                }
                .source();
                if let Err(error) = crate::backend::gpu::runtime::shader_check::naga_check(&source)
                {
                    panic!("{error}");
                }
            }
        }
    }

    /// Both tiles, forced whatever `prefers_wide` says, against the CPU's f32 convolution of
    /// the same (rounded) values: two row tiles with a partial second (160, 136 and 130
    /// channels), partial column tiles and k-steps, taps wider than a k-step (7 x 7, the walk
    /// advancing 2 rows and 2 columns), 1 x 1 (the walk advancing 16 channels), stride,
    /// dilation, padding, and a strided input view at an offset.
    #[test]
    fn both_tiles_match_cpu() {
        let Some(device) = gpu() else { return };
        #[rustfmt::skip]
        let cases: [Case; 6] = [
            // name, [n, c, h, w], o, [kh, kw], [stride, padding, dilation], strided input
            ("3x3 pad 1", [2, 8, 12, 12], 160, [3, 3], [1, 1, 1, 1, 1, 1], false),
            ("3x3 stride 2", [2, 8, 12, 12], 128, [3, 3], [2, 2, 1, 1, 1, 1], false),
            ("1x1", [2, 20, 9, 9], 130, [1, 1], [1, 1, 0, 0, 1, 1], false),
            ("non-square dilated", [2, 5, 11, 10], 136, [2, 3], [2, 1, 1, 0, 1, 2], false),
            ("7x7 stride 2 pad 3", [1, 3, 20, 20], 128, [7, 7], [2, 2, 3, 3, 1, 1], false),
            ("strided view", [2, 6, 9, 8], 144, [3, 3], [1, 1, 1, 1, 1, 1], true),
        ];
        for dtype in [DType::F32, DType::F16] {
            if dtype == DType::F16
                && !crate::backend::tests::support::has_or_skip(
                    &device,
                    crate::backend::tests::support::Requirement::F16,
                    "the F16 cases",
                )
            {
                continue;
            }
            for (name, [n, c, h, w], o, [kh, kw], geometry, strided) in cases {
                let params = params(geometry);
                // The strided input: [n, h, c + 1, w] storage at offset 1, viewed as
                // [n, c, h, w].
                let (input_len, layout) = if strided {
                    let mut l = Layout::contiguous(&[n, h, c + 1, w]).permute(&[0, 2, 1, 3]);
                    l.shape[1] = c;
                    l.offset = 1;
                    (n * h * (c + 1) * w + 1, l)
                } else {
                    (n * c * h * w, Layout::contiguous(&[n, c, h, w]))
                };
                let weight_layout = Layout::contiguous(&[o, c, kh, kw]);
                let x = values(input_len, 1, dtype);
                let k = values(o * c * kh * kw, 2, dtype);
                let CpuStorage::F32(expected) =
                    CpuStorage::F32(crate::backend::cpu::HostBuffer::from(x.clone()))
                        .conv2d(
                            &layout,
                            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(k.clone())),
                            &weight_layout,
                            &params,
                        )
                        .unwrap()
                else {
                    panic!("dtype changed");
                };
                let (x, k) = (upload(&device, &x, dtype), upload(&device, &k, dtype));
                for wide in [false, true] {
                    let out = x
                        .conv2d_with(&layout, &k, &weight_layout, &params, Some(wide), None)
                        .unwrap();
                    check(&out, &expected, &format!("{name} ({dtype:?}, wide {wide})"));
                }
            }
        }
    }
}
