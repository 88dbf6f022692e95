// scatter_add_ordered.wgsl — the deterministic scatter_add on floats: one invocation per element
// of the output (already a contiguous copy of the base), which walks the index along `dim` in
// order and adds every source element whose index names its position, in f32 and rounded to
// the element type after each add — the CPU's order and arithmetic, with no atomics, so the
// same bits on every run. The invocations at position 0 along `dim` also flag indices out of
// range (each index element is checked by exactly one of them).
// params: ScatterAddOrderedParams (scatter_add_ordered.rs); tail: output shape[rank], index
// shape[rank], src strides[rank], index strides[rank]
@group(0) @binding(1) var<storage, read> src: array<S>;
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
    let output_shape_at = 0u;
    let index_shape_at = output_shape_at + rank;
    let src_strides_at = index_shape_at + rank;
    let index_strides_at = src_strides_at + rank;
    // This element's coordinates; the index and source elements that share them off `dim`.
    var remaining = i;
    var along = 0u;
    var src_position = params.src_offset;
    var index_position = params.index_offset;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params.tail[output_shape_at + d - 1u];
        let coordinate = remaining % size;
        remaining = remaining / size;
        if (d - 1u == dim) {
            along = coordinate;
        } else {
            if (coordinate >= params.tail[index_shape_at + d - 1u]) {
                // No index element lies in this slice: the base value stays.
                return;
            }
            index_position = index_position + coordinate * params.tail[index_strides_at + d - 1u];
            src_position = src_position + coordinate * params.tail[src_strides_at + d - 1u];
        }
    }
    let walk = params.tail[index_shape_at + dim];
    let index_step = params.tail[index_strides_at + dim];
    let src_step = params.tail[src_strides_at + dim];
    var total = output[i];
    var bad = false;
    for (var k = 0u; k < walk; k = k + 1u) {
        let index = i32(indices[index_position + k * index_step]);
        bad = bad || index < 0 || u32(index) >= params.limit;
        if (index == i32(along)) {
            total = S(f32(total) + f32(src[src_position + k * src_step]));
        }
    }
    if (bad && along == 0u) {
        atomicMax(&flag[params.flag_slot], 1u);
    }
    output[i] = total;
}
