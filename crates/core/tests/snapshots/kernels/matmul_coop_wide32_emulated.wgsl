enable f16;
var<private> emulated_lane: u32;
// Half `at` (counted in halves) of the staging words, as f32.
fn emulated_half(at: u32) -> f32 {
    return unpack2x16float(bitcast<u32>(tile[at / 2u]))[at % 2u];
}
fn emulated_multiply_add(a: vec2<u32>, b: vec2<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var result = c;
    let row = 2u * a.x + (emulated_lane / 2u) * 2u * a.y;
    let column = 2u * b.x + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let x = emulated_half(row + j);
        let at = column + j * 2u * b.y;
        result[0] = result[0] + x * vec4<f32>(emulated_half(at), emulated_half(at + 1u), emulated_half(at + 2u), emulated_half(at + 3u));
        result[1] = result[1] + x * vec4<f32>(emulated_half(at + 4u), emulated_half(at + 5u), emulated_half(at + 6u), emulated_half(at + 7u));
    }
    return result;
}
fn emulated_store_scratch(c: array<vec4<f32>, 2>, start: u32) {
    let at = start + emulated_lane * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        tile[at + j] = c[0][j];
        tile[at + 4u + j] = c[1][j];
    }
}
struct MatmulParams {
    batch: u32,
    m: u32,
    n: u32,
    k: u32,
    a_offset: u32,
    a_batch_stride: u32,
    a_row_stride: u32,
    a_column_stride: u32,
    b_offset: u32,
    b_batch_stride: u32,
    b_row_stride: u32,
    b_column_stride: u32,
}
@group(0) @binding(0) var<storage, read> params: MatmulParams;
// common.wgsl — included by anygrad's kernels after the generated header that defines the
// element types, the op functions and binding 0, `params` (the family's parameter struct,
// declared once in Rust with `kernel_params!`, see params.rs). Passing sizes, offsets and
// strides in a small storage buffer (instead of baking them into the shader) lets one compiled
// pipeline serve every shape, and lets strided and broadcast (stride-0) views be read in place
// without first copying them to a contiguous buffer.

// One invocation per element, 256 per workgroup. A dispatch may have at most 65,535
// workgroups per dimension, so large grids spill into y; this rebuilds the linear index.
fn linear_id(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32) -> u32 {
    return (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
}
@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// 1 copy of A's block [128 rows][20 words] from word 0, then of B's
// [32 k][132 words] from word 2560; after the k-loop, subgroup s's 16 x 16 f32
// scratch tile at word 256 s.
var<workgroup> tile: array<f32, 6784>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let subgroup = local / 32u;
    let lane = local % 32u;
    emulated_lane = lane;
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let k8 = k / 8u;
    let n8 = n / 8u;
    let steps = k / 32u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 256u;
    // This subgroup's 64 x 64 part of the tile.
    let sub_row = (subgroup / 4u) * 64u;
    let sub_column = (subgroup % 4u) * 64u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16 bytes `local % 4` of A's block rows `local / 4 + 64p`
    // (p < 2), 16 bytes `local % 32` of B's k rows `local / 32 + 8p`
    // (p < 4); the words where they go in a block copy.
    let a_store = (local / 4u) * 20u + (local % 4u) * 4u;
    let b_store = 2560u + (local / 32u) * 132u + (local % 32u) * 4u;
    // This subgroup's first fragment words in a block copy.
    let a_fragment = sub_row * 20u;
    let b_fragment = 2560u + sub_column / 2u;
    var c00: array<vec4<f32>, 2>;
    var c01: array<vec4<f32>, 2>;
    var c02: array<vec4<f32>, 2>;
    var c03: array<vec4<f32>, 2>;
    var c10: array<vec4<f32>, 2>;
    var c11: array<vec4<f32>, 2>;
    var c12: array<vec4<f32>, 2>;
    var c13: array<vec4<f32>, 2>;
    var c20: array<vec4<f32>, 2>;
    var c21: array<vec4<f32>, 2>;
    var c22: array<vec4<f32>, 2>;
    var c23: array<vec4<f32>, 2>;
    var c30: array<vec4<f32>, 2>;
    var c31: array<vec4<f32>, 2>;
    var c32: array<vec4<f32>, 2>;
    var c33: array<vec4<f32>, 2>;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        c00 = array<vec4<f32>, 2>();
        c01 = array<vec4<f32>, 2>();
        c02 = array<vec4<f32>, 2>();
        c03 = array<vec4<f32>, 2>();
        c10 = array<vec4<f32>, 2>();
        c11 = array<vec4<f32>, 2>();
        c12 = array<vec4<f32>, 2>();
        c13 = array<vec4<f32>, 2>();
        c20 = array<vec4<f32>, 2>();
        c21 = array<vec4<f32>, 2>();
        c22 = array<vec4<f32>, 2>();
        c23 = array<vec4<f32>, 2>();
        c30 = array<vec4<f32>, 2>();
        c31 = array<vec4<f32>, 2>();
        c32 = array<vec4<f32>, 2>();
        c33 = array<vec4<f32>, 2>();
        // This invocation's first 16 bytes of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / 4u) * k8 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / 32u) * n8 + column0 / 8u + local % 32u;
        // k-block 0 into copy 0.
        var a0 = matrix_a[a_start + 0u * k8];
        var a1 = matrix_a[a_start + 64u * k8];
        var b0 = matrix_b[b_start + 0u * n8];
        var b1 = matrix_b[b_start + 8u * n8];
        var b2 = matrix_b[b_start + 16u * n8];
        var b3 = matrix_b[b_start + 24u * n8];
        tile[0u + a_store + 0u] = bitcast<f32>(a0.x);
        tile[0u + a_store + 1u] = bitcast<f32>(a0.y);
        tile[0u + a_store + 2u] = bitcast<f32>(a0.z);
        tile[0u + a_store + 3u] = bitcast<f32>(a0.w);
        tile[0u + a_store + 1280u] = bitcast<f32>(a1.x);
        tile[0u + a_store + 1281u] = bitcast<f32>(a1.y);
        tile[0u + a_store + 1282u] = bitcast<f32>(a1.z);
        tile[0u + a_store + 1283u] = bitcast<f32>(a1.w);
        tile[0u + b_store + 0u] = bitcast<f32>(b0.x);
        tile[0u + b_store + 1u] = bitcast<f32>(b0.y);
        tile[0u + b_store + 2u] = bitcast<f32>(b0.z);
        tile[0u + b_store + 3u] = bitcast<f32>(b0.w);
        tile[0u + b_store + 1056u] = bitcast<f32>(b1.x);
        tile[0u + b_store + 1057u] = bitcast<f32>(b1.y);
        tile[0u + b_store + 1058u] = bitcast<f32>(b1.z);
        tile[0u + b_store + 1059u] = bitcast<f32>(b1.w);
        tile[0u + b_store + 2112u] = bitcast<f32>(b2.x);
        tile[0u + b_store + 2113u] = bitcast<f32>(b2.y);
        tile[0u + b_store + 2114u] = bitcast<f32>(b2.z);
        tile[0u + b_store + 2115u] = bitcast<f32>(b2.w);
        tile[0u + b_store + 3168u] = bitcast<f32>(b3.x);
        tile[0u + b_store + 3169u] = bitcast<f32>(b3.y);
        tile[0u + b_store + 3170u] = bitcast<f32>(b3.z);
        tile[0u + b_store + 3171u] = bitcast<f32>(b3.w);
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // The next k-block's loads go out before the current block is multiplied out.
            let current = 0u;
            let a_current = current * 2560u;
            let b_current = current * 4224u;
            let more = step + 1u < steps;
            if (more) {
                let a_next = a_start + (step + 1u) * 4u;
                let b_next = b_start + (step + 1u) * 32u * n8;
                a0 = matrix_a[a_next + 0u * k8];
                a1 = matrix_a[a_next + 64u * k8];
                b0 = matrix_b[b_next + 0u * n8];
                b1 = matrix_b[b_next + 8u * n8];
                b2 = matrix_b[b_next + 16u * n8];
                b3 = matrix_b[b_next + 24u * n8];
            }
            {
                let fb0 = vec2<u32>(b_current + b_fragment + 0u, 132u);
                let fb1 = vec2<u32>(b_current + b_fragment + 8u, 132u);
                let fb2 = vec2<u32>(b_current + b_fragment + 16u, 132u);
                let fb3 = vec2<u32>(b_current + b_fragment + 24u, 132u);
                let fa0 = vec2<u32>(a_current + a_fragment + 0u, 20u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c02 = emulated_multiply_add(fa0, fb2, c02);
                c03 = emulated_multiply_add(fa0, fb3, c03);
                let fa1 = vec2<u32>(a_current + a_fragment + 320u, 20u);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c12 = emulated_multiply_add(fa1, fb2, c12);
                c13 = emulated_multiply_add(fa1, fb3, c13);
                let fa2 = vec2<u32>(a_current + a_fragment + 640u, 20u);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c22 = emulated_multiply_add(fa2, fb2, c22);
                c23 = emulated_multiply_add(fa2, fb3, c23);
                let fa3 = vec2<u32>(a_current + a_fragment + 960u, 20u);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                c31 = emulated_multiply_add(fa3, fb1, c31);
                c32 = emulated_multiply_add(fa3, fb2, c32);
                c33 = emulated_multiply_add(fa3, fb3, c33);
            }
            {
                let fb0 = vec2<u32>(b_current + b_fragment + 2112u, 132u);
                let fb1 = vec2<u32>(b_current + b_fragment + 2120u, 132u);
                let fb2 = vec2<u32>(b_current + b_fragment + 2128u, 132u);
                let fb3 = vec2<u32>(b_current + b_fragment + 2136u, 132u);
                let fa0 = vec2<u32>(a_current + a_fragment + 8u, 20u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c02 = emulated_multiply_add(fa0, fb2, c02);
                c03 = emulated_multiply_add(fa0, fb3, c03);
                let fa1 = vec2<u32>(a_current + a_fragment + 328u, 20u);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c12 = emulated_multiply_add(fa1, fb2, c12);
                c13 = emulated_multiply_add(fa1, fb3, c13);
                let fa2 = vec2<u32>(a_current + a_fragment + 648u, 20u);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c22 = emulated_multiply_add(fa2, fb2, c22);
                c23 = emulated_multiply_add(fa2, fb3, c23);
                let fa3 = vec2<u32>(a_current + a_fragment + 968u, 20u);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                c31 = emulated_multiply_add(fa3, fb1, c31);
                c32 = emulated_multiply_add(fa3, fb2, c32);
                c33 = emulated_multiply_add(fa3, fb3, c33);
            }
            // The only copy, once every subgroup has read its fragments.
            workgroupBarrier();
            if (more) {
                tile[0u + a_store + 0u] = bitcast<f32>(a0.x);
                tile[0u + a_store + 1u] = bitcast<f32>(a0.y);
                tile[0u + a_store + 2u] = bitcast<f32>(a0.z);
                tile[0u + a_store + 3u] = bitcast<f32>(a0.w);
                tile[0u + a_store + 1280u] = bitcast<f32>(a1.x);
                tile[0u + a_store + 1281u] = bitcast<f32>(a1.y);
                tile[0u + a_store + 1282u] = bitcast<f32>(a1.z);
                tile[0u + a_store + 1283u] = bitcast<f32>(a1.w);
                tile[0u + b_store + 0u] = bitcast<f32>(b0.x);
                tile[0u + b_store + 1u] = bitcast<f32>(b0.y);
                tile[0u + b_store + 2u] = bitcast<f32>(b0.z);
                tile[0u + b_store + 3u] = bitcast<f32>(b0.w);
                tile[0u + b_store + 1056u] = bitcast<f32>(b1.x);
                tile[0u + b_store + 1057u] = bitcast<f32>(b1.y);
                tile[0u + b_store + 1058u] = bitcast<f32>(b1.z);
                tile[0u + b_store + 1059u] = bitcast<f32>(b1.w);
                tile[0u + b_store + 2112u] = bitcast<f32>(b2.x);
                tile[0u + b_store + 2113u] = bitcast<f32>(b2.y);
                tile[0u + b_store + 2114u] = bitcast<f32>(b2.z);
                tile[0u + b_store + 2115u] = bitcast<f32>(b2.w);
                tile[0u + b_store + 3168u] = bitcast<f32>(b3.x);
                tile[0u + b_store + 3169u] = bitcast<f32>(b3.y);
                tile[0u + b_store + 3170u] = bitcast<f32>(b3.z);
                tile[0u + b_store + 3171u] = bitcast<f32>(b3.w);
            }
            workgroupBarrier();
        }
        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;
        emulated_store_scratch(c00, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c01, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c02, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c03, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c10, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c11, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c12, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c13, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c20, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c21, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c22, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c23, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c30, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c31, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c32, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c33, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
    }
}
