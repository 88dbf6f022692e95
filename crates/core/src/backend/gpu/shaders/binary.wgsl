// binary.wgsl — `output[i] = op(lhs[view(i)], rhs[view(i)])` on equal-shape views (the
// tensor layer broadcasts with stride-0 views first). Comparisons store Bool (O = u32 0/1).
// params: ElementwiseParams (elementwise.rs); tail: shape[rank], lhs offset, lhs strides[rank],
// rhs offset, rhs strides[rank]
@group(0) @binding(1) var<storage, read> lhs: array<S>;
@group(0) @binding(2) var<storage, read> rhs: array<S>;
@group(0) @binding(3) var<storage, read_write> output: array<O>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    let lhs_at = rank;
    let rhs_at = 1u + 2u * rank;
    var lhs_position = params.tail[lhs_at] + i;
    var rhs_position = params.tail[rhs_at] + i;
    if (!CONTIGUOUS) {
        lhs_position = params.tail[lhs_at] + strided_position(i, rank, 0u, lhs_at + 1u);
        rhs_position = params.tail[rhs_at] + strided_position(i, rank, 0u, rhs_at + 1u);
    }
    output[i] = store_result(compute(load_value(lhs[lhs_position]), load_value(rhs[rhs_position])));
}
