// unary.wgsl — `output[i] = op(input[view(i)])`. The header defines S (stored type),
// T (compute type: f32 for f16 data, so f16 maths is done in f32 like the CPU reference),
// load_value/store_value and `compute`, the op's expression from op.rs.
// params: ElementwiseParams (elementwise.rs); tail: shape[rank], offset, strides[rank]
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read_write> output: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    var position = params.tail[rank] + i;
    if (!CONTIGUOUS) {
        position = params.tail[rank] + strided_position(i, rank, 0u, rank + 1u);
    }
    output[i] = store_value(compute(load_value(input[position])));
}
