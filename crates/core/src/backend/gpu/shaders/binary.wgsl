// binary.wgsl — `output[i] = op(lhs[view(i)], rhs[view(i)])` on equal-shape views (the
// tensor layer broadcasts with stride-0 views first). Comparisons store Bool (O = u32 0/1).
// params: [numel, rank, shape[rank], lhs offset, lhs strides[rank], rhs offset, rhs strides[rank]]
@group(0) @binding(1) var<storage, read> lhs: array<S>;
@group(0) @binding(2) var<storage, read> rhs: array<S>;
@group(0) @binding(3) var<storage, read_write> output: array<O>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params[0]) {
        return;
    }
    let rank = params[1];
    let lhs_at = 2u + rank;
    let rhs_at = 3u + 2u * rank;
    var lhs_position = params[lhs_at] + i;
    var rhs_position = params[rhs_at] + i;
    if (!CONTIGUOUS) {
        lhs_position = params[lhs_at] + strided_position(i, rank, 2u, lhs_at + 1u);
        rhs_position = params[rhs_at] + strided_position(i, rank, 2u, rhs_at + 1u);
    }
    output[i] = store_result(compute(load_value(lhs[lhs_position]), load_value(rhs[rhs_position])));
}
