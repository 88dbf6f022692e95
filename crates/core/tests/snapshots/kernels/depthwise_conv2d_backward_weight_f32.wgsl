alias S = f32;
alias T = f32;
fn load_value(v: S) -> T { return T(v); }
fn store_value(v: T) -> S { return S(v); }
// float_helpers.wgsl — helpers named by op.rs's float expressions (computed in f32), added
// after the value header of every float kernel (`wgsl.rs`, `value_header`).
fn is_nan_value(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nan_value() -> f32 { return bitcast<f32>(0x7fc00000u); }
// Abramowitz & Stegun 7.1.26, the formula of op.rs's CPU erf (|error| < 1.5e-7).
fn erf_approx(x: f32) -> f32 {
    let sign = select(1.0, -1.0, x < 0.0);
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
    return sign * (1.0 - poly * exp(-a * a));
}
// Never evaluates exp of a large positive number (which would overflow to inf).
fn sigmoid_stable(x: f32) -> f32 {
    if (x >= 0.0) {
        return 1.0 / (1.0 + exp(-x));
    }
    let e = exp(x);
    return e / (1.0 + e);
}
// GPU max/min may drop a NaN; PyTorch (and the CPU reference) propagate it.
fn maximum_nan(a: f32, b: f32) -> f32 {
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    return max(a, b);
}
fn minimum_nan(a: f32, b: f32) -> f32 {
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    return min(a, b);
}
// WGSL's pow is exp2(b * log2(a)): undefined for a < 0 and unreliable at 0 and inf. This
// follows C's pow (which the CPU reference uses), including the sign of odd integer powers.
fn pow_signed(a: f32, b: f32) -> f32 {
    let infinity = bitcast<f32>(0x7f800000u);
    let magnitude_a = abs(a);
    if (b == 0.0 || a == 1.0 || (magnitude_a == 1.0 && abs(b) == infinity)) { return 1.0; }
    if (is_nan_value(a) || is_nan_value(b)) { return nan_value(); }
    var magnitude: f32;
    if (magnitude_a == 0.0) {
        magnitude = select(0.0, infinity, b < 0.0);
    } else if (magnitude_a == infinity) {
        magnitude = select(infinity, 0.0, b < 0.0);
    } else {
        magnitude = pow(magnitude_a, b);
    }
    if ((bitcast<u32>(a) & 0x80000000u) == 0u) { return magnitude; }
    let integer = floor(b) == b;
    if (!integer && magnitude_a != 0.0 && magnitude_a != infinity) { return nan_value(); }
    let half = b * 0.5;
    return select(magnitude, -magnitude, integer && floor(half) != half);
}
// sin and cos with anygrad's own range reduction. Drivers' builtin sin/cos may reduce the
// argument with too few bits of pi (an H100's Vulkan sin near pi is off by 4e-6 absolute, 1e-4
// relative), so results would differ by vendor. x = k*pi/2 + r with |r| <= pi/4: pi/2 is split
// into five parts, the first four of 8 significant bits, so that k * part is exact for
// |k| < 2^16 (|x| < 1e5) even where fma is not fused; minimax polynomials on r then give about
// one ulp. Beyond 1e5 (and for inf/NaN) the builtin runs: there every f32 is a multiple of
// 1/128 and sin of it says little.
fn sin_cos_reduced(x: f32, quadrant_shift: i32) -> f32 {
    if (!(abs(x) <= 1.0e5)) {
        return select(sin(x), cos(x), quadrant_shift == 1);
    }
    let k = round(x * 0.63661977236758134);
    var r = fma(-k, 1.5703125, x);
    r = fma(-k, 0.0004825592041015625, r);
    r = fma(-k, 1.2665987014770508e-6, r);
    r = fma(-k, 9.89530235528946e-10, r);
    r = fma(-k, 2.5633440682570896e-12, r);
    let z = r * r;
    let sine = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    let cosine = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    let quadrant = (i32(k) + quadrant_shift) & 3;
    switch quadrant {
        case 0: { return sine; }
        case 1: { return cosine; }
        case 2: { return -sine; }
        default: { return -cosine; }
    }
}
fn sin_accurate(x: f32) -> f32 { return sin_cos_reduced(x, 0); }
fn cos_accurate(x: f32) -> f32 { return sin_cos_reduced(x, 1); }
struct DepthwiseParams {
    count: u32,
    batch: u32,
    channels: u32,
    multiplier: u32,
    height: u32,
    width: u32,
    out_height: u32,
    out_width: u32,
    kernel_h: u32,
    kernel_w: u32,
    stride_h: u32,
    stride_w: u32,
    padding_h: u32,
    padding_w: u32,
    dilation_h: u32,
    dilation_w: u32,
    lanes: u32,
    input_offset: u32,
    input_stride_n: u32,
    input_stride_c: u32,
    input_stride_h: u32,
    input_stride_w: u32,
    grad_offset: u32,
    grad_stride_n: u32,
    grad_stride_c: u32,
    grad_stride_h: u32,
    grad_stride_w: u32,
    weight_offset: u32,
    weight_stride_o: u32,
    weight_stride_h: u32,
    weight_stride_w: u32,
}
@group(0) @binding(0) var<storage, read> params: DepthwiseParams;
// common.wgsl — included by anygrad's kernels after the generated header that defines the
// element types, the op functions and binding 0, `params` (the family's parameter struct,
// declared once in Rust with `kernel_params!`, see params.rs). Passing sizes, offsets and
// strides in a small storage buffer (instead of baking them into the shader) lets one compiled
// pipeline serve every shape, and lets strided and broadcast (stride-0) views be read in place
// without first copying them to a contiguous buffer.

// One invocation per element, 256 per workgroup. A dispatch may have at most 65,535
// workgroups per dimension, so large grids spill into y; this rebuilds the linear index.
fn linear_id(workgroup: vec3<u32>, workgroups: vec3<u32>, local: u32) -> u32 {
    return (workgroup.y * workgroups.x + workgroup.x) * 256u + local;
}
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
