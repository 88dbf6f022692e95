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
@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// 2 copies of A's block [128 rows][20 words] from word 0, then of B's
// [32 k][68 words] from word 5120; after the k-loop, subgroup s's 16 x 16 f32
// scratch tile at word 256 s.
var<workgroup> tile: array<f32, 9472>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let n4 = n / 4u;
    let k8 = k / 8u;
    let n8 = n / 8u;
    let steps = k / 32u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // This subgroup's 32 x 64 part of the tile.
    let sub_row = (subgroup / 2u) * 32u;
    let sub_column = (subgroup % 2u) * 64u;
    // Its scratch tile, and the 8 values (half a row) this invocation converts from it.
    let scratch_at = subgroup * 256u;
    let lane_at = scratch_at + lane * 8u;
    // Loader roles: 16 bytes `local % 4` of A's block rows `local / 4 + 64p`
    // (p < 2), 16 bytes `local % 16` of B's k rows `local / 16 + 16p`
    // (p < 2); the words where they go in a block copy.
    let a_store = (local / 4u) * 20u + (local % 4u) * 4u;
    let b_store = 5120u + (local / 16u) * 68u + (local % 16u) * 4u;
    // This subgroup's first fragment words in a block copy.
    let a_fragment = sub_row * 20u;
    let b_fragment = 5120u + sub_column / 2u;
    var c00: coop_mat16x16<f32, C>;
    var c01: coop_mat16x16<f32, C>;
    var c02: coop_mat16x16<f32, C>;
    var c03: coop_mat16x16<f32, C>;
    var c10: coop_mat16x16<f32, C>;
    var c11: coop_mat16x16<f32, C>;
    var c12: coop_mat16x16<f32, C>;
    var c13: coop_mat16x16<f32, C>;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        c00 = coop_mat16x16<f32, C>();
        c01 = coop_mat16x16<f32, C>();
        c02 = coop_mat16x16<f32, C>();
        c03 = coop_mat16x16<f32, C>();
        c10 = coop_mat16x16<f32, C>();
        c11 = coop_mat16x16<f32, C>();
        c12 = coop_mat16x16<f32, C>();
        c13 = coop_mat16x16<f32, C>();
        // This invocation's first 16 bytes of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 8u + (row0 + local / 4u) * k8 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 8u + (local / 16u) * n8 + column0 / 8u + local % 16u;
        // k-block 0 into copy 0.
        var a0 = matrix_a[a_start + 0u * k8];
        var a1 = matrix_a[a_start + 64u * k8];
        var b0 = matrix_b[b_start + 0u * n8];
        var b1 = matrix_b[b_start + 16u * n8];
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
        tile[0u + b_store + 1088u] = bitcast<f32>(b1.x);
        tile[0u + b_store + 1089u] = bitcast<f32>(b1.y);
        tile[0u + b_store + 1090u] = bitcast<f32>(b1.z);
        tile[0u + b_store + 1091u] = bitcast<f32>(b1.w);
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // The next k-block's loads go out before the current block is multiplied out.
            let current = step % 2u;
            let a_current = current * 2560u;
            let b_current = current * 2176u;
            let more = step + 1u < steps;
            if (more) {
                let a_next = a_start + (step + 1u) * 4u;
                let b_next = b_start + (step + 1u) * 32u * n8;
                a0 = matrix_a[a_next + 0u * k8];
                a1 = matrix_a[a_next + 64u * k8];
                b0 = matrix_b[b_next + 0u * n8];
                b1 = matrix_b[b_next + 16u * n8];
            }
            {
                let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 0u], 68u);
                let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 8u], 68u);
                let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 16u], 68u);
                let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 24u], 68u);
                let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&tile[a_current + a_fragment + 0u], 20u);
                c00 = coopMultiplyAdd(fa0, fb0, c00);
                c01 = coopMultiplyAdd(fa0, fb1, c01);
                c02 = coopMultiplyAdd(fa0, fb2, c02);
                c03 = coopMultiplyAdd(fa0, fb3, c03);
                let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&tile[a_current + a_fragment + 320u], 20u);
                c10 = coopMultiplyAdd(fa1, fb0, c10);
                c11 = coopMultiplyAdd(fa1, fb1, c11);
                c12 = coopMultiplyAdd(fa1, fb2, c12);
                c13 = coopMultiplyAdd(fa1, fb3, c13);
            }
            {
                let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 1088u], 68u);
                let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 1096u], 68u);
                let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 1104u], 68u);
                let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&tile[b_current + b_fragment + 1112u], 68u);
                let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&tile[a_current + a_fragment + 8u], 20u);
                c00 = coopMultiplyAdd(fa0, fb0, c00);
                c01 = coopMultiplyAdd(fa0, fb1, c01);
                c02 = coopMultiplyAdd(fa0, fb2, c02);
                c03 = coopMultiplyAdd(fa0, fb3, c03);
                let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&tile[a_current + a_fragment + 328u], 20u);
                c10 = coopMultiplyAdd(fa1, fb0, c10);
                c11 = coopMultiplyAdd(fa1, fb1, c11);
                c12 = coopMultiplyAdd(fa1, fb2, c12);
                c13 = coopMultiplyAdd(fa1, fb3, c13);
            }
            // Into the other copy, read by nobody since the last barrier.
            if (more) {
                let a_other = 2560u - a_current;
                let b_other = 2176u - b_current;
                tile[a_other + a_store + 0u] = bitcast<f32>(a0.x);
                tile[a_other + a_store + 1u] = bitcast<f32>(a0.y);
                tile[a_other + a_store + 2u] = bitcast<f32>(a0.z);
                tile[a_other + a_store + 3u] = bitcast<f32>(a0.w);
                tile[a_other + a_store + 1280u] = bitcast<f32>(a1.x);
                tile[a_other + a_store + 1281u] = bitcast<f32>(a1.y);
                tile[a_other + a_store + 1282u] = bitcast<f32>(a1.z);
                tile[a_other + a_store + 1283u] = bitcast<f32>(a1.w);
                tile[b_other + b_store + 0u] = bitcast<f32>(b0.x);
                tile[b_other + b_store + 1u] = bitcast<f32>(b0.y);
                tile[b_other + b_store + 2u] = bitcast<f32>(b0.z);
                tile[b_other + b_store + 3u] = bitcast<f32>(b0.w);
                tile[b_other + b_store + 1088u] = bitcast<f32>(b1.x);
                tile[b_other + b_store + 1089u] = bitcast<f32>(b1.y);
                tile[b_other + b_store + 1090u] = bitcast<f32>(b1.z);
                tile[b_other + b_store + 1091u] = bitcast<f32>(b1.w);
            }
            workgroupBarrier();
        }
        let c_at = ((b * m + row0 + sub_row + lane / 2u) * n + column0 + sub_column + (lane % 2u) * 8u) / 4u;
        coopStoreT(c00, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c01, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c02, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c03, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 0u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c10, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 0u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c11, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 4u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c12, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 8u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
        coopStoreT(c13, &tile[scratch_at], 16u);
        workgroupBarrier();
        {
            let at = c_at + 16u * n4 + 12u;
            matrix_c[at] = vec4<f16>(vec4<f32>(tile[lane_at + 0u], tile[lane_at + 1u], tile[lane_at + 2u], tile[lane_at + 3u]));
            matrix_c[at + 1u] = vec4<f16>(vec4<f32>(tile[lane_at + 4u], tile[lane_at + 5u], tile[lane_at + 6u], tile[lane_at + 7u]));
        }
        workgroupBarrier();
    }
}
