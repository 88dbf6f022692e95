//! Kernel family `MatmulVector`: a product of a few rows of A (at most [`ROWS`]: a language
//! model's decode step, one token per sequence) and B, the transpose of a row-major weight
//! (`x W^T`), both contiguous along k (F16 and F32, f32 accumulation, 16-byte loads).
//!
//! Why: with one row the other kernels leave the GPU idle. The 64 x 64 tile computes 64 rows
//! to keep one; the dot kernel (`matmul/dot.rs`) gives each output to one invocation that
//! walks all of k alone, with 4 of a workgroup's 256 invocations busy. Here a workgroup of 256
//! owns 8 columns of the output: the 32 invocations of a column split k, each reading every
//! 32nd 16-byte vector of W's row (one 512-byte read per step for the 32) and keeping one f32
//! sum per row of A; the 32 sums of a column are added in workgroup memory in five halvings.
//! Every element of W is read once, by one invocation; A's rows (a few KB) come from cache.
//!
//! [`applies`] says where it runs; `GpuStorage::matmul` (`matmul/primitive.rs`) makes it the
//! default there and offers it to the autotuner as candidate `vector`.

use crate::backend::gpu::matmul::dot::{dot_vectors, rows_contiguous_along_k};
use crate::backend::gpu::matmul::kernel::MatmulKernel;
use crate::backend::gpu::matmul::MatmulParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes};
use crate::dtype::DType;
use crate::layout::Layout;

/// Rows of A at most (one sum each per invocation).
pub(crate) const ROWS: usize = 4;

/// Output columns of a workgroup.
pub(crate) const COLUMNS: usize = 8;

/// Invocations that split k for one column (256 / [`COLUMNS`]).
const SPLIT: usize = 32;

/// Whether the kernel computes `a x b` (rank-3 views `[batch, m, k]`, `[batch, k, n]`):
/// operands contiguous along k as the dot kernel reads them
/// ([`rows_contiguous_along_k`]) and m from 1 to [`ROWS`].
pub(crate) fn applies(dtype: DType, a: &Layout, b: &Layout) -> bool {
    rows_contiguous_along_k(dtype, a, b).is_some_and(|m| (1..=ROWS).contains(&m))
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<MatmulKernel>, dtype: DType) {
    if vector_lanes(dtype).is_some() {
        keys.push(MatmulKernel::MatmulVector { dtype });
    }
}

/// WGSL of `MatmulKernel::MatmulVector` for `dtype` (F16 or F32; after `enable f16;` for F16).
pub(crate) fn source(dtype: DType) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    let mut text = value_header(dtype);
    text.push_str(MatmulParams::WGSL);
    text.push_str(dot_vectors(dtype));
    text.push_str(&format!(
        r#"// matmul/vector.rs: {COLUMNS} columns a workgroup, {SPLIT} invocations splitting k for
// each, up to {ROWS} rows of A; {lanes} elements per 16-byte vector.
const LANES: u32 = {lanes}u;
const SPLIT: u32 = {SPLIT}u;
const INVOCATIONS: u32 = {invocations}u;
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> c: array<S>;
// The partial sums: row r of A at [r * INVOCATIONS + invocation].
var<workgroup> partial: array<f32, {partials}>;

@compute @workgroup_size({invocations})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let lane = local % SPLIT;
    let column = workgroup.x * {COLUMNS}u + local / SPLIT;
    // A column past n reads the last one's row (every invocation reaches the barriers) and
    // stores nothing.
    let read_column = min(column, params.n - 1u);
    let vectors = params.k / LANES;
    let rows = min(params.m, {ROWS}u);
    for (var batch = workgroup.z; batch < params.batch; batch += workgroups.z) {{
        let a_base = (params.a_offset + batch * params.a_batch_stride) / LANES;
        let a_row = params.a_row_stride / LANES;
        let w_row = (params.b_offset + batch * params.b_batch_stride + read_column * params.b_column_stride) / LANES;
        var sums = array<f32, {ROWS}>();
        for (var v = lane; v < vectors; v += SPLIT) {{
            let w = b[w_row + v];
            for (var r = 0u; r < rows; r += 1u) {{
                sums[r] += dot_vectors(a[a_base + r * a_row + v], w);
            }}
        }}
        for (var r = 0u; r < {ROWS}u; r += 1u) {{
            partial[r * INVOCATIONS + local] = sums[r];
        }}
        workgroupBarrier();
        for (var half = SPLIT / 2u; half > 0u; half /= 2u) {{
            if (lane < half) {{
                for (var r = 0u; r < {ROWS}u; r += 1u) {{
                    partial[r * INVOCATIONS + local] += partial[r * INVOCATIONS + local + half];
                }}
            }}
            workgroupBarrier();
        }}
        if (lane == 0u && column < params.n) {{
            for (var r = 0u; r < rows; r += 1u) {{
                c[(batch * params.m + r) * params.n + column] = store_value(T(partial[r * INVOCATIONS + local]));
            }}
        }}
        // The next batch writes the partial sums again.
        workgroupBarrier();
    }}
}}
"#,
        invocations = COLUMNS * SPLIT,
        partials = ROWS * COLUMNS * SPLIT,
    ));
    text
}
