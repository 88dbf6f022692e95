// index_add_crossing.wgsl — third pass of `index_add` (index_add.rs): the segments (runs of
// one index in sorted order) that cross a chunk border. Invocation (o, chunk, column) acts
// only when a segment begins in its chunk and goes on into the next one (the segment's head):
// it adds the chunk's `last` partial and the `first` partials of the following chunks, in
// chunk order, while the segment goes on, then adds the total to the output element (the
// only invocation that writes it). Every other invocation returns at once.
// params: IndexAddParams (index_add.rs); partials: [outer, chunks, 2 (first, last), inner]
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read> partials: array<T>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.invocations) {
        return;
    }
    let inner = params.inner;
    let count = params.count;
    let chunks = params.chunks;
    let column = i % inner;
    let row = i / inner;
    let chunk = row % chunks;
    let o = row / chunks;
    let start = chunk * params.chunk;
    let end = min(start + params.chunk, count);
    if (end >= count) {
        return;
    }
    let key = keys[end - 1u];
    if (keys[end] != key || key >= params.limit) {
        return;
    }
    // The chunk's last run began in an earlier chunk: that chunk holds the head.
    if (start > 0u && keys[start] == key && keys[start - 1u] == key) {
        return;
    }
    var sum = partials[row * 2u * inner + inner + column];
    var next = chunk + 1u;
    loop {
        if (next >= chunks) {
            break;
        }
        sum = sum + partials[(o * chunks + next) * 2u * inner + column];
        let next_end = min(next * params.chunk + params.chunk, count);
        if (next_end >= count || keys[next_end] != key) {
            break;
        }
        next = next + 1u;
    }
    let destination = o * params.limit * inner + key * inner + column;
    output[destination] = store_value(load_value(output[destination]) + sum);
}
