// max_pool2d.wgsl — 2-D max pooling: one invocation per output element of the contiguous
// `[n, c, oh, ow]` output, reading its window through the input's strides (the host checked
// that the view fits its buffer). Padding reads -inf, so it never wins; a NaN in the window
// gives NaN, as PyTorch and the CPU (`cpu/pool.rs`) do.
// params: PoolParams (pool.rs)
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read_write> output: array<S>;

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
    let base = plane_base(rest / params.out_height, params.input_offset, params.input_stride_n,
                          params.input_stride_c);
    var best = T(bitcast<f32>(0xff800000u));
    for (var ki = 0u; ki < params.kernel_h; ki = ki + 1u) {
        let row = tap_position(0u, oi, ki);
        if (row < 0) {
            continue;
        }
        for (var kj = 0u; kj < params.kernel_w; kj = kj + 1u) {
            let column = tap_position(1u, oj, kj);
            if (column < 0) {
                continue;
            }
            let value = input_at(base, row, column);
            if (is_nan_value(value) || value > best) {
                best = value;
            }
        }
    }
    output[i] = store_value(best);
}
