enable f16;
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
@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 1024>;
// Two copies (ping-pong) of A's block [128 rows][40] and B's [32 k][136] (padded rows).
var<workgroup> tile_a: array<f16, 10240>;
var<workgroup> tile_b: array<f16, 8704>;
var<private> emulated_lane: u32;
fn emulated_multiply_add(a: vec2<u32>, b: vec2<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var result = c;
    let row = a.x + (emulated_lane / 2u) * a.y;
    let column = b.x + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let x = f32(tile_a[row + j]);
        let at = column + j * b.y;
        result[0] = result[0] + x * vec4<f32>(f32(tile_b[at + 0u]), f32(tile_b[at + 1u]), f32(tile_b[at + 2u]), f32(tile_b[at + 3u]));
        result[1] = result[1] + x * vec4<f32>(f32(tile_b[at + 4u]), f32(tile_b[at + 5u]), f32(tile_b[at + 6u]), f32(tile_b[at + 7u]));
    }
    return result;
}
fn emulated_store_scratch(c: array<vec4<f32>, 2>, start: u32) {
    let at = start + emulated_lane * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        scratch[at + j] = c[0][j];
        scratch[at + 4u + j] = c[1][j];
    }
}

@compute @workgroup_size(128)
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
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // This subgroup's 64 x 64 quarter of the tile.
    let sub_row = (subgroup / 2u) * 64u;
    let sub_column = (subgroup % 2u) * 64u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    let k4 = k / 4u;
    let steps = k / 32u;
    // Loader roles: vec4 `local % 8` of rows `local / 8 + 16p` of A's block,
    // vec4 `local % 32` of k rows `local / 32 + 4p` of B's block (p = 0..8); where they
    // go in a block copy.
    let a_store = (local / 8u) * 40u + (local % 8u) * 4u;
    let b_store = (local / 32u) * 136u + (local % 32u) * 4u;
    // This subgroup's first A row in a block copy.
    let a_fragment = sub_row * 40u;
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
        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + local / 8u) * k4 + local % 8u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + (local / 32u) * n4 + column0 / 4u + local % 32u;
        // k-block 0 into copy 0.
        var a0 = matrix_a[a_start + 0u * k4];
        var a1 = matrix_a[a_start + 16u * k4];
        var a2 = matrix_a[a_start + 32u * k4];
        var a3 = matrix_a[a_start + 48u * k4];
        var a4 = matrix_a[a_start + 64u * k4];
        var a5 = matrix_a[a_start + 80u * k4];
        var a6 = matrix_a[a_start + 96u * k4];
        var a7 = matrix_a[a_start + 112u * k4];
        var b0 = matrix_b[b_start + 0u * n4];
        var b1 = matrix_b[b_start + 4u * n4];
        var b2 = matrix_b[b_start + 8u * n4];
        var b3 = matrix_b[b_start + 12u * n4];
        var b4 = matrix_b[b_start + 16u * n4];
        var b5 = matrix_b[b_start + 20u * n4];
        var b6 = matrix_b[b_start + 24u * n4];
        var b7 = matrix_b[b_start + 28u * n4];
        tile_a[0u + a_store + 0u] = a0.x;
        tile_b[0u + b_store + 0u] = b0.x;
        tile_a[0u + a_store + 1u] = a0.y;
        tile_b[0u + b_store + 1u] = b0.y;
        tile_a[0u + a_store + 2u] = a0.z;
        tile_b[0u + b_store + 2u] = b0.z;
        tile_a[0u + a_store + 3u] = a0.w;
        tile_b[0u + b_store + 3u] = b0.w;
        tile_a[0u + a_store + 640u] = a1.x;
        tile_b[0u + b_store + 544u] = b1.x;
        tile_a[0u + a_store + 641u] = a1.y;
        tile_b[0u + b_store + 545u] = b1.y;
        tile_a[0u + a_store + 642u] = a1.z;
        tile_b[0u + b_store + 546u] = b1.z;
        tile_a[0u + a_store + 643u] = a1.w;
        tile_b[0u + b_store + 547u] = b1.w;
        tile_a[0u + a_store + 1280u] = a2.x;
        tile_b[0u + b_store + 1088u] = b2.x;
        tile_a[0u + a_store + 1281u] = a2.y;
        tile_b[0u + b_store + 1089u] = b2.y;
        tile_a[0u + a_store + 1282u] = a2.z;
        tile_b[0u + b_store + 1090u] = b2.z;
        tile_a[0u + a_store + 1283u] = a2.w;
        tile_b[0u + b_store + 1091u] = b2.w;
        tile_a[0u + a_store + 1920u] = a3.x;
        tile_b[0u + b_store + 1632u] = b3.x;
        tile_a[0u + a_store + 1921u] = a3.y;
        tile_b[0u + b_store + 1633u] = b3.y;
        tile_a[0u + a_store + 1922u] = a3.z;
        tile_b[0u + b_store + 1634u] = b3.z;
        tile_a[0u + a_store + 1923u] = a3.w;
        tile_b[0u + b_store + 1635u] = b3.w;
        tile_a[0u + a_store + 2560u] = a4.x;
        tile_b[0u + b_store + 2176u] = b4.x;
        tile_a[0u + a_store + 2561u] = a4.y;
        tile_b[0u + b_store + 2177u] = b4.y;
        tile_a[0u + a_store + 2562u] = a4.z;
        tile_b[0u + b_store + 2178u] = b4.z;
        tile_a[0u + a_store + 2563u] = a4.w;
        tile_b[0u + b_store + 2179u] = b4.w;
        tile_a[0u + a_store + 3200u] = a5.x;
        tile_b[0u + b_store + 2720u] = b5.x;
        tile_a[0u + a_store + 3201u] = a5.y;
        tile_b[0u + b_store + 2721u] = b5.y;
        tile_a[0u + a_store + 3202u] = a5.z;
        tile_b[0u + b_store + 2722u] = b5.z;
        tile_a[0u + a_store + 3203u] = a5.w;
        tile_b[0u + b_store + 2723u] = b5.w;
        tile_a[0u + a_store + 3840u] = a6.x;
        tile_b[0u + b_store + 3264u] = b6.x;
        tile_a[0u + a_store + 3841u] = a6.y;
        tile_b[0u + b_store + 3265u] = b6.y;
        tile_a[0u + a_store + 3842u] = a6.z;
        tile_b[0u + b_store + 3266u] = b6.z;
        tile_a[0u + a_store + 3843u] = a6.w;
        tile_b[0u + b_store + 3267u] = b6.w;
        tile_a[0u + a_store + 4480u] = a7.x;
        tile_b[0u + b_store + 3808u] = b7.x;
        tile_a[0u + a_store + 4481u] = a7.y;
        tile_b[0u + b_store + 3809u] = b7.y;
        tile_a[0u + a_store + 4482u] = a7.z;
        tile_b[0u + b_store + 3810u] = b7.z;
        tile_a[0u + a_store + 4483u] = a7.w;
        tile_b[0u + b_store + 3811u] = b7.w;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `step % 2` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * 5120u;
            let b_current = current * 4352u;
            let more = step + 1u < steps;
            if (more) {
                let a_next = a_start + (step + 1u) * 8u;
                let b_next = b_start + (step + 1u) * 32u * n4;
                a0 = matrix_a[a_next + 0u * k4];
                a1 = matrix_a[a_next + 16u * k4];
                a2 = matrix_a[a_next + 32u * k4];
                a3 = matrix_a[a_next + 48u * k4];
                a4 = matrix_a[a_next + 64u * k4];
                a5 = matrix_a[a_next + 80u * k4];
                a6 = matrix_a[a_next + 96u * k4];
                a7 = matrix_a[a_next + 112u * k4];
                b0 = matrix_b[b_next + 0u * n4];
                b1 = matrix_b[b_next + 4u * n4];
                b2 = matrix_b[b_next + 8u * n4];
                b3 = matrix_b[b_next + 12u * n4];
                b4 = matrix_b[b_next + 16u * n4];
                b5 = matrix_b[b_next + 20u * n4];
                b6 = matrix_b[b_next + 24u * n4];
                b7 = matrix_b[b_next + 28u * n4];
            }
            {
                let fb0 = vec2<u32>(b_current + sub_column + 0u, 136u);
                let fb1 = vec2<u32>(b_current + sub_column + 16u, 136u);
                let fb2 = vec2<u32>(b_current + sub_column + 32u, 136u);
                let fb3 = vec2<u32>(b_current + sub_column + 48u, 136u);
                let fa0 = vec2<u32>(a_current + a_fragment + 0u, 40u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c02 = emulated_multiply_add(fa0, fb2, c02);
                c03 = emulated_multiply_add(fa0, fb3, c03);
                let fa1 = vec2<u32>(a_current + a_fragment + 640u, 40u);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c12 = emulated_multiply_add(fa1, fb2, c12);
                c13 = emulated_multiply_add(fa1, fb3, c13);
                let fa2 = vec2<u32>(a_current + a_fragment + 1280u, 40u);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c22 = emulated_multiply_add(fa2, fb2, c22);
                c23 = emulated_multiply_add(fa2, fb3, c23);
                let fa3 = vec2<u32>(a_current + a_fragment + 1920u, 40u);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                c31 = emulated_multiply_add(fa3, fb1, c31);
                c32 = emulated_multiply_add(fa3, fb2, c32);
                c33 = emulated_multiply_add(fa3, fb3, c33);
            }
            {
                let fb0 = vec2<u32>(b_current + sub_column + 2176u, 136u);
                let fb1 = vec2<u32>(b_current + sub_column + 2192u, 136u);
                let fb2 = vec2<u32>(b_current + sub_column + 2208u, 136u);
                let fb3 = vec2<u32>(b_current + sub_column + 2224u, 136u);
                let fa0 = vec2<u32>(a_current + a_fragment + 16u, 40u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c02 = emulated_multiply_add(fa0, fb2, c02);
                c03 = emulated_multiply_add(fa0, fb3, c03);
                let fa1 = vec2<u32>(a_current + a_fragment + 656u, 40u);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c12 = emulated_multiply_add(fa1, fb2, c12);
                c13 = emulated_multiply_add(fa1, fb3, c13);
                let fa2 = vec2<u32>(a_current + a_fragment + 1296u, 40u);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c22 = emulated_multiply_add(fa2, fb2, c22);
                c23 = emulated_multiply_add(fa2, fb3, c23);
                let fa3 = vec2<u32>(a_current + a_fragment + 1936u, 40u);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                c31 = emulated_multiply_add(fa3, fb1, c31);
                c32 = emulated_multiply_add(fa3, fb2, c32);
                c33 = emulated_multiply_add(fa3, fb3, c33);
            }
            if (more) {
                let a_other = 5120u - a_current;
                let b_other = 4352u - b_current;
                tile_a[a_other + a_store + 0u] = a0.x;
                tile_b[b_other + b_store + 0u] = b0.x;
                tile_a[a_other + a_store + 1u] = a0.y;
                tile_b[b_other + b_store + 1u] = b0.y;
                tile_a[a_other + a_store + 2u] = a0.z;
                tile_b[b_other + b_store + 2u] = b0.z;
                tile_a[a_other + a_store + 3u] = a0.w;
                tile_b[b_other + b_store + 3u] = b0.w;
                tile_a[a_other + a_store + 640u] = a1.x;
                tile_b[b_other + b_store + 544u] = b1.x;
                tile_a[a_other + a_store + 641u] = a1.y;
                tile_b[b_other + b_store + 545u] = b1.y;
                tile_a[a_other + a_store + 642u] = a1.z;
                tile_b[b_other + b_store + 546u] = b1.z;
                tile_a[a_other + a_store + 643u] = a1.w;
                tile_b[b_other + b_store + 547u] = b1.w;
                tile_a[a_other + a_store + 1280u] = a2.x;
                tile_b[b_other + b_store + 1088u] = b2.x;
                tile_a[a_other + a_store + 1281u] = a2.y;
                tile_b[b_other + b_store + 1089u] = b2.y;
                tile_a[a_other + a_store + 1282u] = a2.z;
                tile_b[b_other + b_store + 1090u] = b2.z;
                tile_a[a_other + a_store + 1283u] = a2.w;
                tile_b[b_other + b_store + 1091u] = b2.w;
                tile_a[a_other + a_store + 1920u] = a3.x;
                tile_b[b_other + b_store + 1632u] = b3.x;
                tile_a[a_other + a_store + 1921u] = a3.y;
                tile_b[b_other + b_store + 1633u] = b3.y;
                tile_a[a_other + a_store + 1922u] = a3.z;
                tile_b[b_other + b_store + 1634u] = b3.z;
                tile_a[a_other + a_store + 1923u] = a3.w;
                tile_b[b_other + b_store + 1635u] = b3.w;
                tile_a[a_other + a_store + 2560u] = a4.x;
                tile_b[b_other + b_store + 2176u] = b4.x;
                tile_a[a_other + a_store + 2561u] = a4.y;
                tile_b[b_other + b_store + 2177u] = b4.y;
                tile_a[a_other + a_store + 2562u] = a4.z;
                tile_b[b_other + b_store + 2178u] = b4.z;
                tile_a[a_other + a_store + 2563u] = a4.w;
                tile_b[b_other + b_store + 2179u] = b4.w;
                tile_a[a_other + a_store + 3200u] = a5.x;
                tile_b[b_other + b_store + 2720u] = b5.x;
                tile_a[a_other + a_store + 3201u] = a5.y;
                tile_b[b_other + b_store + 2721u] = b5.y;
                tile_a[a_other + a_store + 3202u] = a5.z;
                tile_b[b_other + b_store + 2722u] = b5.z;
                tile_a[a_other + a_store + 3203u] = a5.w;
                tile_b[b_other + b_store + 2723u] = b5.w;
                tile_a[a_other + a_store + 3840u] = a6.x;
                tile_b[b_other + b_store + 3264u] = b6.x;
                tile_a[a_other + a_store + 3841u] = a6.y;
                tile_b[b_other + b_store + 3265u] = b6.y;
                tile_a[a_other + a_store + 3842u] = a6.z;
                tile_b[b_other + b_store + 3266u] = b6.z;
                tile_a[a_other + a_store + 3843u] = a6.w;
                tile_b[b_other + b_store + 3267u] = b6.w;
                tile_a[a_other + a_store + 4480u] = a7.x;
                tile_b[b_other + b_store + 3808u] = b7.x;
                tile_a[a_other + a_store + 4481u] = a7.y;
                tile_b[b_other + b_store + 3809u] = b7.y;
                tile_a[a_other + a_store + 4482u] = a7.z;
                tile_b[b_other + b_store + 3810u] = b7.z;
                tile_a[a_other + a_store + 4483u] = a7.w;
                tile_b[b_other + b_store + 3811u] = b7.w;
            }
            workgroupBarrier();
        }
        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;
        emulated_store_scratch(c00, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c01, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c02, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c03, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c10, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c11, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c12, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c13, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c20, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c21, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c22, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c23, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c30, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c31, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c32, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        emulated_store_scratch(c33, scratch_at);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
    }
}
