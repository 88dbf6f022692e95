//! Kernel `QuantizedKernel::Tiled`: any number of rows of `x` (a prompt) times the transpose
//! of a block-quantized matrix, in 64 x 64 output tiles. For each step of 32 along k, the 256
//! invocations of a workgroup decode the tile's 64 weight rows (one `decode8` unit each,
//! `quantized/decode.rs`) and load 64 rows of `x` into workgroup memory, then each computes a
//! 4 x 4 block of outputs from them. The matrix is decoded once per 64 rows of `x`, never
//! written out whole.

use crate::backend::gpu::quantized::decode::decode_source;
use crate::backend::gpu::quantized::ProductParams;
use crate::backend::gpu::runtime::params::KernelParams;
use crate::backend::gpu::runtime::wgsl::value_header;
use crate::dtype::DType;
use crate::quantization::QuantFormat;

/// Rows and columns of an output tile.
pub(crate) const TILE: usize = 64;

/// WGSL of `QuantizedKernel::Tiled` for `format` and the input dtype (F32 or F16).
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
    text.push_str(
        r#"
// quantized/tiled.rs: 64 x 64 outputs a workgroup, k in steps of 32; rows of the tiles
// padded to 33 values so that a column's reads fall in different banks.
const STEP: u32 = 32u;
const PITCH: u32 = 33u;
var<workgroup> x_tile: array<f32, 2112>;
var<workgroup> w_tile: array<f32, 2112>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(local_invocation_index) local: u32) {
    let tx = local % 16u;
    let ty = local / 16u;
    let m0 = workgroup.y * 64u;
    let n0 = workgroup.x * 64u;
    // What this invocation loads: row `load_row` of both tiles, values 8 * load_unit.. of the step.
    let load_row = local / 4u;
    let load_unit = local % 4u;
    let w_row_byte = min(n0 + load_row, params.n - 1u) * params.row_bytes;
    let x_row = params.x_offset + min(m0 + load_row, params.m - 1u) * params.x_row_stride;
    var acc = array<f32, 16>();
    for (var k0 = 0u; k0 < params.k; k0 += STEP) {
        let w = decode8(w_row_byte, k0 / 8u + load_unit);
        let x_base = x_row + k0 + 8u * load_unit;
        let tile_base = load_row * PITCH + 8u * load_unit;
        for (var i = 0u; i < 8u; i += 1u) {
            w_tile[tile_base + i] = w[i];
            x_tile[tile_base + i] = f32(load_value(x[x_base + i]));
        }
        workgroupBarrier();
        for (var kk = 0u; kk < STEP; kk += 1u) {
            var a: array<f32, 4>;
            var b: array<f32, 4>;
            for (var i = 0u; i < 4u; i += 1u) {
                a[i] = x_tile[(ty + 16u * i) * PITCH + kk];
                b[i] = w_tile[(tx + 16u * i) * PITCH + kk];
            }
            for (var i = 0u; i < 4u; i += 1u) {
                for (var j = 0u; j < 4u; j += 1u) {
                    acc[i * 4u + j] += a[i] * b[j];
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i += 1u) {
        let row = m0 + ty + 16u * i;
        for (var j = 0u; j < 4u; j += 1u) {
            let column = n0 + tx + 16u * j;
            if (row < params.m && column < params.n) {
                y[row * params.n + column] = store_value(T(acc[i * 4u + j]));
            }
        }
    }
}
"#,
    );
    text
}
