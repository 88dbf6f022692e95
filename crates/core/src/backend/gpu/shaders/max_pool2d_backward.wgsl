// max_pool2d_backward.wgsl — max pooling's input gradient as a gather, after
// max_pool2d_route.wgsl: one invocation per element of the contiguous `[n, c, h, w]` input
// gradient walks the windows that hold its pixel (at most 4 for a 3x3 window of stride 2) and
// adds a window's gradient when the window's route names the tap that reads this pixel. No
// atomics, so the sums do not depend on scheduling. The gradient is read through its strides;
// the route is contiguous over the output.
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
    for (var ki = 0u; ki < params.kernel_h; ki = ki + 1u) {
        // Output row oi reads row y at tap ki when oi * stride = y + padding - ki * dilation.
        let shifted_row = i32(y + params.padding_h) - i32(ki * params.dilation_h);
        if (shifted_row < 0) {
            break;
        }
        if (u32(shifted_row) % params.stride_h != 0u) {
            continue;
        }
        let oi = u32(shifted_row) / params.stride_h;
        if (oi >= params.out_height) {
            continue;
        }
        for (var kj = 0u; kj < params.kernel_w; kj = kj + 1u) {
            let shifted_column = i32(x + params.padding_w) - i32(kj * params.dilation_w);
            if (shifted_column < 0) {
                break;
            }
            if (u32(shifted_column) % params.stride_w != 0u) {
                continue;
            }
            let oj = u32(shifted_column) / params.stride_w;
            if (oj >= params.out_width
                    || route[route_base + oi * params.out_width + oj] != ki * params.kernel_w + kj) {
                continue;
            }
            sum = sum + load_value(grad[grad_base + oi * params.grad_stride_h
                                        + oj * params.grad_stride_w]);
        }
    }
    grad_input[i] = store_value(sum);
}
