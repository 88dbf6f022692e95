// pool_common.wgsl — shared by max_pool2d.wgsl and max_pool2d_route.wgsl (after the value
// header, `PoolParams` and pool_planes.wgsl; pool.rs): the window geometry of
// `geometry::Window`, as the CPU's `cpu/pool.rs` computes it, over the `input` binding.

// The input row (axis 0) or column (axis 1) that output position `o` reads at kernel tap `k`,
// or -1 when that falls in the padding.
fn tap_position(axis: u32, o: u32, k: u32) -> i32 {
    var stride = params.stride_w;
    var padding = params.padding_w;
    var dilation = params.dilation_w;
    var size = params.width;
    if (axis == 0u) {
        stride = params.stride_h;
        padding = params.padding_h;
        dilation = params.dilation_h;
        size = params.height;
    }
    let position = i32(o * stride + k * dilation) - i32(padding);
    return select(-1, position, position >= 0 && position < i32(size));
}

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: T, maximum: T) -> bool {
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}

// The input element at `(row, column)` of the plane starting at `base`.
fn input_at(base: u32, row: i32, column: i32) -> T {
    return load_value(input[base + u32(row) * params.input_stride_h + u32(column) * params.input_stride_w]);
}
