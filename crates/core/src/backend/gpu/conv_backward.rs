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
//!   an output pixel and the exactness test disappears from the generated code.
//! - **grad_weight** (`KernelKey::Conv2dBackwardWeight`):
//!   `dW[o, ci, ki, kj] = sum_(ni, oi, oj) g[ni, o, oi, oj] * x[ni, ci, y, x]`, a GEMM with
//!   M = o, N = c * kh * kw, K = n * oh * ow: A is `g` read as `[o, K]` and B the input
//!   windows, both gathered. K is huge and M, N small for most layers, so K is split over
//!   `workgroup.z` ([`split_count`]): each split writes f32 partial sums, and a second small
//!   dispatch (`KernelKey::Conv2dSplitSum`) adds them up in a fixed order (deterministic) and
//!   converts to the storage type.
//!
//! Both GEMMs use the forward's tile design (`conv.rs`, after `matmul_large.rs`): one
//! workgroup of 256 invocations per 64 x 128 tile, each invocation owning 4 rows x 8 columns
//! in eight *named* `vec4<f32>` accumulators (never a local array indexed by a loop variable:
//! it would spill to slow memory), K walked in unrolled steps of 16 through double-buffered
//! `vec4` tiles in workgroup memory (one barrier per step; rows padded by one `vec4` so that
//! the loaders' stores do not collide in one bank), column tiles in a grid-stride loop.
//! For grad_weight the loaders walk K with consecutive invocations (K is the pixel axis, where
//! `g` and `x` are contiguous), so their global reads coalesce. Every global access is
//! bounds-checked, so any sizes work and the kernels run without wgpu's runtime checks.

use std::fmt::Write;

use super::conv::{K_STEP, TILE_M, TILE_N};
use super::kernels::KernelKey;
use super::ops::{same_device, same_dtype, unsupported};
use super::params::{check_view, Params};
use super::storage::GpuStorage;
use crate::backend::cpu::conv::Conv2dShape;
use crate::backend::cpu::conv_backward::backward_shape;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Conv2dParams;

/// Workgroups the weight-gradient kernel aims for (about one full wave of a large GPU).
const TARGET_WORKGROUPS: usize = 1024;
/// Fewest k-steps one split of the weight gradient walks.
const MIN_SPLIT_STEPS: usize = 32;
/// Most splits of the weight gradient's K.
const MAX_SPLITS: usize = 256;
/// Largest buffer of partial sums (f32 elements: 256 MiB).
const MAX_PARTIALS: usize = 1 << 26;

/// vec4s per k row of the staged A block: the tile's `TILE_M / 4`, plus one of padding. The
/// loaders store with consecutive invocations one row apart; the padding spreads those stores
/// over all the workgroup-memory banks (an unpadded row of 16 or 32 vec4s puts them in one).
const A_PITCH: usize = TILE_M / 4 + 1;
/// vec4s per k row of the staged B block (`TILE_N / 4` and one of padding, as for A).
const B_PITCH: usize = TILE_N / 4 + 1;
/// Where the second half of an invocation's columns starts in a B row (in vec4s).
const B_HALF: usize = TILE_N / 8;

/// The vec4 lanes, in order.
const LANES: [&str; 4] = ["x", "y", "z", "w"];

/// Column `j` (0..8) of an invocation's eight: `4 * group + j % 4`, or 64 further for j >= 4.
fn column_shift(j: usize) -> usize {
    (j % 4) + (TILE_N / 2) * (j / 4)
}

/// The workgroup tiles and a bounds-checked loader per operand binding.
fn declarations(w: &mut String, loaders: &[(&str, &str)]) {
    let _ = writeln!(
        w,
        "// Two copies (ping-pong) of [{K_STEP} k][{A_PITCH} vec4]: A's block transposed (vectors along the
// rows), and of [{K_STEP} k][{B_PITCH} vec4]: B's block (vectors along the columns); the last
// vec4 of each row is padding.
var<workgroup> tile_a: array<vec4<f32>, {}>;
var<workgroup> tile_b: array<vec4<f32>, {}>;",
        2 * K_STEP * A_PITCH,
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

/// The double-buffered GEMM over one tile. Expects in scope `steps`, `k_first` (the first k
/// of this workgroup), `a_store` and `b_store` (where this invocation's loaded vectors go in a
/// copy), `tx`, `ty`; `load(w, indent, k0)` must set the registers `pa` (four rows at one k),
/// `pb0` and `pb1` (eight columns at one k) for the k-block starting at `k0`. Leaves the sums
/// in `c{i}{half}`: row `ty * 4 + i`, columns `tx * 4 + 0..4` (half 0) and `64 + tx * 4 + 0..4`.
fn main_loop(w: &mut String, load: &dyn Fn(&mut String, &str, &str)) {
    let (a_copy, b_copy) = (K_STEP * A_PITCH, K_STEP * B_PITCH);
    for i in 0..4 {
        let _ = writeln!(
            w,
            "        var c{i}0 = vec4<f32>(0.0);\n        var c{i}1 = vec4<f32>(0.0);"
        );
    }
    let store = |w: &mut String, indent: &str, a_at: &str, b_at: &str| {
        let _ = writeln!(
            w,
            "{indent}tile_a[{a_at} + a_store] = pa;
{indent}tile_b[{b_at} + b_store] = pb0;
{indent}tile_b[{b_at} + b_store + {B_HALF}u] = pb1;"
        );
    };
    let _ = writeln!(
        w,
        "        var pa: vec4<f32>;\n        var pb0: vec4<f32>;\n        var pb1: vec4<f32>;"
    );
    load(w, "        ", "k_first");
    store(w, "        ", "0u", "0u");
    let _ = writeln!(
        w,
        "        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
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
        let _ = writeln!(
            w,
            "            {{\n                let a = tile_a[a_current + {a}u + ty];\n                let b_low = tile_b[b_current + {b}u + tx];\n                let b_high = tile_b[b_current + {b}u + {half}u + tx];",
            a = kk * A_PITCH,
            b = kk * B_PITCH,
            half = B_HALF,
        );
        for (i, lane) in LANES.iter().enumerate() {
            let _ = writeln!(
                w,
                "                c{i}0 = c{i}0 + a.{lane} * b_low;\n                c{i}1 = c{i}1 + a.{lane} * b_high;"
            );
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

/// The shared start of `main`: the entry point, tile roles and the size parameters 0..16
/// (columns N, M, K, then per kernel, h, w, oh, ow, kh, kw, stride, padding, dilation).
fn entry(w: &mut String) {
    let _ = writeln!(
        w,
        "@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let columns = params[0];
    let m = params[1];
    let k = params[2];
    let height = params[4];
    let width = params[5];
    let oh = params[6];
    let ow = params[7];
    let kw = params[9];
    let taps = params[8] * kw;
    let stride_h = params[10];
    let stride_w = params[11];
    let pad_h = params[12];
    let pad_w = params[13];
    let dilation_h = params[14];
    let dilation_w = params[15];
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * {TILE_M}u;
    let tiles = (columns + {last}u) / {TILE_N}u;",
        last = TILE_N - 1
    );
}

/// The grad_input kernel body (after the header that defines `S`, `T`, `load_value`,
/// `store_value` and `common.wgsl`). params 0..16 as in [`entry`] (M = c, K = o * kh * kw,
/// params[3] = o), then `g`'s offset and strides (16..21), the transposed weight's offset
/// (21; dense `[c, K]`), then the output's length and the weight's extent (unread: pushed so
/// that `Params` checks that they fit 32 bits).
pub(crate) fn input_source_body(unit_stride: bool) -> String {
    let mut w = String::new();
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_grad: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;"
    );
    declarations(
        &mut w,
        &[("load_weight", "conv_weight"), ("load_grad", "conv_grad")],
    );
    entry(&mut w);
    let _ = writeln!(
        w,
        "    let g_offset = params[16];
    let g_n = params[17];
    let g_c = params[18];
    let g_h = params[19];
    let g_w = params[20];
    let plane = height * width;
    let k_first = 0u;
    let steps = (k + {k_last}u) / {K_STEP}u;
    // Loader roles. A: rows row0 + ty * 4 + 0..4 at k0 + tx; B: tap k0 + ty for this
    // invocation's eight columns.
    let a_store = tx * {A_PITCH}u + ty;
    let b_store = ty * {B_PITCH}u + tx;
    let a_start = params[21] + (row0 + ty * 4u) * k + tx;
    let a_ok0 = row0 + ty * 4u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {{
        let column0 = tile * {TILE_N}u;",
        k_last = K_STEP - 1,
    );
    // Column j is input pixel (image, y, x); `hy`, `wx` are y + pad, x + pad (a column past N
    // gets hy = 0xffffffff, which no tap brings back into range).
    for j in 0..8 {
        let shift = column_shift(j);
        let _ = writeln!(
            w,
            "        let col{j} = column0 + tx * 4u + {shift}u;
        let image{j} = col{j} / plane;
        let pixel{j} = col{j} - image{j} * plane;
        let y{j} = pixel{j} / width;
        let hy{j} = select(0xffffffffu, y{j} + pad_h, col{j} < columns);
        let wx{j} = pixel{j} - y{j} * width + pad_w;
        let base{j} = g_offset + image{j} * g_n;"
        );
    }
    // `ry = y + pad - ki * dil` wraps to >= 2^31 when negative (the host keeps every
    // coordinate below 2^31), so `oy < oh` rejects it after the division too.
    let load = |w: &mut String, indent: &str, k0: &str| {
        let _ = writeln!(
            w,
            "{indent}{{
{indent}    let r = {k0} + ty;
{indent}    let r_ok = r < k;
{indent}    let oc = r / taps;
{indent}    let tap = r - oc * taps;
{indent}    let ki = tap / kw;
{indent}    let kj = tap - ki * kw;
{indent}    let dh = ki * dilation_h;
{indent}    let dw = kj * dilation_w;
{indent}    let shift = oc * g_c;"
        );
        for j in 0..8 {
            let _ = writeln!(
                w,
                "{indent}    let ry{j} = hy{j} - dh;\n{indent}    let rx{j} = wx{j} - dw;"
            );
            if unit_stride {
                let _ = writeln!(
                    w,
                    "{indent}    let v{j} = load_grad(base{j} + shift + ry{j} * g_h + rx{j} * g_w, r_ok && ry{j} < oh && rx{j} < ow);"
                );
            } else {
                let _ = writeln!(
                    w,
                    "{indent}    let oy{j} = ry{j} / stride_h;
{indent}    let ox{j} = rx{j} / stride_w;
{indent}    let v{j} = load_grad(base{j} + shift + oy{j} * g_h + ox{j} * g_w, r_ok && oy{j} < oh && ox{j} < ow && oy{j} * stride_h == ry{j} && ox{j} * stride_w == rx{j});"
                );
            }
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
    main_loop(&mut w, &load);
    // dx[image, ci, y, x] = output[(image * m + ci) * plane + pixel].
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
            let (half, lane) = (j / 4, LANES[j % 4]);
            let _ = writeln!(
                w,
                "                if (inside{j}) {{ conv_output[out{j} + at] = store_value(T(c{i}{half}.{lane})); }}"
            );
        }
        let _ = writeln!(w, "            }}\n        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The grad_weight kernel body. params 0..16 as in [`entry`] (M = o, N = c * kh * kw,
/// K = n * oh * ow, params[3] = c), the input's offset and strides (16..21), `g`'s (21..26),
/// the k-range of one split (26, a multiple of the k-step), then (unread) the output's length
/// and the end of the last split's range. `partial`: the output is `array<f32>` with one
/// `[M, N]` block of partial sums per split (`workgroup.z`); otherwise `array<S>`, `[M, N]`.
pub(crate) fn weight_source_body(partial: bool) -> String {
    let mut w = String::new();
    let output = if partial { "f32" } else { "S" };
    let _ = writeln!(
        w,
        "@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_grad: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<{output}>;"
    );
    declarations(
        &mut w,
        &[("load_input", "conv_input"), ("load_grad", "conv_grad")],
    );
    entry(&mut w);
    let _ = writeln!(
        w,
        "    let x_offset = params[16];
    let x_n = params[17];
    let x_c = params[18];
    let x_h = params[19];
    let x_w = params[20];
    let g_n = params[22];
    let g_c = params[23];
    let g_h = params[24];
    let g_w = params[25];
    let k_chunk = params[26];
    let plane = oh * ow;
    // This split's k-range.
    let k_first = workgroup.z * k_chunk;
    let k_end = min(k_first + k_chunk, k);
    let steps = select(0u, (k_end - k_first + {k_last}u) / {K_STEP}u, k_end > k_first);
    let out_base = {out_base};
    // Loader roles: both at k0 + tx (consecutive invocations read consecutive pixels). A: rows
    // row0 + ty * 4 + 0..4; B: columns ty * 4 + 0..4 and {half_n} + ty * 4 + 0..4.
    let a_store = tx * {A_PITCH}u + ty;
    let b_store = tx * {B_PITCH}u + ty;
    let a_rows = params[21] + (row0 + ty * 4u) * g_c;
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
{indent}    pa = vec4<f32>(
{indent}        load_grad(g_at, a_ok0 && k_ok),
{indent}        load_grad(g_at + g_c, a_ok1 && k_ok),
{indent}        load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
{indent}        load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
{indent}}}"
        );
    };
    main_loop(&mut w, &load);
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
/// order), stored as `S`. params: len, splits.
pub(crate) fn split_sum_source_body() -> &'static str {
    r#"@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> reduced: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    let len = params[0];
    let splits = params[1];
    if (i >= len) {
        return;
    }
    var total: f32 = 0.0;
    for (var s = 0u; s < splits; s = s + 1u) {
        total = total + partials[s * len + i];
    }
    reduced[i] = store_value(T(total));
}
"#
}

/// How many splits the weight gradient's K gets: enough workgroups to fill the GPU, each
/// split at least [`MIN_SPLIT_STEPS`] k-steps long, the partial sums within [`MAX_PARTIALS`].
pub(crate) fn split_count(tiles: usize, k: usize, outputs: usize) -> usize {
    let wanted = TARGET_WORKGROUPS.div_ceil(tiles.max(1));
    let by_work = k.div_ceil(K_STEP) / MIN_SPLIT_STEPS;
    let by_memory = MAX_PARTIALS / outputs.max(1);
    wanted.min(by_work).min(by_memory).clamp(1, MAX_SPLITS)
}

/// Largest value a coordinate computation in the kernels may reach (they compute window
/// positions in i32 and rely on negative ones wrapping to at least 2^31 as u32).
const COORDINATE_LIMIT: usize = i32::MAX as usize;

/// Refuse geometries whose coordinates (image size + padding + kernel reach + output origin)
/// could overflow the kernels' 32-bit arithmetic (the forward's check).
fn check_coordinates(op: &'static str, shape: &Conv2dShape) -> Result<()> {
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

/// The size parameters 0..16 shared by both kernels (`other`: the channel count that is
/// neither M nor N).
fn size_words(
    words: &mut Params,
    [columns, m, k, other]: [usize; 4],
    shape: &Conv2dShape,
) -> Result<()> {
    let (s, p, d) = (shape.stride, shape.padding, shape.dilation);
    words
        .extend(&[columns, m, k, other])?
        .extend(&[shape.input.0, shape.input.1, shape.output.0, shape.output.1])?
        .extend(&[shape.kernel.0, shape.kernel.1])?
        .extend(&[s.0, s.1, p.0, p.1, d.0, d.1])?;
    Ok(())
}

/// Row tiles of M, refused beyond the grid's limit.
fn row_tiles(op: &'static str, m: usize, max: usize) -> Result<usize> {
    let tiles = m.div_ceil(TILE_M);
    if tiles > max {
        return Err(Error::invalid(
            op,
            format!("{m} channels need more than {max} tiles; split the weight"),
        ));
    }
    Ok(tiles)
}

impl GpuStorage {
    /// Gradient of the one-group convolution with respect to its input: `self` is the output
    /// gradient `[n, o, oh, ow]` (any strides), `weight` the forward's `[o, c, kh, kw]` (any
    /// strides); returns a contiguous `[n, c, h, w]` for `input_shape`, computed by the
    /// implicit-GEMM kernel `KernelKey::Conv2dBackwardInput`. F32 and F16.
    pub fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &GpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
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
        let (columns, k) = (
            batch * h * w,
            shape.out_channels * shape.kernel.0 * shape.kernel.1,
        );
        let numel = batch * c * h * w;
        if numel > 0 && k == 0 {
            // No output channel: nothing flows back.
            return GpuStorage::full(&self.device, numel, self.dtype, 0.0);
        }
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        // A = the weight transposed to a dense [c, o * kh * kw] (weights are small to copy).
        let transposed = weight.copy_strided(&weight_layout.permute(&[1, 0, 2, 3]))?;
        let mut words = Params::new();
        size_words(&mut words, [columns, c, k, shape.out_channels], &shape)?;
        words.view(layout)?.push(0)?.push(numel)?.push(c * k)?;
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let tiles_m = row_tiles(OP, c, max)?;
        // Column tiles beyond the grid's limit are walked by the kernel's grid-stride loop.
        let grid = (columns.div_ceil(TILE_N).min(max) as u32, tiles_m as u32, 1);
        let key = KernelKey::Conv2dBackwardInput {
            dtype: self.dtype,
            unit_stride: shape.stride == (1, 1),
        };
        context.dispatch(
            &key,
            words.words(),
            &[self.raw()?, transposed.raw()?, out.raw()?],
            grid,
        )?;
        Ok(out)
    }

    /// Gradient of the one-group convolution with respect to its weight: `self` is the
    /// forward's input `[n, c, h, w]` (any strides), `grad` the output gradient
    /// `[n, o, oh, ow]` (any strides); returns a contiguous `[o, c, kh, kw]` for
    /// `weight_shape`, computed by the split-K implicit-GEMM kernel
    /// `KernelKey::Conv2dBackwardWeight` (plus `KernelKey::Conv2dSplitSum` when K is split).
    /// F32 and F16.
    pub fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &GpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
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
        let tiles_m = row_tiles(OP, o, max)?;
        let tiles_n = columns.div_ceil(TILE_N);
        let splits = split_count(tiles_m * tiles_n.min(max), k, numel);
        let k_chunk = k.div_ceil(K_STEP).div_ceil(splits) * K_STEP;
        let splits = k.div_ceil(k_chunk);
        let partial = splits > 1;
        let target = if partial {
            GpuStorage::allocate(&self.device, OP, splits * numel, DType::F32)?
        } else {
            GpuStorage::allocate(&self.device, OP, numel, self.dtype)?
        };
        let mut words = Params::new();
        size_words(&mut words, [columns, o, k, shape.channels], &shape)?;
        words
            .view(layout)?
            .view(grad_layout)?
            .push(k_chunk)?
            .push(splits * numel)?
            .push(splits * k_chunk)?;
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
        let mut words = Params::new();
        words.push(numel)?.push(splits)?;
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
mod tests {
    use super::super::kernels::KernelKey;
    use super::split_count;
    use crate::dtype::DType;

    /// Every generated backward kernel parses, validates and translates to SPIR-V for both
    /// float storage types (`all_kernel_sources` covers them too; this names the failure).
    #[test]
    fn backward_kernels_validate() {
        for dtype in [DType::F32, DType::F16] {
            let keys = [
                KernelKey::Conv2dBackwardInput {
                    dtype,
                    unit_stride: true,
                },
                KernelKey::Conv2dBackwardInput {
                    dtype,
                    unit_stride: false,
                },
                KernelKey::Conv2dBackwardWeight {
                    dtype,
                    partial: true,
                },
                KernelKey::Conv2dBackwardWeight {
                    dtype,
                    partial: false,
                },
                KernelKey::Conv2dSplitSum { dtype },
            ];
            for key in keys {
                let source = key.source();
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

    /// Splits: many for few tiles and a long K, none for a short K, bounded by memory.
    #[test]
    fn split_counts() {
        // ResNet layer 1 at batch 64: one row tile, five column tiles, K = 64 * 56 * 56.
        assert_eq!(split_count(5, 64 * 56 * 56, 64 * 576), 205);
        // Layer 4: 288 tiles, K = 64 * 7 * 7 (196 k-steps): four splits.
        assert_eq!(split_count(288, 64 * 49, 512 * 4608), 4);
        // A short K is never split.
        assert_eq!(split_count(1, 100, 10), 1);
        // Memory bound.
        assert_eq!(split_count(1, 1 << 30, 1 << 25), 2);
    }
}
