//! Kernel `QuantizedKernel::Dequantize`: rows of a block-quantized matrix written out as f32,
//! one invocation per unit of eight values (`decode8`, `quantized/decode.rs`): every row, or
//! the rows an index tensor names (an embedding lookup of token ids). An index outside the
//! matrix raises the dispatch's word of the index flags, as `gather.wgsl` does, and its row
//! is written as zeros.

use crate::backend::gpu::quantized::decode::decode_source;
use crate::backend::gpu::quantized::DequantizeParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::{storage_type, COMMON};
use crate::dtype::DType;
use crate::quantization::QuantFormat;

/// WGSL of `QuantizedKernel::Dequantize` for `format`, with an `index` binding of that dtype
/// (I32 or U32) or over every row.
pub(crate) fn source(format: QuantFormat, index: Option<DType>) -> String {
    let mut text = String::from(DequantizeParams::WGSL);
    text.push_str(COMMON);
    text.push_str("@group(0) @binding(1) var<storage, read> quants: array<u32>;\n");
    let row = match index {
        Some(dtype) => {
            text.push_str(&format!(
                "@group(0) @binding(2) var<storage, read> indices: array<{}>;
@group(0) @binding(3) var<storage, read_write> output: array<f32>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;
",
                storage_type(dtype)
            ));
            "let picked = i32(indices[params.index_offset + r * params.index_stride]);
    if (picked < 0 || u32(picked) >= params.matrix_rows) {
        atomicMax(&flag[params.flag_slot], 1u);
        for (var i = 0u; i < 8u; i += 1u) {
            output[r * params.k + 8u * g + i] = 0.0;
        }
        return;
    }
    let row = u32(picked);"
        }
        None => {
            text.push_str("@group(0) @binding(2) var<storage, read_write> output: array<f32>;\n");
            "let row = r;"
        }
    };
    text.push_str(&decode_source(format));
    text.push_str(&format!(
        r#"
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let id = linear_id(workgroup, workgroups, local);
    let units = params.k / 8u;
    if (id >= params.rows * units) {{
        return;
    }}
    let r = id / units;
    let g = id % units;
    {row}
    let v = decode8(row * params.row_bytes, g);
    for (var i = 0u; i < 8u; i += 1u) {{
        output[r * params.k + 8u * g + i] = v[i];
    }}
}}
"#
    ));
    text
}
