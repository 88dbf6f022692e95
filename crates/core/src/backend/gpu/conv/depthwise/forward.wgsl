// depthwise/forward.wgsl — the depthwise convolution (conv/depthwise.rs): one invocation per
// element of the contiguous `[n, c * multiplier, oh, ow]` output, summing its window's taps in
// f32 from the input (read through its strides) and the weight `[c * multiplier, 1, kh, kw]`
// (likewise); output channel `o` reads input channel `o / multiplier`. Padding taps are
// skipped. The host checked both views against their buffers and every coordinate against
// i32 (`check_coordinates`).
// params: DepthwiseParams (conv/depthwise.rs)
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> weight: array<S>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;

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
    let out_channels = params.channels * params.multiplier;
    let channel = plane % out_channels;
    let image = plane / out_channels;
    let base = params.input_offset + image * params.input_stride_n
        + (channel / params.multiplier) * params.input_stride_c;
    let taps = params.weight_offset + channel * params.weight_stride_o;
    let row0 = i32(oi * params.stride_h) - i32(params.padding_h);
    let column0 = i32(oj * params.stride_w) - i32(params.padding_w);
    var sum = T(0.0);
    for (var ki = 0u; ki < params.kernel_h; ki = ki + 1u) {
        let y = row0 + i32(ki * params.dilation_h);
        if (y < 0 || y >= i32(params.height)) {
            continue;
        }
        let line = base + u32(y) * params.input_stride_h;
        let tap_row = taps + ki * params.weight_stride_h;
        for (var kj = 0u; kj < params.kernel_w; kj = kj + 1u) {
            let x = column0 + i32(kj * params.dilation_w);
            if (x < 0 || x >= i32(params.width)) {
                continue;
            }
            sum = sum + load_value(input[line + u32(x) * params.input_stride_w])
                * load_value(weight[tap_row + kj * params.weight_stride_w]);
        }
    }
    output[i] = store_value(sum);
}
