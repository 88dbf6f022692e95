enable f16;
enable wgpu_cooperative_matrix;
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
// A's block [128 rows][40] and B's [32 k][264] (padded rows).
var<workgroup> tile_a: array<f16, 5120>;
var<workgroup> tile_b: array<f16, 8448>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let n8 = n / 8u;
    let k8 = k / 8u;
    let steps = k / 32u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 256u;
    // This subgroup's 64 x 64 part of the tile; its first halves in the blocks.
    let sub_row = (subgroup / 4u) * 64u;
    let sub_column = (subgroup % 4u) * 64u;
    let a_fragment = sub_row * 40u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16-byte load `local % 4` of A's rows `local / 4 + 64p`, load
    // `local % 32` of B's k-rows `local / 32 + 8p`;
    // where they go in the blocks.
    let a_store = (local / 4u) * 40u + (local % 4u) * 8u;
    let b_store = (local / 32u) * 264u + (local % 32u) * 8u;
    var c00: coop_mat16x16<f32, C>;
    var c01: coop_mat16x16<f32, C>;
    var c02: coop_mat16x16<f32, C>;
    var c03: coop_mat16x16<f32, C>;
    var c10: coop_mat16x16<f32, C>;
    var c11: coop_mat16x16<f32, C>;
    var c12: coop_mat16x16<f32, C>;
    var c13: coop_mat16x16<f32, C>;
    var c20: coop_mat16x16<f32, C>;
    var c21: coop_mat16x16<f32, C>;
    var c22: coop_mat16x16<f32, C>;
    var c23: coop_mat16x16<f32, C>;
    var c30: coop_mat16x16<f32, C>;
    var c31: coop_mat16x16<f32, C>;
    var c32: coop_mat16x16<f32, C>;
    var c33: coop_mat16x16<f32, C>;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        // This invocation's first 16-byte load of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / 4u) * k8 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / 32u) * n8 + column0 / 8u + local % 32u;
        c00 = coop_mat16x16<f32, C>();
        c01 = coop_mat16x16<f32, C>();
        c02 = coop_mat16x16<f32, C>();
        c03 = coop_mat16x16<f32, C>();
        c10 = coop_mat16x16<f32, C>();
        c11 = coop_mat16x16<f32, C>();
        c12 = coop_mat16x16<f32, C>();
        c13 = coop_mat16x16<f32, C>();
        c20 = coop_mat16x16<f32, C>();
        c21 = coop_mat16x16<f32, C>();
        c22 = coop_mat16x16<f32, C>();
        c23 = coop_mat16x16<f32, C>();
        c30 = coop_mat16x16<f32, C>();
        c31 = coop_mat16x16<f32, C>();
        c32 = coop_mat16x16<f32, C>();
        c33 = coop_mat16x16<f32, C>();
        var a0 = matrix_a[a_start + 0u * k8];
        var a1 = matrix_a[a_start + 64u * k8];
        var b0 = matrix_b[b_start + 0u * n8];
        var b1 = matrix_b[b_start + 8u * n8];
        var b2 = matrix_b[b_start + 16u * n8];
        var b3 = matrix_b[b_start + 24u * n8];
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
            tile_b[b_store + 2112u] = b1[0][0];
            tile_b[b_store + 2113u] = b1[0][1];
            tile_b[b_store + 2114u] = b1[0][2];
            tile_b[b_store + 2115u] = b1[0][3];
            tile_b[b_store + 2116u] = b1[1][0];
            tile_b[b_store + 2117u] = b1[1][1];
            tile_b[b_store + 2118u] = b1[1][2];
            tile_b[b_store + 2119u] = b1[1][3];
            tile_b[b_store + 4224u] = b2[0][0];
            tile_b[b_store + 4225u] = b2[0][1];
            tile_b[b_store + 4226u] = b2[0][2];
            tile_b[b_store + 4227u] = b2[0][3];
            tile_b[b_store + 4228u] = b2[1][0];
            tile_b[b_store + 4229u] = b2[1][1];
            tile_b[b_store + 4230u] = b2[1][2];
            tile_b[b_store + 4231u] = b2[1][3];
            tile_b[b_store + 6336u] = b3[0][0];
            tile_b[b_store + 6337u] = b3[0][1];
            tile_b[b_store + 6338u] = b3[0][2];
            tile_b[b_store + 6339u] = b3[0][3];
            tile_b[b_store + 6340u] = b3[1][0];
            tile_b[b_store + 6341u] = b3[1][1];
            tile_b[b_store + 6342u] = b3[1][2];
            tile_b[b_store + 6343u] = b3[1][3];
            workgroupBarrier();
            // The next block's loads fly while this one is multiplied out.
            if (step + 1u < steps) {
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
                let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 0u], 40u);
                let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 640u], 40u);
                let fa2 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 1280u], 40u);
                let fa3 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 1920u], 40u);
                let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 0u], 264u);
                c00 = coopMultiplyAdd(fa0, fb0, c00);
                c10 = coopMultiplyAdd(fa1, fb0, c10);
                c20 = coopMultiplyAdd(fa2, fb0, c20);
                c30 = coopMultiplyAdd(fa3, fb0, c30);
                let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 16u], 264u);
                c01 = coopMultiplyAdd(fa0, fb1, c01);
                c11 = coopMultiplyAdd(fa1, fb1, c11);
                c21 = coopMultiplyAdd(fa2, fb1, c21);
                c31 = coopMultiplyAdd(fa3, fb1, c31);
                let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 32u], 264u);
                c02 = coopMultiplyAdd(fa0, fb2, c02);
                c12 = coopMultiplyAdd(fa1, fb2, c12);
                c22 = coopMultiplyAdd(fa2, fb2, c22);
                c32 = coopMultiplyAdd(fa3, fb2, c32);
                let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 48u], 264u);
                c03 = coopMultiplyAdd(fa0, fb3, c03);
                c13 = coopMultiplyAdd(fa1, fb3, c13);
                c23 = coopMultiplyAdd(fa2, fb3, c23);
                c33 = coopMultiplyAdd(fa3, fb3, c33);
            }
            {
                let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 16u], 40u);
                let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 656u], 40u);
                let fa2 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 1296u], 40u);
                let fa3 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_fragment + 1936u], 40u);
                let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 4224u], 264u);
                c00 = coopMultiplyAdd(fa0, fb0, c00);
                c10 = coopMultiplyAdd(fa1, fb0, c10);
                c20 = coopMultiplyAdd(fa2, fb0, c20);
                c30 = coopMultiplyAdd(fa3, fb0, c30);
                let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 4240u], 264u);
                c01 = coopMultiplyAdd(fa0, fb1, c01);
                c11 = coopMultiplyAdd(fa1, fb1, c11);
                c21 = coopMultiplyAdd(fa2, fb1, c21);
                c31 = coopMultiplyAdd(fa3, fb1, c31);
                let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 4256u], 264u);
                c02 = coopMultiplyAdd(fa0, fb2, c02);
                c12 = coopMultiplyAdd(fa1, fb2, c12);
                c22 = coopMultiplyAdd(fa2, fb2, c22);
                c32 = coopMultiplyAdd(fa3, fb2, c32);
                let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[sub_column + 4272u], 264u);
                c03 = coopMultiplyAdd(fa0, fb3, c03);
                c13 = coopMultiplyAdd(fa1, fb3, c13);
                c23 = coopMultiplyAdd(fa2, fb3, c23);
                c33 = coopMultiplyAdd(fa3, fb3, c33);
            }
        }
        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;
        coopStoreT(c00, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c01, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c02, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c03, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c10, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c11, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c12, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c13, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c20, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c21, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c22, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c23, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 32u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c30, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c31, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c32, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c33, &scratch[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 48u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(scratch[lane_at], scratch[lane_at + 1u], scratch[lane_at + 2u], scratch[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(scratch[lane_at + 4u], scratch[lane_at + 5u], scratch[lane_at + 6u], scratch[lane_at + 7u]));
        }
        workgroupBarrier();
    }
}
