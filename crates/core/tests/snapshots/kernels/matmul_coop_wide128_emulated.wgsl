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
@group(0) @binding(1) var<storage, read> matrix_a: array<mat2x4<f16>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 2048>;
// A's block [128 rows][40] and B's [32 k][136] (padded rows).
var<workgroup> tile_a: array<f16, 5120>;
var<workgroup> tile_b: array<f16, 4352>;
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
    let n8 = n / 8u;
    let k8 = k / 8u;
    let steps = k / 32u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // This subgroup's 64 x 32 part of the tile; its first halves in the blocks.
    let sub_row = (subgroup / 4u) * 64u;
    let sub_column = (subgroup % 4u) * 32u;
    let a_fragment = sub_row * 40u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16-byte load `local % 4` of A's rows `local / 4 + 64p`, load
    // `local % 16` of B's k-rows `local / 16 + 16p`;
    // where they go in the blocks.
    let a_store = (local / 4u) * 40u + (local % 4u) * 8u;
    let b_store = (local / 16u) * 136u + (local % 16u) * 8u;
    var c00: array<vec4<f32>, 2>;
    var c01: array<vec4<f32>, 2>;
    var c10: array<vec4<f32>, 2>;
    var c11: array<vec4<f32>, 2>;
    var c20: array<vec4<f32>, 2>;
    var c21: array<vec4<f32>, 2>;
    var c30: array<vec4<f32>, 2>;
    var c31: array<vec4<f32>, 2>;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        // This invocation's first 16-byte load of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / 4u) * k8 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / 16u) * n8 + column0 / 8u + local % 16u;
        c00 = array<vec4<f32>, 2>();
        c01 = array<vec4<f32>, 2>();
        c10 = array<vec4<f32>, 2>();
        c11 = array<vec4<f32>, 2>();
        c20 = array<vec4<f32>, 2>();
        c21 = array<vec4<f32>, 2>();
        c30 = array<vec4<f32>, 2>();
        c31 = array<vec4<f32>, 2>();
        var a0 = matrix_a[a_start + 0u * k8];
        var a1 = matrix_a[a_start + 64u * k8];
        var b0 = matrix_b[b_start + 0u * n8];
        var b1 = matrix_b[b_start + 16u * n8];
        for (var step = 0u; step < steps; step = step + 1u) {
            // Everyone is done reading the previous block.
            workgroupBarrier();
            tile_a[a_store + 0u] = a0[0][0];
            tile_a[a_store + 1u] = a0[0][1];
            tile_a[a_store + 2u] = a0[0][2];
            tile_a[a_store + 3u] = a0[0][3];
            tile_a[a_store + 4u] = a0[1][0];
            tile_a[a_store + 5u] = a0[1][1];
            tile_a[a_store + 6u] = a0[1][2];
            tile_a[a_store + 7u] = a0[1][3];
            tile_a[a_store + 2560u] = a1[0][0];
            tile_a[a_store + 2561u] = a1[0][1];
            tile_a[a_store + 2562u] = a1[0][2];
            tile_a[a_store + 2563u] = a1[0][3];
            tile_a[a_store + 2564u] = a1[1][0];
            tile_a[a_store + 2565u] = a1[1][1];
            tile_a[a_store + 2566u] = a1[1][2];
            tile_a[a_store + 2567u] = a1[1][3];
            tile_b[b_store + 0u] = b0[0][0];
            tile_b[b_store + 1u] = b0[0][1];
            tile_b[b_store + 2u] = b0[0][2];
            tile_b[b_store + 3u] = b0[0][3];
            tile_b[b_store + 4u] = b0[1][0];
            tile_b[b_store + 5u] = b0[1][1];
            tile_b[b_store + 6u] = b0[1][2];
            tile_b[b_store + 7u] = b0[1][3];
            tile_b[b_store + 2176u] = b1[0][0];
            tile_b[b_store + 2177u] = b1[0][1];
            tile_b[b_store + 2178u] = b1[0][2];
            tile_b[b_store + 2179u] = b1[0][3];
            tile_b[b_store + 2180u] = b1[1][0];
            tile_b[b_store + 2181u] = b1[1][1];
            tile_b[b_store + 2182u] = b1[1][2];
            tile_b[b_store + 2183u] = b1[1][3];
            workgroupBarrier();
            // The next block's loads fly while this one is multiplied out.
            if (step + 1u < steps) {
                let a_next = a_start + (step + 1u) * 4u;
                let b_next = b_start + (step + 1u) * 32u * n8;
                a0 = matrix_a[a_next + 0u * k8];
                a1 = matrix_a[a_next + 64u * k8];
                b0 = matrix_b[b_next + 0u * n8];
                b1 = matrix_b[b_next + 16u * n8];
            }
            {
                let fa0 = vec2<u32>(a_fragment + 0u, 40u);
                let fa1 = vec2<u32>(a_fragment + 640u, 40u);
                let fa2 = vec2<u32>(a_fragment + 1280u, 40u);
                let fa3 = vec2<u32>(a_fragment + 1920u, 40u);
                let fb0 = vec2<u32>(sub_column + 0u, 136u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                let fb1 = vec2<u32>(sub_column + 16u, 136u);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c31 = emulated_multiply_add(fa3, fb1, c31);
            }
            {
                let fa0 = vec2<u32>(a_fragment + 16u, 40u);
                let fa1 = vec2<u32>(a_fragment + 656u, 40u);
                let fa2 = vec2<u32>(a_fragment + 1296u, 40u);
                let fa3 = vec2<u32>(a_fragment + 1936u, 40u);
                let fb0 = vec2<u32>(sub_column + 2176u, 136u);
                c00 = emulated_multiply_add(fa0, fb0, c00);
                c10 = emulated_multiply_add(fa1, fb0, c10);
                c20 = emulated_multiply_add(fa2, fb0, c20);
                c30 = emulated_multiply_add(fa3, fb0, c30);
                let fb1 = vec2<u32>(sub_column + 2192u, 136u);
                c01 = emulated_multiply_add(fa0, fb1, c01);
                c11 = emulated_multiply_add(fa1, fb1, c11);
                c21 = emulated_multiply_add(fa2, fb1, c21);
                c31 = emulated_multiply_add(fa3, fb1, c31);
            }
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
    }
}
