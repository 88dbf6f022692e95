// index_rows.wgsl — `index_select` along the last dim of a dense input (the im2col of conv2d,
// embedding-like lookups): `output[r, j] = input[offset + r * length + indices[j]]`.
// The generic gather kernel decomposes every output position into coordinates (a division
// per dim). Here invocation j reads and checks its index once, then walks the rows r (grid-
// stride over y): no divisions, and neighbouring invocations read neighbouring indices and
// write neighbouring outputs (coalesced). A bad index raises the dispatch's flag word and its
// outputs get 0, as in gather.wgsl; params.wrap counts negative indices from the end.
// params: IndexRowsParams (indexing.rs)
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> indices: array<IX>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let j = workgroup.x * 256u + local;
    let rows = params.rows;
    let columns = params.columns;
    let length = params.length;
    if (j >= columns) {
        return;
    }
    var index = i32(indices[params.index_offset + j * params.index_stride]);
    if (params.wrap != 0u && index < 0) {
        index = index + i32(length);
    }
    let valid = index >= 0 && u32(index) < length;
    if (!valid && workgroup.y == 0u) {
        atomicMax(&flag[params.flag_slot], 1u);
    }
    let column = select(0u, u32(index), valid);
    for (var r = workgroup.y; r < rows; r = r + workgroups.y) {
        var value = ZERO;
        if (valid) {
            value = input[params.input_offset + r * length + column];
        }
        output[r * columns + j] = value;
    }
}
