// index_add_chunks.wgsl — second pass of `index_add` (index_add.rs), over the tensors seen as
// [outer, size, inner] (output) and [outer, count, inner] (src). The sorted positions are cut
// into chunks of params.chunk; invocation (o, chunk, column) walks its chunk's positions in
// order and sums src over each run of equal keys (a segment: all the positions of one index).
// A segment entirely inside the chunk is finished: its sum is added to the output element
// (the only invocation that writes it, so no atomics). A run that continues a segment from the
// previous chunk goes to the chunk's `first` partial slot, a run that begins here and goes on
// into the next chunk to its `last` slot; `index_add_crossing.wgsl` adds those up in chunk
// order. A chunk holds at most C positions, so one index repeated 8192 times costs C steps
// here, not 8192. Sums are computed in T (f32 for f16) and in the same order on every run.
// params: IndexAddParams (index_add.rs); partials: [outer, chunks, 2 (first, last), inner]
@group(0) @binding(1) var<storage, read> src: array<S>;
@group(0) @binding(2) var<storage, read> order: array<i32>;
@group(0) @binding(3) var<storage, read> keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<S>;
@group(0) @binding(5) var<storage, read_write> partials: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.invocations) {
        return;
    }
    let inner = params.inner;
    let count = params.count;
    let column = i % inner;
    let row = i / inner;
    let chunk = row % params.chunks;
    let o = row / params.chunks;
    let start = chunk * params.chunk;
    let end = min(start + params.chunk, count);
    let src_base = params.src_offset + o * count * inner + column;
    let output_base = o * params.limit * inner + column;
    let slot = row * 2u * inner + column;
    var k = start;
    loop {
        if (k >= end) {
            break;
        }
        let key = keys[k];
        let run_start = k;
        var sum = T(0);
        loop {
            if (k >= end || keys[k] != key) {
                break;
            }
            let position = u32(order[k]);
            if (position < count) {
                sum = sum + load_value(src[src_base + position * inner]);
            }
            k = k + 1u;
        }
        let crosses_left = run_start == start && start > 0u && keys[start - 1u] == key;
        let crosses_right = k == end && end < count && keys[end] == key;
        if (crosses_left) {
            partials[slot] = sum;
        } else if (crosses_right) {
            partials[slot + inner] = sum;
        } else if (key < params.limit) {
            let destination = output_base + key * inner;
            output[destination] = store_value(load_value(output[destination]) + sum);
        }
    }
}
