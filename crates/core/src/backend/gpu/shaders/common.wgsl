// common.wgsl — included at the top of every anygrad kernel (after the generated header that
// defines the element types and the op functions).
//
// Binding 0 of every kernel is `params`: the dispatch's sizes, offsets and strides as 32-bit
// words. Passing them in a small storage buffer (instead of baking them into the shader) lets
// one compiled pipeline serve every shape, and lets strided and broadcast (stride-0) views be
// read in place without first copying them to a contiguous buffer.
@group(0) @binding(0) var<storage, read> params: array<u32>;

// One invocation per element, 256 per workgroup. A dispatch may have at most 65,535
// workgroups per dimension, so large grids spill into y; this rebuilds the linear index.
fn linear_id(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32) -> u32 {
    return (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
}

// The storage offset (without the view's base offset) of element `linear`, counted row-major
// over the `rank` sizes at params[shape_at..], for a view whose strides are at
// params[strides_at..]. A stride of 0 repeats the same element: that is broadcasting.
fn strided_position(linear: u32, rank: u32, shape_at: u32, strides_at: u32) -> u32 {
    var remaining = linear;
    var position = 0u;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params[shape_at + d - 1u];
        position = position + (remaining % size) * params[strides_at + d - 1u];
        remaining = remaining / size;
    }
    return position;
}
