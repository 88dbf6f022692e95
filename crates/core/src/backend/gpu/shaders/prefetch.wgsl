// prefetch.wgsl — read a buffer so that its lines are in the GPU's L2 cache when the next
// kernel reads it (`prefetch.rs`). Each invocation reads `per_invocation` 16-byte vectors,
// `stride` vectors apart (neighbouring invocations read neighbouring vectors). The sink is
// written only when `params.never` is 1, which only the test passes (the sink then holds the
// XOR of every word read), so that the reads are live for the compiler and nothing is written.
// params: PrefetchParams (prefetch.rs)
@group(0) @binding(1) var<storage, read> source: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> sink: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let first = linear_id(workgroup, workgroups, local);
    if (first >= params.stride) {
        return;
    }
    var folded = vec4<u32>(0u);
    for (var step = 0u; step < params.per_invocation; step += 1u) {
        let at = first + step * params.stride;
        if (at < params.vectors) {
            folded ^= source[at];
        }
    }
    if (params.never == 1u) {
        atomicXor(&sink[0], folded.x ^ folded.y ^ folded.z ^ folded.w);
    }
}
