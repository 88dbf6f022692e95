// max_pool2d_route.wgsl — the first pass of max pooling's input gradient: one invocation per
// window (element of the `[n, c, oh, ow]` output) finds the first tap, in row-major kernel
// order, whose input equals the window's output (NaN matching NaN) and writes its number
// `ki * kernel_w + kj` to the contiguous `route`, or 0xffffffff when no tap does. This is the
// routing of `cpu/pool.rs` and PyTorch; max_pool2d_backward.wgsl then gathers by it.
// Input and output are read through their strides.
// params: PoolParams (pool.rs)
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read_write> route: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let oj = i % params.out_width;
    let rest = i / params.out_width;
    let oi = rest % params.out_height;
    let plane = rest / params.out_height;
    let base = plane_base(plane, params.input_offset, params.input_stride_n,
                          params.input_stride_c);
    let maximum = load_value(pooled[plane_base(plane, params.output_offset,
                                               params.output_stride_n, params.output_stride_c)
                                    + oi * params.output_stride_h + oj * params.output_stride_w]);
    var tap = 0xffffffffu;
    for (var ki = 0u; ki < params.kernel_h && tap == 0xffffffffu; ki = ki + 1u) {
        let row = tap_position(0u, oi, ki);
        if (row < 0) {
            continue;
        }
        for (var kj = 0u; kj < params.kernel_w; kj = kj + 1u) {
            let column = tap_position(1u, oj, kj);
            if (column >= 0 && matches(input_at(base, row, column), maximum)) {
                tap = ki * params.kernel_w + kj;
                break;
            }
        }
    }
    route[i] = tap;
}
