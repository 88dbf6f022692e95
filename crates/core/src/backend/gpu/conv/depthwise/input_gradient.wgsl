// depthwise/input_gradient.wgsl — the depthwise convolution's input gradient
// (conv/depthwise.rs) as a gather: one invocation per element of the contiguous `[n, c, h, w]`
// gradient walks, for each of its channel's `multiplier` output channels, the output pixels
// whose taps read its pixel (found with two divisions per axis, `tap_range`) and adds the
// output gradient (read through its strides) times the tap's weight, in f32. No atomics: the
// sums do not depend on scheduling.
// params: DepthwiseParams (conv/depthwise.rs)
@group(0) @binding(1) var<storage, read> grad: array<S>;
@group(0) @binding(2) var<storage, read> weight: array<S>;
@group(0) @binding(3) var<storage, read_write> grad_input: array<S>;

// The first and last output position along one axis whose taps can read padded position
// `shifted` (position + padding): o * stride <= shifted <= o * stride + (kernel - 1) * dilation,
// within the output. An empty range has first > last.
fn tap_range(shifted: u32, stride: u32, dilation: u32, kernel: u32, outputs: u32) -> vec2<u32> {
    let span = (kernel - 1u) * dilation;
    var first = 0u;
    if (shifted > span) {
        first = (shifted - span + stride - 1u) / stride;
    }
    let last = shifted / stride;
    if (outputs == 0u || first >= outputs || first > last) {
        return vec2<u32>(1u, 0u);
    }
    return vec2<u32>(first, min(last, outputs - 1u));
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
    let channel = plane % params.channels;
    let image = plane / params.channels;
    let rows = tap_range(y + params.padding_h, params.stride_h, params.dilation_h,
                         params.kernel_h, params.out_height);
    let columns = tap_range(x + params.padding_w, params.stride_w, params.dilation_w,
                            params.kernel_w, params.out_width);
    var sum = T(0.0);
    for (var m = 0u; m < params.multiplier; m = m + 1u) {
        let out_channel = channel * params.multiplier + m;
        let grad_base = params.grad_offset + image * params.grad_stride_n
            + out_channel * params.grad_stride_c;
        let taps = params.weight_offset + out_channel * params.weight_stride_o;
        for (var oi = rows.x; oi <= rows.y; oi = oi + 1u) {
            // Output row oi reads row y at tap ki when oi * stride + ki * dilation = y + padding.
            let row_offset = y + params.padding_h - oi * params.stride_h;
            if (row_offset % params.dilation_h != 0u) {
                continue;
            }
            let tap_row = taps + (row_offset / params.dilation_h) * params.weight_stride_h;
            let grad_row = grad_base + oi * params.grad_stride_h;
            for (var oj = columns.x; oj <= columns.y; oj = oj + 1u) {
                let column_offset = x + params.padding_w - oj * params.stride_w;
                if (column_offset % params.dilation_w != 0u) {
                    continue;
                }
                let kj = column_offset / params.dilation_w;
                sum = sum + load_value(grad[grad_row + oj * params.grad_stride_w])
                    * load_value(weight[tap_row + kj * params.weight_stride_w]);
            }
        }
    }
    grad_input[i] = store_value(sum);
}
