//! Kernel `QuantizedKernel::Vector`: at most [`ROWS`] rows of `x` (a decode step: one token
//! per sequence) times the transpose of a block-quantized matrix, read in place. A workgroup
//! of 256 owns [`COLUMNS`] outputs; the 32 invocations of an output split its weight row in
//! units of eight values (`decode8`, `quantized/decode.rs`), so neighbouring invocations read
//! neighbouring bytes of a block, each byte once, and keep one f32 sum per row of `x`; the 32
//! sums are added in workgroup memory in five halvings. The matrix is the only large read: a
//! 4-bit row costs a quarter of an f16 row's bytes.

use crate::backend::gpu::quantized::decode::decode_source;
use crate::backend::gpu::quantized::ProductParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::dtype::DType;
use crate::quantization::QuantFormat;

/// Rows of `x` at most (one sum each per invocation).
pub(crate) const ROWS: usize = 8;

/// Output columns (weight rows) of a workgroup.
pub(crate) const COLUMNS: usize = 8;

/// Invocations that split one weight row.
const SPLIT: usize = 32;

/// WGSL of `QuantizedKernel::Vector` for `format` and the input dtype (F32 or F16).
pub(crate) fn source(format: QuantFormat, dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(ProductParams::WGSL);
    text.push_str(
        "@group(0) @binding(1) var<storage, read> quants: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<S>;
@group(0) @binding(3) var<storage, read_write> y: array<S>;
",
    );
    text.push_str(&decode_source(format));
    text.push_str(&format!(
        r#"
// quantized/vector.rs: {COLUMNS} outputs a workgroup, {SPLIT} invocations splitting each.
const SPLIT: u32 = {SPLIT}u;
const INVOCATIONS: u32 = {invocations}u;
// The partial sums: row r of x at [r * INVOCATIONS + invocation].
var<workgroup> partial: array<f32, {partials}>;

@compute @workgroup_size({invocations})
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let lane = local % SPLIT;
    let column = (workgroup.y * workgroups.x + workgroup.x) * {COLUMNS}u + local / SPLIT;
    // An output past n reads the last row (every invocation reaches the barriers) and stores
    // nothing.
    let row_byte = min(column, params.n - 1u) * params.row_bytes;
    let units = params.k / 8u;
    let rows = min(params.m, {ROWS}u);
    var sums = array<f32, {ROWS}>();
    for (var g = lane; g < units; g += SPLIT) {{
        let w = decode8(row_byte, g);
        for (var r = 0u; r < rows; r += 1u) {{
            let base = params.x_offset + r * params.x_row_stride + 8u * g;
            var s = 0.0;
            for (var i = 0u; i < 8u; i += 1u) {{
                s += w[i] * f32(load_value(x[base + i]));
            }}
            sums[r] += s;
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
            y[r * params.n + column] = store_value(T(partial[r * INVOCATIONS + local]));
        }}
    }}
}}
"#,
        invocations = COLUMNS * SPLIT,
        partials = ROWS * COLUMNS * SPLIT,
    ));
    text
}
