// depthwise/weight_gradient.wgsl — the depthwise convolution's weight gradient
// (conv/depthwise.rs): `params.lanes` invocations (a power of two up to 256) per element
// `(o, ki, kj)` of the contiguous `[c * multiplier, 1, kh, kw]` gradient, `256 / lanes`
// elements a workgroup. An element's lanes stride over the batch's output pixels, each summing
// output gradient times the input pixel the tap reads (both read through their strides;
// padding taps skipped) in f32; the lanes' partial sums are then added in a fixed tree in
// workgroup memory, so the result does not depend on scheduling. The host gives few lanes to
// small images (fewer barriers), all 256 to large ones.
// params: DepthwiseParams (conv/depthwise.rs); `count`: weight elements.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> grad: array<S>;
@group(0) @binding(3) var<storage, read_write> grad_weight: array<S>;

var<workgroup> partial: array<T, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    // The workgroup's elements and this invocation's lane. `lanes` is uniform, so every
    // invocation reaches the barriers below.
    let lanes = params.lanes;
    let group = workgroup.y * workgroups.x + workgroup.x;
    let element = group * (256u / lanes) + local / lanes;
    let lane = local % lanes;
    let valid = element < params.count;
    let kj = element % params.kernel_w;
    let rest = element / params.kernel_w;
    let ki = rest % params.kernel_h;
    let channel = rest / params.kernel_h;
    let plane = params.out_height * params.out_width;
    let pixels = params.batch * plane;
    let input_channel = params.input_offset + (channel / params.multiplier) * params.input_stride_c;
    let grad_channel = params.grad_offset + channel * params.grad_stride_c;
    let row_shift = i32(ki * params.dilation_h) - i32(params.padding_h);
    let column_shift = i32(kj * params.dilation_w) - i32(params.padding_w);
    var sum = T(0.0);
    if (valid) {
        for (var p = lane; p < pixels; p = p + lanes) {
            let image = p / plane;
            let pixel = p - image * plane;
            let oi = pixel / params.out_width;
            let oj = pixel - oi * params.out_width;
            let y = i32(oi * params.stride_h) + row_shift;
            let x = i32(oj * params.stride_w) + column_shift;
            if (y < 0 || y >= i32(params.height) || x < 0 || x >= i32(params.width)) {
                continue;
            }
            let g = load_value(grad[grad_channel + image * params.grad_stride_n
                                    + oi * params.grad_stride_h + oj * params.grad_stride_w]);
            let v = load_value(input[input_channel + image * params.input_stride_n
                                     + u32(y) * params.input_stride_h
                                     + u32(x) * params.input_stride_w]);
            sum = sum + g * v;
        }
    }
    partial[local] = sum;
    workgroupBarrier();
    for (var half = lanes / 2u; half > 0u; half = half / 2u) {
        if (lane < half) {
            partial[local] = partial[local] + partial[local + half];
        }
        workgroupBarrier();
    }
    if (lane == 0u && valid) {
        grad_weight[element] = store_value(partial[local]);
    }
}
