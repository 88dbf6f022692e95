// gather.wgsl — `index_select` and `gather`: output element i copies input at the coordinates
// of i with coordinate `dim` replaced by an index read from the index view. index_select is
// the same kernel with the 1-D index vector broadcast (stride 0) along the other dims.
// An out-of-range index never reads outside the input: the invocation writes 0 and raises
// its dispatch's word of `flag` (slot params.flag_slot), which the host copies out with the next
// readback (a deferred check, like CUDA's device-side asserts: no round trip per index op).
// With params.wrap set (`index_select_wrapping`, signed indices), an index in [-limit, 0)
// counts from the end, as Python's `x[idx]` does.
// params: GatherParams (indexing.rs); tail: output shape[rank], input strides[rank],
// index strides[rank]
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> indices: array<IX>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let rank = params.rank;
    let dim = params.dim;
    let shape_at = 0u;
    let input_strides_at = shape_at + rank;
    let index_strides_at = input_strides_at + rank;
    var remaining = i;
    var input_position = params.input_offset;
    var index_position = params.index_offset;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params.tail[shape_at + d - 1u];
        let coordinate = remaining % size;
        remaining = remaining / size;
        index_position = index_position + coordinate * params.tail[index_strides_at + d - 1u];
        if (d - 1u != dim) {
            input_position = input_position + coordinate * params.tail[input_strides_at + d - 1u];
        }
    }
    var index = i32(indices[index_position]);
    if (params.wrap != 0u && index < 0) {
        index = index + i32(params.limit);
    }
    if (index < 0 || u32(index) >= params.limit) {
        atomicMax(&flag[params.flag_slot], 1u);
        output[i] = ZERO;
        return;
    }
    output[i] = input[input_position + u32(index) * params.tail[input_strides_at + dim]];
}
