// scatter_add.wgsl — `output[coords with dim replaced by index] += src[coords]` for every
// element of the index view. Several elements may hit the same output, so the add must be
// atomic. WGSL only has integer atomics; float adds use a compare-and-swap loop on the 32-bit
// word (read, add, swap in if nobody changed it meanwhile, else retry). f16 elements share a
// word in pairs: the loop updates one half of the word. The header defines atomic_add_element.
// params: ScatterAddParams (indexing.rs); tail: index shape[rank], output strides[rank],
// src strides[rank], index strides[rank]
@group(0) @binding(1) var<storage, read> src: array<S>;
@group(0) @binding(2) var<storage, read> indices: array<IX>;
@group(0) @binding(3) var<storage, read_write> output: array<atomic<u32>>;
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
    let output_strides_at = shape_at + rank;
    let src_strides_at = output_strides_at + rank;
    let index_strides_at = src_strides_at + rank;
    var remaining = i;
    var output_position = 0u;
    var src_position = params.src_offset;
    var index_position = params.index_offset;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params.tail[shape_at + d - 1u];
        let coordinate = remaining % size;
        remaining = remaining / size;
        index_position = index_position + coordinate * params.tail[index_strides_at + d - 1u];
        src_position = src_position + coordinate * params.tail[src_strides_at + d - 1u];
        if (d - 1u != dim) {
            output_position = output_position + coordinate * params.tail[output_strides_at + d - 1u];
        }
    }
    let index = i32(indices[index_position]);
    if (index < 0 || u32(index) >= params.limit) {
        atomicMax(&flag[params.flag_slot], 1u);
        return;
    }
    atomic_add_element(output_position + u32(index) * params.tail[output_strides_at + dim], src[src_position]);
}
