//! The large-tile float matmul kernels, generated as fully unrolled WGSL.
//!
//! The design measured fastest with plain WGSL on an H200 (33 TFLOPS f32 measured): one
//! workgroup of 256 invocations per 128 x 128 tile of C, each invocation holding 8 x 8
//! outputs in sixteen `vec4<f32>` *named* locals (a local array indexed in a loop would be
//! placed in slow memory; one 8 x 8 block in the general kernel, four 4 x 4 blocks 64 rows or
//! columns apart in the aligned one), both operand blocks staged in workgroup memory as
//! `vec4` (A's block transposed so that its reads are vectors along m as well). The inner
//! loops are unrolled here, by the generator, so the driver sees straight-line FMAs. Two
//! variants:
//!
//! - **general** (`source_body(false)`): k walked in steps of 8; loads are scalar, read
//!   through the views' strides and bounds-checked (zero-filled), so any m, n, k and any
//!   strides work;
//! - **aligned** (`source_body(true)`, chosen by [`aligned_applies`]): for m and n multiples of
//!   128, k a multiple of [`ALIGNED_K_STEP`], both operands row-major per batch and every
//!   offset and batch stride a multiple of 4. A, B and C are bound as `array<vec4<S>>`; every
//!   load and store is a whole `vec4` with no bounds check (the host-side predicate makes each
//!   one land inside the validated views). The workgroup tiles are double-buffered: the next
//!   k-block's loads are issued into registers before the current block is multiplied out,
//!   then written into the other buffer, so one `workgroupBarrier()` per k-step suffices.
//!
//! The 64 x 64 kernel in `shaders/matmul.wgsl` remains for small products, where 128 x 128
//! tiles would leave most of the GPU idle.

use std::fmt::Write;

use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::layout::Layout;

/// Tile edge of this kernel.
pub(crate) const LARGE_TILE: usize = 128;

/// Use the large tile when it still yields at least this many workgroups (about two per
/// streaming multiprocessor of a large GPU); below, the 64 x 64 kernel keeps more SMs busy.
pub(crate) const LARGE_TILE_MIN_WORKGROUPS: usize = 256;

/// Whether a `[batch, m, n]` float product should use the large-tile kernel.
pub(crate) fn prefers_large_tile(batch: usize, m: usize, n: usize) -> bool {
    batch * m.div_ceil(LARGE_TILE) * n.div_ceil(LARGE_TILE) >= LARGE_TILE_MIN_WORKGROUPS
}

/// Split-K for a single f32 product too small to fill the GPU with 128 x 128 tiles (1024³
/// gives 64 of them): the number of k-slices `s` (a power of two, 2 to 16) such that
/// `tiles * s` reaches [`LARGE_TILE_MIN_WORKGROUPS`], each slice still at least 128 deep and
/// a multiple of [`ALIGNED_K_STEP`]; `None` where it does not apply. The product then runs as
/// the aligned kernel over `s` batches (A's column slices, B's row slices) into `s` f32
/// partial products, which are added pairwise (a fixed order: deterministic).
pub(crate) fn split_k_factor(dtype: DType, a: &Layout, b: &Layout) -> Option<usize> {
    let (&[_, m, _], &[_, _, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return None;
    };
    let tiles = (m / LARGE_TILE) * (n / LARGE_TILE);
    if tiles >= LARGE_TILE_MIN_WORKGROUPS || !split_k_legal(dtype, a, b, 2) {
        return None;
    }
    let mut split = 2;
    while tiles * split < LARGE_TILE_MIN_WORKGROUPS && split_k_legal(dtype, a, b, split * 2) {
        split *= 2;
    }
    Some(split)
}

/// Whether `a x b` may run as `split` k-slices: F32 (the partial products are stored in the
/// dtype), one batch, the aligned kernel legal, `split` a power of two up to 16 dividing k
/// into slices of at least 128 that are multiples of [`ALIGNED_K_STEP`].
pub(crate) fn split_k_legal(dtype: DType, a: &Layout, b: &Layout, split: usize) -> bool {
    let &[batch, _, k] = a.shape.as_slice() else {
        return false;
    };
    dtype == DType::F32
        && batch == 1
        && split.is_power_of_two()
        && (2..=16).contains(&split)
        && k.is_multiple_of(split * ALIGNED_K_STEP)
        && k / split >= 128
        && aligned_applies(dtype, a, b)
}

/// K-step of the aligned kernel: k must be a multiple of it. 16 halves the barriers of a
/// K-step of 8; the double-buffered tiles then take 2 x 2 x 16 x 128 x 4 B = 32 KiB of
/// workgroup memory (8 would take 16 KiB; `aligned_body` accepts either).
pub(crate) const ALIGNED_K_STEP: usize = 16;

/// Whether the aligned kernel may compute `a x b` (layouts `[batch, m, k]` and
/// `[batch, k, n]`): F32 or F16 (both stored as themselves, so a `vec4<S>` is four
/// consecutive elements), m and n non-zero multiples of 128, k a non-zero multiple of
/// [`ALIGNED_K_STEP`], both operands row-major within a batch (column stride 1; B's row
/// stride n, A's a multiple of 4 of at least k: the k-slices of a split-K product), and
/// offsets and batch strides multiples of 4 elements (stride 0, a broadcast batch,
/// included).
///
/// The kernel indexes its `vec4` bindings without bounds checks and trusts this predicate:
/// under it, every `vec4` it reads or writes holds four elements of a view that `check_view`
/// validated against its buffer (or of the freshly allocated output).
pub(crate) fn aligned_applies(dtype: DType, a: &Layout, b: &Layout) -> bool {
    let (&[batch, m, k], &[b_batch, b_k, n]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return false;
    };
    let (&[a_batch_stride, a_row, a_column], &[b_batch_stride, b_row, b_column]) =
        (a.strides.as_slice(), b.strides.as_slice())
    else {
        return false;
    };
    matches!(dtype, DType::F32 | DType::F16)
        && batch > 0
        && batch == b_batch
        && k == b_k
        && m > 0
        && m.is_multiple_of(LARGE_TILE)
        && n > 0
        && n.is_multiple_of(LARGE_TILE)
        && k > 0
        && k.is_multiple_of(ALIGNED_K_STEP)
        && a_column == 1
        && a_row >= k
        && (b_row, b_column) == (n, 1)
        && [a.offset, a_row, a_batch_stride, b.offset, b_batch_stride]
            .iter()
            .all(|value| value.is_multiple_of(4))
}

/// WGSL of `MatmulKernel::MatmulLarge` (after `enable f16;` where needed): the value header,
/// [`MatmulParams`], `common.wgsl` and the generated body.
pub(crate) fn source(dtype: DType, aligned: bool) -> String {
    let mut text = value_header(dtype);
    text.push_str(MatmulParams::WGSL);
    text.push_str(COMMON);
    text.push_str(&source_body(aligned));
    text
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<MatmulKernel>, dtype: DType) {
    if dtype.is_float() {
        for aligned in [false, true] {
            keys.push(MatmulKernel::MatmulLarge { dtype, aligned });
        }
    }
}

/// The kernel body (after the header that defines `S`, `T`, `load_value`, `store_value`):
/// the aligned variant or the general one.
fn source_body(aligned: bool) -> String {
    if aligned {
        aligned_body(ALIGNED_K_STEP)
    } else {
        general_body()
    }
}

/// The general kernel: scalar, strided, bounds-checked loads and stores; K-step 8.
fn general_body() -> String {
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<S>;
@group(0) @binding(2) var<storage, read> matrix_b: array<S>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<S>;

// [8 k][32 vec4]: A's block transposed (vectors along m), B's block (vectors along n).
var<workgroup> tile_a: array<vec4<f32>, 256>;
var<workgroup> tile_b: array<vec4<f32>, 256>;

fn load_a(base: u32, row: u32, column: u32, m: u32, k: u32) -> f32 {{
    if (row < m && column < k) {{
        return f32(load_value(matrix_a[base + row * params.a_row_stride + column * params.a_column_stride]));
    }}
    return 0.0;
}}

fn load_b(base: u32, row: u32, column: u32, k: u32, n: u32) -> f32 {{
    if (row < k && column < n) {{
        return f32(load_value(matrix_b[base + row * params.b_row_stride + column * params.b_column_stride]));
    }}
    return 0.0;
}}

fn store_c(index: u32, inside: bool, value: f32) {{
    if (inside) {{
        matrix_c[index] = store_value(T(value));
    }}
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // Loader roles: A's block is 128 rows x 8 k (each invocation: one row, 4 k values);
    // B's block is 8 k x 128 columns (each invocation: one k row, 4 columns).
    let a_row = local / 2u;
    let a_k = (local % 2u) * 4u;
    let b_k = local / 32u;
    let b_column = (local % 32u) * 4u;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{
        let a_base = params.a_offset + b * params.a_batch_stride;
        let b_base = params.b_offset + b * params.b_batch_stride;"#
    );
    for i in 0..8 {
        let _ = writeln!(
            w,
            "        var c{i}0 = vec4<f32>(0.0);\n        var c{i}1 = vec4<f32>(0.0);"
        );
    }
    let _ = writeln!(w, r#"        for (var k0 = 0u; k0 < k; k0 = k0 + 8u) {{"#);
    for j in 0..4 {
        let _ = writeln!(
            w,
            "            tile_a[(a_k + {j}u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + {j}u, m, k);"
        );
    }
    let _ = writeln!(
        w,
        r#"            tile_b[b_k * 32u + local % 32u] = vec4<f32>(
                load_b(b_base, k0 + b_k, column0 + b_column, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 1u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 2u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 3u, k, n));
            workgroupBarrier();"#
    );
    for kk in 0..8 {
        let _ = writeln!(
            w,
            "            {{\n                let a_low = tile_a[{a} + ty * 2u];\n                let a_high = tile_a[{a} + ty * 2u + 1u];\n                let b_low = tile_b[{a} + tx * 2u];\n                let b_high = tile_b[{a} + tx * 2u + 1u];",
            a = kk * 32
        );
        for i in 0..8 {
            let (vector, component) = if i < 4 {
                ("a_low", ["x", "y", "z", "w"][i])
            } else {
                ("a_high", ["x", "y", "z", "w"][i - 4])
            };
            let _ = writeln!(
                w,
                "                c{i}0 = c{i}0 + {vector}.{component} * b_low;\n                c{i}1 = c{i}1 + {vector}.{component} * b_high;"
            );
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(
        w,
        r#"            workgroupBarrier();
        }}
        let c_base = b * m * n;
        let column = column0 + tx * 8u;"#
    );
    for i in 0..8 {
        let _ = writeln!(w, "        {{\n            let row = row0 + ty * 8u + {i}u;\n            let start = c_base + row * n + column;");
        for (half, vector) in ["0", "1"].iter().enumerate() {
            for (lane, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let offset = half * 4 + lane;
                let _ = writeln!(
                    w,
                    "            store_c(start + {offset}u, row < m && column + {offset}u < n, c{i}{vector}.{component});"
                );
            }
        }
        let _ = writeln!(w, "        }}");
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

/// The aligned kernel with a K-step of `k_step` (8 or 16): `vec4` loads and stores without
/// bounds checks, double-buffered workgroup tiles, one barrier per k-step.
///
/// Invocation (tx, ty) = (local % 16, local / 16) owns rows `ty * 4 + 0..4` and
/// `64 + ty * 4 + 0..4` and columns `tx * 4 + 0..4` and `64 + tx * 4 + 0..4` of the tile: its
/// workgroup reads in a k-step are whole `vec4`s, consecutive across a warp (no bank
/// conflicts), and its stores of C are `vec4`s, consecutive across the warp within a row.
/// Each k-step, every invocation loads `k_step / 8` vec4s of A's block (along k, from one
/// row) and as many of B's (along n), consecutive invocations reading consecutive vec4s.
fn aligned_body(k_step: usize) -> String {
    assert!(k_step == 8 || k_step == 16, "K-step {k_step}: 8 or 16");
    let quads = k_step / 4; // vec4s per row of A's block
    let loads = k_step / 8; // vec4s of each block per invocation per k-step
    let a_rows_per_load = 256 / quads; // rows of A's block loaded by one vec4 per invocation
    let buffer = k_step * 32; // vec4s in one copy of a tile
    let mut w = String::new();
    // `write!` into a String cannot fail; the results are ignored deliberately.
    let _ = writeln!(
        w,
        r#"@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<S>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<S>>;

// Two copies (ping-pong) of [{k_step} k][32 vec4]: A's block transposed (vectors along m) and
// B's block (vectors along n).
var<workgroup> tile_a: array<vec4<f32>, {tiles}>;
var<workgroup> tile_b: array<vec4<f32>, {tiles}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    // Offsets and strides arrive in elements; the host (aligned_applies) made them, m, n and
    // k multiples of 4, so they convert to vec4 units exactly. Row strides: A its own (k or
    // more: a split-K slice of a wider A), B and C n / 4.
    let k4 = params.a_row_stride / 4u;
    let n4 = n / 4u;
    let steps = k / {k_step}u;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // Loader roles: vec4 a_quad of row a_row of A's block (and of the rows
    // {a_rows_per_load} further down), vec4 b_quad of k row b_k of B's block (and of the k
    // rows 8 further down).
    let a_row = local / {quads}u;
    let a_quad = local % {quads}u;
    let b_k = local / 32u;
    let b_quad = local % 32u;
    // Where they go: A's four k values to four k rows of its transposed block (component
    // a_row % 4 of vec4 a_row / 4 of each), B's vector as it is.
    let a_store = a_quad * 128u + a_row / 4u;
    let a_lane = a_row % 4u;
    let b_store = b_k * 32u + b_quad;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {{
        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + a_row) * k4 + a_quad;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + b_k * n4 + column0 / 4u + b_quad;"#,
        tiles = 2 * buffer,
    );
    for i in 0..8 {
        let _ = writeln!(
            w,
            "        var c{i}0 = vec4<f32>(0.0);\n        var c{i}1 = vec4<f32>(0.0);"
        );
    }
    // The global loads of one k-block into the registers a{p}, b{p}.
    let load = |w: &mut String, indent: &str, declare: &str, a_at: &str, b_at: &str| {
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}a{p} = vec4<f32>(matrix_a[{a_at} + {}u * k4]);",
                p * a_rows_per_load
            );
        }
        for p in 0..loads {
            let _ = writeln!(
                w,
                "{indent}{declare}b{p} = vec4<f32>(matrix_b[{b_at} + {}u * n4]);",
                p * 8
            );
        }
    };
    // The registers into the workgroup tiles' copy starting at vec4 `at`.
    let store = |w: &mut String, indent: &str, at: &str| {
        for p in 0..loads {
            for (j, component) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(
                    w,
                    "{indent}tile_a[{at} + a_store + {}u][a_lane] = a{p}.{component};",
                    j * 32 + p * a_rows_per_load / 4
                );
            }
            let _ = writeln!(w, "{indent}tile_b[{at} + b_store + {}u] = b{p};", p * 256);
        }
    };
    let _ = writeln!(w, "        // k-block 0 into copy 0.");
    load(&mut w, "        ", "var ", "a_start", "b_start");
    store(&mut w, "        ", "0u");
    let _ = writeln!(
        w,
        r#"        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {{
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = (step % 2u) * {buffer}u;
            let next = {buffer}u - current;
            let more = step + 1u < steps;
            if (more) {{
                let a_next = a_start + (step + 1u) * {quads}u;
                let b_next = b_start + (step + 1u) * {k_step}u * n4;"#
    );
    load(&mut w, "                ", "", "a_next", "b_next");
    let _ = writeln!(w, "            }}");
    for kk in 0..k_step {
        let _ = writeln!(
            w,
            "            {{\n                let a_low = tile_a[current + {low}u + ty];\n                let a_high = tile_a[current + {high}u + ty];\n                let b_low = tile_b[current + {low}u + tx];\n                let b_high = tile_b[current + {high}u + tx];",
            low = kk * 32,
            high = kk * 32 + 16
        );
        for i in 0..8 {
            let vector = if i < 4 { "a_low" } else { "a_high" };
            let component = ["x", "y", "z", "w"][i % 4];
            let _ = writeln!(
                w,
                "                c{i}0 = c{i}0 + {vector}.{component} * b_low;\n                c{i}1 = c{i}1 + {vector}.{component} * b_high;"
            );
        }
        let _ = writeln!(w, "            }}");
    }
    let _ = writeln!(w, "            if (more) {{");
    store(&mut w, "                ", "next");
    let _ = writeln!(
        w,
        r#"            }}
            workgroupBarrier();
        }}
        // Rows ty * 4 + i and 64 + ty * 4 + i; columns tx * 4 and 64 + tx * 4 (vec4 + 16).
        let c_low = (b * m + row0 + ty * 4u) * n4 + column0 / 4u + tx;
        let c_high = c_low + 64u * n4;"#
    );
    for i in 0..8 {
        let (start, row) = if i < 4 {
            ("c_low", i)
        } else {
            ("c_high", i - 4)
        };
        let _ = writeln!(
            w,
            "        matrix_c[{start} + {row}u * n4] = vec4<S>(c{i}0);\n        matrix_c[{start} + {row}u * n4 + 16u] = vec4<S>(c{i}1);"
        );
    }
    let _ = writeln!(w, "    }}\n}}");
    w
}

#[cfg(test)]
mod tests {
    use super::{aligned_applies, aligned_body, split_k_factor, ALIGNED_K_STEP};
    use crate::backend::contract::LinearAlgebra;
    use crate::backend::cpu::CpuStorage;
    use crate::backend::gpu::matmul::kernel::MatmulKernel;
    use crate::backend::gpu::matmul::MatmulParams;
    use crate::backend::gpu::runtime::device::GpuDevice;
    use crate::backend::gpu::runtime::params::KernelParams;
    use crate::backend::gpu::runtime::storage::GpuStorage;
    use crate::backend::gpu::runtime::wgsl::COMMON;
    use crate::dtype::DType;
    use crate::layout::Layout;
    use half::f16;

    use crate::backend::tests::support::gpu_device as gpu;

    /// A layout from its parts.
    fn layout(shape: [usize; 3], strides: [usize; 3], offset: usize) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        }
    }

    /// `a x b` by `MatmulLarge { dtype, aligned }` (`None`: by the kernel `matmul` picks)
    /// against the CPU's f32 product of the same
    /// values (for F16: the inputs rounded to f16; the GPU accumulates in f32 as well).
    fn check(
        device: &GpuDevice,
        dtype: DType,
        aligned: Option<bool>,
        (a_len, a_layout): (usize, &Layout),
        (b_len, b_layout): (usize, &Layout),
    ) {
        let round = |x: f32| match dtype {
            DType::F16 => f16::from_f32(x).to_f32(),
            _ => x,
        };
        let a: Vec<f32> = (0..a_len)
            .map(|i| round(((i * 37 % 101) as f32 - 50.0) / 25.0))
            .collect();
        let b: Vec<f32> = (0..b_len)
            .map(|i| round(((i * 53 % 97) as f32 - 48.0) / 24.0))
            .collect();
        let CpuStorage::F32(expected) =
            CpuStorage::F32(crate::backend::cpu::HostBuffer::from(a.clone()))
                .matmul(
                    a_layout,
                    &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(b.clone())),
                    b_layout,
                )
                .unwrap()
        else {
            panic!("dtype changed");
        };
        let upload = |values: Vec<f32>| {
            let cpu = match dtype {
                DType::F16 => CpuStorage::F16(values.into_iter().map(f16::from_f32).collect()),
                _ => CpuStorage::F32(crate::backend::cpu::HostBuffer::from(values)),
            };
            GpuStorage::from_cpu(device, &cpu).unwrap()
        };
        let (a, b) = (upload(a), upload(b));
        let actual = match aligned {
            Some(aligned) => a.matmul_with(
                a_layout,
                &b,
                b_layout,
                MatmulKernel::MatmulLarge { dtype, aligned },
            ),
            None => a.matmul(a_layout, &b, b_layout),
        };
        let actual = actual.unwrap().to_cpu().unwrap();
        let (actual, tolerance): (Vec<f32>, f32) = match actual {
            CpuStorage::F32(values) => ((values).into_vec(), 1e-4),
            CpuStorage::F16(values) => (values.iter().map(|x| x.to_f32()).collect(), 2e-3),
            _ => panic!("dtype changed"),
        };
        assert_eq!(actual.len(), expected.len());
        for (i, (x, y)) in expected.iter().zip(&actual).enumerate() {
            assert!(
                (x - y).abs() <= tolerance * (1.0 + x.abs()),
                "{dtype:?} aligned {aligned:?} {a_layout:?} x {b_layout:?}: element {i}: {x} vs {y}"
            );
        }
    }

    /// The general large-tile kernel against the CPU on edge sizes (forced, whatever the
    /// heuristic).
    #[test]
    fn large_tile_kernel_matches_cpu() {
        let Some(device) = gpu() else { return };
        for (batch, m, k, n, transpose) in [
            (1, 130, 9, 129, false),
            (2, 1, 20, 200, true),
            (1, 128, 128, 128, false),
        ] {
            let a_layout = Layout::contiguous(&[batch, m, k]);
            let b_layout = if transpose {
                Layout::contiguous(&[batch, n, k]).permute(&[0, 2, 1])
            } else {
                Layout::contiguous(&[batch, k, n])
            };
            let (a, b) = ((batch * m * k, &a_layout), (batch * k * n, &b_layout));
            check(&device, DType::F32, Some(false), a, b);
        }
    }

    /// The aligned kernel against the CPU: dense operands, a batch-broadcast B (batch stride
    /// 0), offset views with gaps between batches, 1 to 4 k-steps; F32 and (where the
    /// adapter has it) F16.
    #[test]
    fn aligned_kernel_matches_cpu() {
        let Some(device) = gpu() else { return };
        let s = ALIGNED_K_STEP;
        let dense = |batch, rows, columns| {
            let layout = Layout::contiguous(&[batch, rows, columns]);
            (batch * rows * columns, layout)
        };
        // [2, 256, 64] x [2, 64, 128], both dense (64 / s k-steps).
        let (a0, b0) = (dense(2, 256, 64), dense(2, 64, 128));
        // [2, 128, 3s] x [1 -> 2, 3s, 256]: B broadcast over the batch.
        let a1 = dense(2, 128, 3 * s);
        let b1 = (
            3 * s * 256,
            Layout::contiguous(&[1, 3 * s, 256])
                .broadcast_to(&[2, 3 * s, 256])
                .unwrap(),
        );
        // A: rows 4..260 of each [260, s] batch (offset 4s, batch stride 260s); B: offset
        // 4, 8 unused elements after each [s, 128] batch. One k-step.
        let a2 = (
            2 * 260 * s,
            Layout::contiguous(&[2, 260, s]).narrow(1, 4, 256),
        );
        let b2 = (
            4 + 2 * (s * 128 + 8),
            layout([2, s, 128], [s * 128 + 8, 128, 1], 4),
        );
        let cases = [(&a0, &b0), (&a1, &b1), (&a2, &b2)];
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
            for ((a_len, a_layout), (b_len, b_layout)) in cases {
                assert!(aligned_applies(dtype, a_layout, b_layout));
                check(
                    &device,
                    dtype,
                    Some(true),
                    (*a_len, a_layout),
                    (*b_len, b_layout),
                );
            }
        }
    }

    /// Single f32 products too small to fill the GPU run split over k (`split_k_factor`):
    /// 16 slices of 128 (128 x 2048 x 128), 4 of 128 with A a column slice of a wider matrix
    /// (256 x 512 x 256, row stride 640), against the CPU; batches and f16 are not split.
    #[test]
    fn split_k_products_match_cpu() {
        let Some(device) = gpu() else { return };
        let wide = Layout::contiguous(&[1, 256, 640]).narrow(2, 64, 512);
        let cases = [
            (
                Layout::contiguous(&[1, 128, 2048]),
                128 * 2048,
                Layout::contiguous(&[1, 2048, 128]),
                2048 * 128,
                16,
            ),
            (
                wide,
                256 * 640,
                Layout::contiguous(&[1, 512, 256]),
                512 * 256,
                4,
            ),
        ];
        for (a_layout, a_len, b_layout, b_len, split) in &cases {
            assert_eq!(split_k_factor(DType::F32, a_layout, b_layout), Some(*split));
            check(
                &device,
                DType::F32,
                None,
                (*a_len, a_layout),
                (*b_len, b_layout),
            );
        }
        let batched = Layout::contiguous(&[2, 128, 2048]);
        let batched_b = Layout::contiguous(&[2, 2048, 128]);
        assert_eq!(split_k_factor(DType::F32, &batched, &batched_b), None);
        let (a, b) = (&cases[0].0, &cases[0].2);
        assert_eq!(split_k_factor(DType::F16, a, b), None);
    }

    /// `matmul_with` refuses the aligned kernel where the predicate does not hold (it runs
    /// without bounds checks).
    #[test]
    fn aligned_kernel_is_refused_when_not_legal() {
        let Some(device) = gpu() else { return };
        let a = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(vec![1.0; 128 * 20])),
        )
        .unwrap();
        let b = GpuStorage::from_cpu(
            &device,
            &CpuStorage::F32(crate::backend::cpu::HostBuffer::from(vec![1.0; 20 * 128])),
        )
        .unwrap();
        let (a_layout, b_layout) = (
            Layout::contiguous(&[1, 128, 20]),
            Layout::contiguous(&[1, 20, 128]),
        );
        let key = MatmulKernel::MatmulLarge {
            dtype: DType::F32,
            aligned: true,
        };
        assert!(a.matmul_with(&a_layout, &b, &b_layout, key).is_err());
    }

    /// The predicate: the aligned kernel only where each of its conditions holds.
    #[test]
    fn aligned_applies_only_when_legal() {
        let s = ALIGNED_K_STEP;
        let a = Layout::contiguous(&[2, 256, 4 * s]);
        let b = Layout::contiguous(&[2, 4 * s, 128]);
        let legal = |dtype, a: &Layout, b: &Layout| aligned_applies(dtype, a, b);
        assert!(legal(DType::F32, &a, &b));
        assert!(legal(DType::F16, &a, &b));
        for dtype in [DType::F64, DType::I32, DType::U32, DType::U8, DType::Bool] {
            assert!(!legal(dtype, &a, &b), "{dtype:?}");
        }
        // Broadcast batch (stride 0), offsets and batch strides that are multiples of 4.
        let broadcast = Layout::contiguous(&[1, 4 * s, 128])
            .broadcast_to(&[2, 4 * s, 128])
            .unwrap();
        assert!(legal(DType::F32, &a, &broadcast));
        let a_broadcast = Layout::contiguous(&[1, 256, 4 * s])
            .broadcast_to(&[2, 256, 4 * s])
            .unwrap();
        assert!(legal(DType::F32, &a_broadcast, &broadcast));
        let shifted = |l: &Layout, offset| Layout {
            offset,
            ..l.clone()
        };
        assert!(legal(DType::F32, &shifted(&a, 8), &shifted(&b, 4)));
        assert!(!legal(DType::F32, &shifted(&a, 2), &b));
        assert!(!legal(DType::F32, &a, &shifted(&b, 1)));
        let batch_stride = |l: &Layout, stride| {
            let mut l = l.clone();
            l.strides[0] = stride;
            l
        };
        assert!(legal(
            DType::F32,
            &batch_stride(&a, 0),
            &batch_stride(&b, 4)
        ));
        assert!(!legal(DType::F32, &batch_stride(&a, 256 * 4 * s + 2), &b));
        assert!(!legal(DType::F32, &a, &batch_stride(&b, 6)));
        // Sizes: m and n multiples of 128, k a non-zero multiple of the K-step.
        let sized = |m, k, n| {
            (
                Layout::contiguous(&[2, m, k]),
                Layout::contiguous(&[2, k, n]),
            )
        };
        for (m, k, n, ok) in [
            (128, s, 128, true),
            (384, 2 * s, 256, true),
            (0, s, 128, false),
            (120, s, 128, false),
            (256, s, 192, false),
            (128, 0, 128, false),
            (128, s / 2, 128, false),
            (128, s + 4, 128, false),
        ] {
            let (a, b) = sized(m, k, n);
            assert_eq!(legal(DType::F32, &a, &b), ok, "{m}x{k}x{n}");
        }
        // Layouts: transposed or non-row-major operands, gaps between B's rows.
        let b_transposed = Layout::contiguous(&[2, 128, 4 * s]).permute(&[0, 2, 1]);
        assert!(!legal(DType::F32, &a, &b_transposed));
        let a_transposed = Layout::contiguous(&[2, 4 * s, 256]).permute(&[0, 2, 1]);
        assert!(!legal(DType::F32, &a_transposed, &b));
        // A's rows may be further apart than k (a column slice: split-K), by a multiple of 4.
        let a_narrow = Layout::contiguous(&[2, 256, 8 * s]).narrow(2, 0, 4 * s);
        assert!(legal(DType::F32, &a_narrow, &b));
        let a_odd = Layout::contiguous(&[2, 256, 4 * s + 2]).narrow(2, 0, 4 * s);
        assert!(!legal(DType::F32, &a_odd, &b));
        let b_narrow = Layout::contiguous(&[2, 4 * s, 256]).narrow(2, 128, 128);
        assert!(!legal(DType::F32, &a, &b_narrow));
        // Shapes that do not multiply, or are not of rank 3.
        assert!(!legal(
            DType::F32,
            &a,
            &Layout::contiguous(&[1, 4 * s, 128])
        ));
        assert!(!legal(
            DType::F32,
            &a,
            &Layout::contiguous(&[2, 8 * s, 128])
        ));
        assert!(!legal(
            DType::F32,
            &Layout::contiguous(&[256, 4 * s]),
            &Layout::contiguous(&[4 * s, 128])
        ));
    }

    /// Both K-steps the generator accepts, for both float storage types, parse, validate and
    /// translate to SPIR-V (`all_kernel_sources` covers only `ALIGNED_K_STEP`).
    #[test]
    fn aligned_body_validates_for_both_k_steps() {
        for k_step in [8, 16] {
            for (enable, stored) in [("", "f32"), ("enable f16;\n", "f16")] {
                let source = format!(
                    "{enable}alias S = {stored};\n{}{COMMON}{}",
                    MatmulParams::WGSL,
                    aligned_body(k_step)
                );
                if let Err(error) = crate::backend::gpu::runtime::shader_check::naga_check(&source)
                {
                    panic!("{error}");
                }
            }
        }
    }
}
