// pool_planes.wgsl — shared by every max pooling kernel (after the value header and
// `PoolParams`, pool.rs): where an `[n, c]` plane of a strided view starts.

// Where plane `plane` (image * channels + channel) of a view starts.
fn plane_base(plane: u32, offset: u32, stride_n: u32, stride_c: u32) -> u32 {
    return offset + (plane / params.channels) * stride_n + (plane % params.channels) * stride_c;
}
