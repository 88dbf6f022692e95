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
@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 1024>;
// Two copies (ping-pong) of A's block [128 rows][24] and B's [16 k][136] (padded rows).
var<workgroup> tile_a: array<f16, 6144>;
var<workgroup> tile_b: array<f16, 4352>;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32,
        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32) {
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
    let steps = k / 16u;
    // Loader roles: vec4 `local % 4` of rows `local / 4 + 32p` of A's block,
    // vec4 `local % 32` of k rows `local / 32 + 4p` of B's block (p = 0..4); where they
    // go in a block copy.
    let a_store = (local / 4u) * 24u + (local % 4u) * 4u;
    let b_store = (local / 32u) * 136u + (local % 32u) * 4u;
    // This subgroup's first A row in a block copy.
    let a_fragment = sub_row * 24u;
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
        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + local / 4u) * k4 + local % 4u;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + (local / 32u) * n4 + column0 / 4u + local % 32u;
        // k-block 0 into copy 0.
        var a0 = matrix_a[a_start + 0u * k4];
        var a1 = matrix_a[a_start + 32u * k4];
        var a2 = matrix_a[a_start + 64u * k4];
        var a3 = matrix_a[a_start + 96u * k4];
        var b0 = matrix_b[b_start + 0u * n4];
        var b1 = matrix_b[b_start + 4u * n4];
        var b2 = matrix_b[b_start + 8u * n4];
        var b3 = matrix_b[b_start + 12u * n4];
        tile_a[0u + a_store + 0u] = a0.x;
        tile_b[0u + b_store + 0u] = b0.x;
        tile_a[0u + a_store + 1u] = a0.y;
        tile_b[0u + b_store + 1u] = b0.y;
        tile_a[0u + a_store + 2u] = a0.z;
        tile_b[0u + b_store + 2u] = b0.z;
        tile_a[0u + a_store + 3u] = a0.w;
        tile_b[0u + b_store + 3u] = b0.w;
        tile_a[0u + a_store + 768u] = a1.x;
        tile_b[0u + b_store + 544u] = b1.x;
        tile_a[0u + a_store + 769u] = a1.y;
        tile_b[0u + b_store + 545u] = b1.y;
        tile_a[0u + a_store + 770u] = a1.z;
        tile_b[0u + b_store + 546u] = b1.z;
        tile_a[0u + a_store + 771u] = a1.w;
        tile_b[0u + b_store + 547u] = b1.w;
        tile_a[0u + a_store + 1536u] = a2.x;
        tile_b[0u + b_store + 1088u] = b2.x;
        tile_a[0u + a_store + 1537u] = a2.y;
        tile_b[0u + b_store + 1089u] = b2.y;
        tile_a[0u + a_store + 1538u] = a2.z;
        tile_b[0u + b_store + 1090u] = b2.z;
        tile_a[0u + a_store + 1539u] = a2.w;
        tile_b[0u + b_store + 1091u] = b2.w;
        tile_a[0u + a_store + 2304u] = a3.x;
        tile_b[0u + b_store + 1632u] = b3.x;
        tile_a[0u + a_store + 2305u] = a3.y;
        tile_b[0u + b_store + 1633u] = b3.y;
        tile_a[0u + a_store + 2306u] = a3.z;
        tile_b[0u + b_store + 1634u] = b3.z;
        tile_a[0u + a_store + 2307u] = a3.w;
        tile_b[0u + b_store + 1635u] = b3.w;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `step % 2` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * 3072u;
            let b_current = current * 2176u;
            let more = step + 1u < steps;
            if (more) {
                let a_next = a_start + (step + 1u) * 4u;
                let b_next = b_start + (step + 1u) * 16u * n4;
                a0 = matrix_a[a_next + 0u * k4];
                a1 = matrix_a[a_next + 32u * k4];
                a2 = matrix_a[a_next + 64u * k4];
                a3 = matrix_a[a_next + 96u * k4];
                b0 = matrix_b[b_next + 0u * n4];
                b1 = matrix_b[b_next + 4u * n4];
                b2 = matrix_b[b_next + 8u * n4];
                b3 = matrix_b[b_next + 12u * n4];
            }
            {
                let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[b_current + sub_column + 0u], 136u);
                let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[b_current + sub_column + 16u], 136u);
                let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[b_current + sub_column + 32u], 136u);
                let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&tile_b[b_current + sub_column + 48u], 136u);
                let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_current + a_fragment + 0u], 24u);
                c00 = coopMultiplyAdd(fa0, fb0, c00);
                c01 = coopMultiplyAdd(fa0, fb1, c01);
                c02 = coopMultiplyAdd(fa0, fb2, c02);
                c03 = coopMultiplyAdd(fa0, fb3, c03);
                let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_current + a_fragment + 384u], 24u);
                c10 = coopMultiplyAdd(fa1, fb0, c10);
                c11 = coopMultiplyAdd(fa1, fb1, c11);
                c12 = coopMultiplyAdd(fa1, fb2, c12);
                c13 = coopMultiplyAdd(fa1, fb3, c13);
                let fa2 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_current + a_fragment + 768u], 24u);
                c20 = coopMultiplyAdd(fa2, fb0, c20);
                c21 = coopMultiplyAdd(fa2, fb1, c21);
                c22 = coopMultiplyAdd(fa2, fb2, c22);
                c23 = coopMultiplyAdd(fa2, fb3, c23);
                let fa3 = coopLoadT<coop_mat16x16<f16, A>>(&tile_a[a_current + a_fragment + 1152u], 24u);
                c30 = coopMultiplyAdd(fa3, fb0, c30);
                c31 = coopMultiplyAdd(fa3, fb1, c31);
                c32 = coopMultiplyAdd(fa3, fb2, c32);
                c33 = coopMultiplyAdd(fa3, fb3, c33);
            }
            if (more) {
                let a_other = 3072u - a_current;
                let b_other = 2176u - b_current;
                tile_a[a_other + a_store + 0u] = a0.x;
                tile_b[b_other + b_store + 0u] = b0.x;
                tile_a[a_other + a_store + 1u] = a0.y;
                tile_b[b_other + b_store + 1u] = b0.y;
                tile_a[a_other + a_store + 2u] = a0.z;
                tile_b[b_other + b_store + 2u] = b0.z;
                tile_a[a_other + a_store + 3u] = a0.w;
                tile_b[b_other + b_store + 3u] = b0.w;
                tile_a[a_other + a_store + 768u] = a1.x;
                tile_b[b_other + b_store + 544u] = b1.x;
                tile_a[a_other + a_store + 769u] = a1.y;
                tile_b[b_other + b_store + 545u] = b1.y;
                tile_a[a_other + a_store + 770u] = a1.z;
                tile_b[b_other + b_store + 546u] = b1.z;
                tile_a[a_other + a_store + 771u] = a1.w;
                tile_b[b_other + b_store + 547u] = b1.w;
                tile_a[a_other + a_store + 1536u] = a2.x;
                tile_b[b_other + b_store + 1088u] = b2.x;
                tile_a[a_other + a_store + 1537u] = a2.y;
                tile_b[b_other + b_store + 1089u] = b2.y;
                tile_a[a_other + a_store + 1538u] = a2.z;
                tile_b[b_other + b_store + 1090u] = b2.z;
                tile_a[a_other + a_store + 1539u] = a2.w;
                tile_b[b_other + b_store + 1091u] = b2.w;
                tile_a[a_other + a_store + 2304u] = a3.x;
                tile_b[b_other + b_store + 1632u] = b3.x;
                tile_a[a_other + a_store + 2305u] = a3.y;
                tile_b[b_other + b_store + 1633u] = b3.y;
                tile_a[a_other + a_store + 2306u] = a3.z;
                tile_b[b_other + b_store + 1634u] = b3.z;
                tile_a[a_other + a_store + 2307u] = a3.w;
                tile_b[b_other + b_store + 1635u] = b3.w;
            }
            workgroupBarrier();
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
