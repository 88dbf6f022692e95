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
//! The kernel follows `matmul_large.rs` (generated, every inner loop unrolled, accumulators in
//! *named* `vec4<f32>` locals — a local array indexed by a loop variable spills to slow
//! memory):
//! - one workgroup of 256 invocations per [`TILE_M`] x [`TILE_N`] (64 output channels x 128
//!   columns) tile; invocation (tx, ty) = (local % 16, local / 16) owns channels
//!   `ty * 4 + 0..4` and columns `tx * 4 + 0..4` and `64 + tx * 4 + 0..4`: eight `vec4`
//!   accumulators, 32 FMAs per three `vec4` reads of workgroup memory;
//! - K is walked in steps of [`K_STEP`] (16); both tiles live in workgroup memory as `vec4`
//!   (W's transposed, so its reads are vectors along o), double-buffered: the next k-block is
//!   loaded into registers while the current one is multiplied out, so one barrier per step;
//! - loads: W's block, each invocation four channels at one k (consecutive invocations read
//!   consecutive k of a row), packed into one `vec4` store; B's block, each invocation one
//!   tap `r = k0 + ty` for its own eight columns, whose window origins (`base`, `h`, `w`) it
//!   computes once per tile, so a k-step costs two integer divisions (decomposing `r`) and
//!   eight bounds-checked scalar gathers;
//! - every global access is bounds-checked (row < o, r < K, col < N, 0 <= pixel < h, w), so
//!   any sizes work and the kernel is safe to compile without wgpu's runtime checks.

use std::fmt::Write;

use super::kernels::KernelKey;
use super::ops::{same_device, same_dtype, unsupported};
use super::params::{check_view, is_dense, Params};
use super::storage::GpuStorage;
use crate::backend::cpu::conv::Conv2dShape;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Conv2dParams;

/// Output channels per workgroup tile.
pub(crate) const TILE_M: usize = 64;
/// Output columns `(ni, oi, oj)` per workgroup tile.
pub(crate) const TILE_N: usize = 128;
/// K-step: taps `(ci, ki, kj)` per staged block.
pub(crate) const K_STEP: usize = 16;

/// The kernel body (after the header that defines `S`, `T`, `load_value`, `store_value` and
/// `common.wgsl`). params: columns N, o, K, c, h, w, oh, ow, kh, kw, stride (2), padding (2),
/// dilation (2), input offset and strides (5), weight offset (the weight is dense `[o, K]`),
/// then the output's length and the weight's extent (unread: pushed so that `Params` checks
/// that every position the kernel computes fits 32 bits).
pub(crate) fn source_body() -> String {
    let (a_vectors, b_vectors) = (TILE_M / 4, TILE_N / 4); // vec4s per k row of each tile
    let (a_copy, b_copy) = (K_STEP * a_vectors, K_STEP * b_vectors);
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;

// Two copies (ping-pong) of [{K_STEP} k][{a_vectors} vec4]: W's block transposed (vectors along o),
// and of [{K_STEP} k][{b_vectors} vec4]: B's block (vectors along the columns).
var<workgroup> tile_a: array<vec4<f32>, {a_tiles}>;
var<workgroup> tile_b: array<vec4<f32>, {b_tiles}>;

fn load_weight(index: u32, inside: bool) -> f32 {{
    if (inside) {{
        return f32(load_value(conv_weight[index]));
    }}
    return 0.0;
}}

fn load_input(index: u32, inside: bool) -> f32 {{
    if (inside) {{
        return f32(load_value(conv_input[index]));
    }}
    return 0.0;
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let columns = params[0];
    let m = params[1];
    let k = params[2];
    let height = params[4];
    let width = params[5];
    let ow = params[7];
    let plane = params[6] * ow;
    let kw = params[9];
    let taps = params[8] * kw;
    let stride_h = params[10];
    let stride_w = params[11];
    let pad_h = i32(params[12]);
    let pad_w = i32(params[13]);
    let dilation_h = params[14];
    let dilation_w = params[15];
    let in_offset = params[16];
    let in_n = params[17];
    let in_c = params[18];
    let in_h = params[19];
    let in_w = params[20];
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * {TILE_M}u;
    let tiles = (columns + {last}u) / {TILE_N}u;
    let steps = (k + {k_last}u) / {K_STEP}u;
    // Loader roles. W: channels row0 + ty * 4 + 0..4 at k0 + tx, into vec4 tx * {a_vectors} + ty
    // of a copy. B: tap k0 + ty for this invocation's columns, into vec4s ty * {b_vectors} + tx
    // and + 16.
    let a_store = tx * {a_vectors}u + ty;
    let b_store = ty * {b_vectors}u + tx;
    // W[row0 + ty * 4, tx] (dense [o, K] from params[21]) and which of the four rows exist.
    let a_start = params[21] + (row0 + ty * 4u) * k + tx;
    let a_ok0 = row0 + ty * 4u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    // Column tiles in a grid-stride loop (any N fits the grid).
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;"#,
        a_tiles = 2 * a_copy,
        b_tiles = 2 * b_copy,
        last = TILE_N - 1,
        k_last = K_STEP - 1,
    );
    // This invocation's eight columns: where their windows start (`h{j}`, `w{j}`: may be
    // negative in the padding) and the storage position of that corner (`base{j}`, wrapping
    // u32 arithmetic: only positions inside the image are ever read). A column past N gets
    // `h = height`, which no tap brings back inside.
    for j in 0..8 {
        let shift = (j % 4) + 64 * (j / 4);
        let _ = writeln!(
            w,
            "        let col{j} = column0 + tx * 4u + {shift}u;
        let image{j} = col{j} / plane;
        let pixel{j} = col{j} - image{j} * plane;
        let oi{j} = pixel{j} / ow;
        let oj{j} = pixel{j} - oi{j} * ow;
        let h{j} = select(i32(height), i32(oi{j} * stride_h) - pad_h, col{j} < columns);
        let w{j} = i32(oj{j} * stride_w) - pad_w;
        let base{j} = in_offset + image{j} * in_n + bitcast<u32>(h{j}) * in_h + bitcast<u32>(w{j}) * in_w;"
        );
    }
    for i in 0..4 {
        let _ = writeln!(
            w,
            "        var c{i}0 = vec4<f32>(0.0);\n        var c{i}1 = vec4<f32>(0.0);"
        );
    }
    // The global loads of the k-block starting at `k0` into the registers pa, pb0, pb1.
    let load = |w: &mut String, indent: &str, k0: &str| {
        let _ = writeln!(
            w,
            "{indent}{{
{indent}    let r = {k0} + ty;
{indent}    let r_ok = r < k;
{indent}    let ci = r / taps;
{indent}    let tap = r - ci * taps;
{indent}    let ki = tap / kw;
{indent}    let kj = tap - ki * kw;
{indent}    let dh = i32(ki * dilation_h);
{indent}    let dw = i32(kj * dilation_w);
{indent}    let shift = ci * in_c + ki * dilation_h * in_h + kj * dilation_w * in_w;"
        );
        for j in 0..8 {
            let _ = writeln!(
                w,
                "{indent}    let v{j} = load_input(base{j} + shift, r_ok && bitcast<u32>(h{j} + dh) < height && bitcast<u32>(w{j} + dw) < width);"
            );
        }
        let _ = writeln!(
            w,
            "{indent}    pb0 = vec4<f32>(v0, v1, v2, v3);
{indent}    pb1 = vec4<f32>(v4, v5, v6, v7);
{indent}}}
{indent}{{
{indent}    let a_k_ok = {k0} + tx < k;
{indent}    pa = vec4<f32>(
{indent}        load_weight(a_start + {k0}, a_ok0 && a_k_ok),
{indent}        load_weight(a_start + k + {k0}, a_ok1 && a_k_ok),
{indent}        load_weight(a_start + 2u * k + {k0}, a_ok2 && a_k_ok),
{indent}        load_weight(a_start + 3u * k + {k0}, a_ok3 && a_k_ok));
{indent}}}"
        );
    };
    // The registers into the copies of the tiles starting at vec4 `a_at` resp. `b_at`.
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        let _ = writeln!(
            w,
            "{indent}tile_a[{a_at} + a_store] = pa;
{indent}tile_b[{b_at} + b_store] = pb0;
{indent}tile_b[{b_at} + b_store + 16u] = pb1;"
        );
    };
    let _ = writeln!(
        w,
        "        // Registers of the block in flight.\n        var pa: vec4<f32>;\n        var pb0: vec4<f32>;\n        var pb1: vec4<f32>;"
    );
    let _ = writeln!(w, "        // k-block 0 into copy 0.");
    load(&mut w, "        ", "0u");
    store(&mut w, "        ", "0u", "0u");
    let _ = writeln!(
        w,
        r#"        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * {a_copy}u;
            let b_current = current * {b_copy}u;
            let more = step + 1u < steps;
            if (more) {{
                let k_next = (step + 1u) * {K_STEP}u;"#
    );
    load(&mut w, "                ", "k_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..K_STEP {
        let _ = writeln!(
            w,
            "            {{\n                let a = tile_a[a_current + {a}u + ty];\n                let b_low = tile_b[b_current + {b}u + tx];\n                let b_high = tile_b[b_current + {b}u + 16u + tx];",
            a = kk * a_vectors,
            b = kk * b_vectors,
        );
        for (i, component) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "                c{i}0 = c{i}0 + a.{component} * b_low;\n                c{i}1 = c{i}1 + a.{component} * b_high;"
            );
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(w, "            if (more) {{");
    store(
        &mut w,
        "                ",
        &format!("{a_copy}u - a_current"),
        &format!("{b_copy}u - b_current"),
    );
    let _ = writeln!(
        w,
        r#"            }}
            workgroupBarrier();
        }}
        // out[image, o, oi, oj] = output[(image * m + o) * plane + pixel]."#
    );
    for j in 0..8 {
        let _ = writeln!(
            w,
            "        let out{j} = image{j} * m * plane + pixel{j};\n        let inside{j} = col{j} < columns;"
        );
    }
    for i in 0..4 {
        let _ = writeln!(
            w,
            "        {{\n            let row = row0 + ty * 4u + {i}u;\n            if (row < m) {{\n                let at = row * plane;"
        );
        for j in 0..8 {
            let (half, component) = (j / 4, ["x", "y", "z", "w"][j % 4]);
            let _ = writeln!(
                w,
                "                if (inside{j}) {{ conv_output[out{j} + at] = store_value(T(c{i}{half}.{component})); }}"
            );
        }
        let _ = writeln!(w, "            }}\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// Largest value a coordinate computation in the kernel may reach: it computes window
/// positions in i32.
const COORDINATE_LIMIT: usize = i32::MAX as usize;

impl GpuStorage {
    /// 2-D convolution with one group and no bias: `[n, c, h, w]` (any strides) by
    /// `[o, c, kh, kw]` into a contiguous `[n, o, oh, ow]`, by the implicit-GEMM kernel
    /// (`KernelKey::Conv2d`). F32 and F16. A strided weight is copied dense first.
    pub fn conv2d(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
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
        if patch == 0 {
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
        let mut words = Params::new();
        words
            .extend(&[columns, o, patch, shape.channels, h, w, oh, ow, kh, kw])?
            .extend(&[s.0, s.1, p.0, p.1, d.0, d.1])?
            .view(layout)?
            .push(weight_layout.offset)?
            // Positions the kernel computes (output and weight) must fit 32 bits as well.
            .push(numel)?
            .push(weight_layout.offset + o * patch)?;
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let tiles_m = o.div_ceil(TILE_M);
        if tiles_m > max {
            return Err(Error::invalid(
                "conv2d",
                format!("{o} output channels need more than {max} tiles; split the weight"),
            ));
        }
        // Column tiles beyond the grid's limit are walked by the kernel's grid-stride loop.
        let grid = (columns.div_ceil(TILE_N).min(max) as u32, tiles_m as u32, 1);
        let key = KernelKey::Conv2d { dtype: self.dtype };
        context.dispatch(
            &key,
            words.words(),
            &[self.raw()?, weight.raw()?, out.raw()?],
            grid,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernels::{value_header, COMMON};
    use super::source_body;
    use crate::dtype::DType;

    /// The generated kernel parses, validates and translates to SPIR-V for both float
    /// storage types (`all_kernel_sources` covers it too; this names the failure).
    #[test]
    fn conv_kernel_validates() {
        for dtype in [DType::F32, DType::F16] {
            let enable = if dtype == DType::F16 {
                "enable f16;\n"
            } else {
                ""
            };
            let source = format!("{enable}{}{COMMON}{}", value_header(dtype), source_body());
            let module = naga::front::wgsl::parse_str(&source)
                .unwrap_or_else(|error| panic!("{}", error.emit_to_string(&source)));
            let info = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::all(),
            )
            .validate(&module)
            .unwrap_or_else(|error| panic!("{}", error.emit_to_string(&source)));
            naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
        }
    }
}
