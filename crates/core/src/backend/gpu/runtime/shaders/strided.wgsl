// strided.wgsl — for kernels whose params end in the runtime array `tail` (params.rs).
// The storage offset (without the view's base offset) of element `linear`, counted row-major
// over the `rank` sizes at params.tail[shape_at..], for a view whose strides are at
// params.tail[strides_at..]. A stride of 0 repeats the same element: that is broadcasting.
fn strided_position(linear: u32, rank: u32, shape_at: u32, strides_at: u32) -> u32 {
    var remaining = linear;
    var position = 0u;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params.tail[shape_at + d - 1u];
        position = position + (remaining % size) * params.tail[strides_at + d - 1u];
        remaining = remaining / size;
    }
    return position;
}
