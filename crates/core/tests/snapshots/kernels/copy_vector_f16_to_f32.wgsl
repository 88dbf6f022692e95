enable f16;
alias SI = f16;
alias SO = f32;
fn convert(v: SI) -> SO {
    return f32(v);
}
const CONTIGUOUS: bool = true;
// common.wgsl — included by anygrad's kernels after the generated header that defines the
// element types, the op functions and binding 0, `params` (the family's parameter struct,
// declared once in Rust with `kernel_params!`, see params.rs). Passing sizes, offsets and
// strides in a small storage buffer (instead of baking them into the shader) lets one compiled
// pipeline serve every shape, and lets strided and broadcast (stride-0) views be read in place
// without first copying them to a contiguous buffer.

// One invocation per element, 256 per workgroup. A dispatch may have at most 65,535
// workgroups per dimension, so large grids spill into y; this rebuilds the linear index.
fn linear_id(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32) -> u32 {
    return (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
}
struct VectorCopyParams {
    vectors: u32,
    source_offset: u32,
    destination_offset: u32,
}
@group(0) @binding(0) var<storage, read> params: VectorCopyParams;
@group(0) @binding(1) var<storage, read> source: array<vec4<SI>>;
@group(0) @binding(2) var<storage, read_write> output: array<vec4<SO>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>) {
    let vectors = params.vectors;
    let stride = workgroups.x * 256u;
    var v = id.x;
    for (; v + 3u * stride < vectors; v = v + 4u * stride) {
        let x0 = source[params.source_offset + v + 0u * stride];
        let x1 = source[params.source_offset + v + 1u * stride];
        let x2 = source[params.source_offset + v + 2u * stride];
        let x3 = source[params.source_offset + v + 3u * stride];
        output[params.destination_offset + v + 0u * stride] = vec4<SO>(convert(x0.x), convert(x0.y), convert(x0.z), convert(x0.w));
        output[params.destination_offset + v + 1u * stride] = vec4<SO>(convert(x1.x), convert(x1.y), convert(x1.z), convert(x1.w));
        output[params.destination_offset + v + 2u * stride] = vec4<SO>(convert(x2.x), convert(x2.y), convert(x2.z), convert(x2.w));
        output[params.destination_offset + v + 3u * stride] = vec4<SO>(convert(x3.x), convert(x3.y), convert(x3.z), convert(x3.w));
    }
    for (; v < vectors; v = v + stride) {
        let x0 = source[params.source_offset + v];
        output[params.destination_offset + v] = vec4<SO>(convert(x0.x), convert(x0.y), convert(x0.z), convert(x0.w));
    }
}
