//! Kernel family `MatmulDot`: a product whose operands both run along k in memory (A
//! row-major, B the transpose of a row-major weight: `x W^T`, a linear layer) and whose
//! output is small, computed as one dot product of two contiguous rows per output (F16 and
//! F32, f32 accumulation, 16-byte loads).
//!
//! Why: a classifier head (ResNet-18's `64 x 512 x 1000`) has too few 64 x 64 output tiles
//! to fill the GPU, so the tiled kernels split k and add partial products: on an H200 four
//! kernels and 42 µs for 66 MFLOP (docs/PERFORMANCE.md). Here a workgroup owns 64 rows x 8
//! columns (125 workgroups for 1000 columns): invocation `(row, group)` of 64 x 4 reads its
//! row of A and two rows of B (shared by the 64 invocations of its group, a cache hit) four
//! vectors at a time and keeps two f32 sums. There is no workgroup memory and no barrier. B
//! is read into L2 first (`prefetch/`): one kernel of 24 µs in that forward on the H200.
//!
//! [`applies`] says where it runs; `GpuStorage::matmul` (`matmul/primitive.rs`) offers it to the
//! autotuner as candidate `dot` there.

use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes};
use crate::dtype::DType;
use crate::layout::Layout;

/// Output rows of a workgroup.
pub(crate) const ROWS: usize = 64;

/// Output columns of a workgroup (4 groups of invocations, two columns each).
pub(crate) const COLUMNS: usize = 8;

/// Rows of A at most where the kernel is offered (a small output; larger products fill the
/// GPU with the tiled kernels).
const MAX_ROWS: usize = 256;

/// The rows of A (m) of `a x b` (rank-3 views `[batch, m, k]`, `[batch, k, n]`) where both
/// operands run along k in memory as 16-byte vectors: F16 or F32, k > 0, A's and B's k-stride
/// 1, and every offset and other stride (k too) a whole number of vectors. `None` elsewhere.
/// The dot and vector kernels (`matmul/vector.rs`) read their operands this way.
pub(crate) fn rows_contiguous_along_k(dtype: DType, a: &Layout, b: &Layout) -> Option<usize> {
    let lanes = vector_lanes(dtype)?;
    let (&[_, m, k], &[_, _, _]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return None;
    };
    let whole = |value: usize| value.is_multiple_of(lanes);
    let (&[a_batch, a_row, 1], &[b_batch, 1, b_column]) =
        (a.strides.as_slice(), b.strides.as_slice())
    else {
        return None;
    };
    let aligned = k > 0
        && whole(k)
        && whole(a.offset)
        && whole(b.offset)
        && [a_batch, a_row, b_batch, b_column].into_iter().all(whole);
    aligned.then_some(m)
}

/// Whether the kernel computes `a x b`: operands contiguous along k
/// ([`rows_contiguous_along_k`]) and m at most [`MAX_ROWS`].
pub(crate) fn applies(dtype: DType, a: &Layout, b: &Layout) -> bool {
    rows_contiguous_along_k(dtype, a, b).is_some_and(|m| m <= MAX_ROWS)
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<MatmulKernel>, dtype: DType) {
    if vector_lanes(dtype).is_some() {
        keys.push(MatmulKernel::MatmulDot { dtype });
    }
}

/// WGSL's `dot_vectors(x, y) -> f32`: the dot product of two 16-byte vectors of `dtype` (F16 or
/// F32) read as `vec4<u32>`, in f32 (shared with `matmul/vector.rs`).
pub(crate) fn dot_vectors(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => {
            "fn dot_vectors(x: vec4<u32>, y: vec4<u32>) -> f32 {
    let low = vec4<f32>(unpack2x16float(x.x), unpack2x16float(x.y))
        * vec4<f32>(unpack2x16float(y.x), unpack2x16float(y.y));
    let high = vec4<f32>(unpack2x16float(x.z), unpack2x16float(x.w))
        * vec4<f32>(unpack2x16float(y.z), unpack2x16float(y.w));
    return dot(low + high, vec4<f32>(1.0));
}
"
        }
        _ => {
            "fn dot_vectors(x: vec4<u32>, y: vec4<u32>) -> f32 {
    return dot(bitcast<vec4<f32>>(x), bitcast<vec4<f32>>(y));
}
"
        }
    }
}

/// WGSL of `MatmulKernel::MatmulDot` for `dtype` (F16 or F32; after `enable f16;` for F16).
pub(crate) fn source(dtype: DType) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    let mut text = value_header(dtype);
    text.push_str(MatmulParams::WGSL);
    text.push_str(dot_vectors(dtype));
    text.push_str(&format!(
        r#"// matmul_dot.rs: one dot product of two rows contiguous along k per output; {lanes}
// elements per 16-byte vector.
const LANES: u32 = {lanes}u;
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> c: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let row = workgroup.y * {ROWS}u + local % {ROWS}u;
    let column = workgroup.x * {COLUMNS}u + (local / {ROWS}u) * 2u;
    if (row >= params.m || column >= params.n) {{
        return;
    }}
    // The second column past n reads the first's row again and is not stored.
    let second = min(column + 1u, params.n - 1u);
    let vectors = params.k / LANES;
    for (var batch = workgroup.z; batch < params.batch; batch += workgroups.z) {{
        let a_row = (params.a_offset + batch * params.a_batch_stride + row * params.a_row_stride) / LANES;
        let b_base = params.b_offset + batch * params.b_batch_stride;
        let b_first = (b_base + column * params.b_column_stride) / LANES;
        let b_second = (b_base + second * params.b_column_stride) / LANES;
        var sum0 = 0.0;
        var sum1 = 0.0;
        var v = 0u;
        // Four vectors of each row in flight, then the rest one at a time.
        for (; v + 4u <= vectors; v += 4u) {{
            let x0 = a[a_row + v];
            let x1 = a[a_row + v + 1u];
            let x2 = a[a_row + v + 2u];
            let x3 = a[a_row + v + 3u];
            let y0 = b[b_first + v];
            let y1 = b[b_first + v + 1u];
            let y2 = b[b_first + v + 2u];
            let y3 = b[b_first + v + 3u];
            let z0 = b[b_second + v];
            let z1 = b[b_second + v + 1u];
            let z2 = b[b_second + v + 2u];
            let z3 = b[b_second + v + 3u];
            sum0 += dot_vectors(x0, y0) + dot_vectors(x1, y1) + dot_vectors(x2, y2) + dot_vectors(x3, y3);
            sum1 += dot_vectors(x0, z0) + dot_vectors(x1, z1) + dot_vectors(x2, z2) + dot_vectors(x3, z3);
        }}
        for (; v < vectors; v += 1u) {{
            let x = a[a_row + v];
            sum0 += dot_vectors(x, b[b_first + v]);
            sum1 += dot_vectors(x, b[b_second + v]);
        }}
        let out = (batch * params.m + row) * params.n + column;
        c[out] = store_value(T(sum0));
        if (column + 1u < params.n) {{
            c[out + 1u] = store_value(T(sum1));
        }}
    }}
}}
"#,
        ROWS = ROWS,
        COLUMNS = COLUMNS,
    ));
    text
}
