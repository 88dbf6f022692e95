// max_pool2d_backward.wgsl — max pooling's input gradient as a gather: one invocation per
// element of the contiguous `[n, c, h, w]` input gradient. It walks the outputs whose window
// holds its pixel (at most 4 for a 3x3 window of stride 2) and adds an output's gradient when
// its pixel is that window's first tap, in row-major kernel order, equal to the output (NaN
// matching NaN): the routing of `cpu/pool.rs` and PyTorch. No atomics, so the sums do not
// depend on scheduling. Input, output and gradient are read through their strides.
// params: PoolParams (pool.rs)
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<S>;

// Whether a tap before (ki, kj) of window (oi, oj) also equals `maximum`.
fn earlier_match(base: u32, oi: u32, oj: u32, ki: u32, kj: u32, maximum: T) -> bool {
    for (var a = 0u; a <= ki; a = a + 1u) {
        let row = tap_position(0u, oi, a);
        if (row < 0) {
            continue;
        }
        let end = select(params.kernel_w, kj, a == ki);
        for (var b = 0u; b < end; b = b + 1u) {
            let column = tap_position(1u, oj, b);
            if (column >= 0 && matches(input_at(base, row, column), maximum)) {
                return true;
            }
        }
    }
    return false;
}

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
    let input_base = plane_base(plane, params.input_offset, params.input_stride_n,
                                params.input_stride_c);
    let output_base = plane_base(plane, params.output_offset, params.output_stride_n,
                                 params.output_stride_c);
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n,
                               params.grad_stride_c);
    let value = input_at(input_base, i32(y), i32(x));
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
            if (oj >= params.out_width) {
                continue;
            }
            let maximum = load_value(pooled[output_base + oi * params.output_stride_h
                                            + oj * params.output_stride_w]);
            if (!matches(value, maximum) || earlier_match(input_base, oi, oj, ki, kj, maximum)) {
                continue;
            }
            sum = sum + load_value(grad[grad_base + oi * params.grad_stride_h
                                        + oj * params.grad_stride_w]);
        }
    }
    grad_input[i] = store_value(sum);
}
