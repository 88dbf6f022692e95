// max_pool2d_backward.wgsl — max pooling's input gradient as a gather, after
// max_pool2d_route.wgsl: one invocation per element of the contiguous `[n, c, h, w]` input
// gradient walks the windows that hold its pixel (at most 4 for a 3x3 window of stride 2, found
// with two divisions per axis) and adds a window's gradient when the window's route names the
// tap that reads this pixel. No atomics, so the sums do not depend on scheduling. The gradient is read through its strides;
// the route is contiguous over the output. `window_range`: shaders/pool_window_range.wgsl.
// params: PoolParams (pool.rs)
@group(0) @binding(1) var<storage, read> route: array<u32>;
@group(0) @binding(2) var<storage, read> grad: array<S>;
@group(0) @binding(3) var<storage, read_write> grad_input: array<S>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let x = i % params.width;
    let rest = i / params.width;
    let y = rest % params.height;
    let plane = rest / params.height;
    let route_base = plane * params.out_height * params.out_width;
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n,
                               params.grad_stride_c);
    var sum = T(0.0);
    // The windows whose taps can read (y, x): output row oi reads row y at tap ki when
    // oi * stride + ki * dilation = y + padding, so oi lies in [first_row, last_row] and
    // ki follows from oi; likewise for columns. Two divisions per axis, not one per tap.
    let rows = window_range(y + params.padding_h, params.stride_h, params.dilation_h,
                            params.kernel_h, params.out_height);
    let columns = window_range(x + params.padding_w, params.stride_w, params.dilation_w,
                               params.kernel_w, params.out_width);
    for (var oi = rows.x; oi <= rows.y; oi = oi + 1u) {
        let row_offset = y + params.padding_h - oi * params.stride_h;
        if (params.dilation_h != 1u && row_offset % params.dilation_h != 0u) {
            continue;
        }
        let ki = row_offset / params.dilation_h;
        for (var oj = columns.x; oj <= columns.y; oj = oj + 1u) {
            let column_offset = x + params.padding_w - oj * params.stride_w;
            if (params.dilation_w != 1u && column_offset % params.dilation_w != 0u) {
                continue;
            }
            let kj = column_offset / params.dilation_w;
            if (route[route_base + oi * params.out_width + oj] != ki * params.kernel_w + kj) {
                continue;
            }
            sum = sum + load_value(grad[grad_base + oi * params.grad_stride_h
                                        + oj * params.grad_stride_w]);
        }
    }
    grad_input[i] = store_value(sum);
}
