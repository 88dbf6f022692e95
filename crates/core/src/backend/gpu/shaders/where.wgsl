// where.wgsl — `output[i] = condition[view(i)] != 0 ? on_true[view(i)] : on_false[view(i)]`.
// The condition may have any dtype (C); values are copied bit for bit (S).
// params: ElementwiseParams (elementwise.rs); tail: shape[rank], then for condition, on_true,
// on_false: offset, strides[rank]
@group(0) @binding(1) var<storage, read> condition: array<C>;
@group(0) @binding(2) var<storage, read> on_true: array<S>;
@group(0) @binding(3) var<storage, read> on_false: array<S>;
@group(0) @binding(4) var<storage, read_write> output: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    let condition_at = rank;
    let true_at = condition_at + 1u + rank;
    let false_at = true_at + 1u + rank;
    var condition_position = params.tail[condition_at] + i;
    var true_position = params.tail[true_at] + i;
    var false_position = params.tail[false_at] + i;
    if (!CONTIGUOUS) {
        condition_position = params.tail[condition_at] + strided_position(i, rank, 0u, condition_at + 1u);
        true_position = params.tail[true_at] + strided_position(i, rank, 0u, true_at + 1u);
        false_position = params.tail[false_at] + strided_position(i, rank, 0u, false_at + 1u);
    }
    if (is_true(condition[condition_position])) {
        output[i] = on_true[true_position];
    } else {
        output[i] = on_false[false_position];
    }
}
