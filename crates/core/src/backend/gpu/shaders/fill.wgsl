// fill.wgsl — write one 32-bit pattern into every word of a buffer (`full`). An f16 value is
// packed twice into the pattern, so the same kernel serves every dtype.
// params: FillParams (fill.rs)
@group(0) @binding(1) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.words) {
        return;
    }
    output[i] = params.pattern;
}
