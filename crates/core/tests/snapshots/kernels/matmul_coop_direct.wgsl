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
@group(0) @binding(1) var<storage, read> matrix_a: array<f16>;
@group(0) @binding(2) var<storage, read> matrix_b: array<f16>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<f16>>;
// One 16 x 16 f32 tile per subgroup: accumulators pass through it on their way to f16.
var<workgroup> scratch: array<f32, 1024>;

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
        // This subgroup's first element of A (row row0 + sub_row) and of B (column
        // column0 + sub_column) in batch b.
        let a_base = params.a_offset + b * params.a_batch_stride + (row0 + sub_row) * k;
        let b_base = params.b_offset + b * params.b_batch_stride + column0 + sub_column;
        for (var k0 = 0u; k0 < k; k0 = k0 + 16u) {
            let a_at = a_base + k0;
            let b_at = b_base + k0 * n;
            let fb0 = coopLoadT<coop_mat16x16<f16, B>>(&matrix_b[b_at + 0u], n);
            let fb1 = coopLoadT<coop_mat16x16<f16, B>>(&matrix_b[b_at + 16u], n);
            let fb2 = coopLoadT<coop_mat16x16<f16, B>>(&matrix_b[b_at + 32u], n);
            let fb3 = coopLoadT<coop_mat16x16<f16, B>>(&matrix_b[b_at + 48u], n);
            let fa0 = coopLoadT<coop_mat16x16<f16, A>>(&matrix_a[a_at + 0u * k], k);
            c00 = coopMultiplyAdd(fa0, fb0, c00);
            c01 = coopMultiplyAdd(fa0, fb1, c01);
            c02 = coopMultiplyAdd(fa0, fb2, c02);
            c03 = coopMultiplyAdd(fa0, fb3, c03);
            let fa1 = coopLoadT<coop_mat16x16<f16, A>>(&matrix_a[a_at + 16u * k], k);
            c10 = coopMultiplyAdd(fa1, fb0, c10);
            c11 = coopMultiplyAdd(fa1, fb1, c11);
            c12 = coopMultiplyAdd(fa1, fb2, c12);
            c13 = coopMultiplyAdd(fa1, fb3, c13);
            let fa2 = coopLoadT<coop_mat16x16<f16, A>>(&matrix_a[a_at + 32u * k], k);
            c20 = coopMultiplyAdd(fa2, fb0, c20);
            c21 = coopMultiplyAdd(fa2, fb1, c21);
            c22 = coopMultiplyAdd(fa2, fb2, c22);
            c23 = coopMultiplyAdd(fa2, fb3, c23);
            let fa3 = coopLoadT<coop_mat16x16<f16, A>>(&matrix_a[a_at + 48u * k], k);
            c30 = coopMultiplyAdd(fa3, fb0, c30);
            c31 = coopMultiplyAdd(fa3, fb1, c31);
            c32 = coopMultiplyAdd(fa3, fb2, c32);
            c33 = coopMultiplyAdd(fa3, fb3, c33);
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
