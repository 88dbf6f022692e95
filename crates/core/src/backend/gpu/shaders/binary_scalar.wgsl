// binary_scalar.wgsl — `x op scalar` (or `scalar op x`): the scalar travels in params as the
// bits of the compute type, so no one-element tensor is uploaded.
// params: ScalarParams (elementwise.rs); tail: shape[rank], offset, strides[rank]
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read_write> output: array<O>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    let view_at = rank;
    var position = params.tail[view_at] + i;
    if (!CONTIGUOUS) {
        position = params.tail[view_at] + strided_position(i, rank, 0u, view_at + 1u);
    }
    let x = load_value(input[position]);
    let s = scalar_value(params.scalar);
    if (SCALAR_ON_LEFT) {
        output[i] = store_result(compute(s, x));
    } else {
        output[i] = store_result(compute(x, s));
    }
}
