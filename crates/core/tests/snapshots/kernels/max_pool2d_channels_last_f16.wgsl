enable f16;
alias S = f16;
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
struct ChannelsLastPoolParams {
    count: u32,
    channel_vectors: u32,
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
    input_offset: u32,
    output_offset: u32,
    grad_offset: u32,
    grad_stride_n: u32,
    grad_stride_c: u32,
    grad_stride_h: u32,
    grad_stride_w: u32,
}
@group(0) @binding(0) var<storage, read> params: ChannelsLastPoolParams;
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
// Channels-last max pooling forward (pool/channels_last.rs): 8 channels of one
// output pixel per invocation.
@group(0) @binding(1) var<storage, read> input: array<mat2x4<S>>;
@group(0) @binding(2) var<storage, read_write> output: array<mat2x4<S>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let channel_vector = i % params.channel_vectors;
    let pixel = i / params.channel_vectors;
    let ox = pixel % params.out_width;
    let oy = (pixel / params.out_width) % params.out_height;
    let image = pixel / (params.out_width * params.out_height);
    let lowest = S(bitcast<f32>(0xff800000u));
    let last = arrayLength(&input) - 1u;
    var best0 = lowest;
    var best1 = lowest;
    var best2 = lowest;
    var best3 = lowest;
    var best4 = lowest;
    var best5 = lowest;
    var best6 = lowest;
    var best7 = lowest;
    let y0 = i32(oy * params.stride_h + 0u * params.dilation_h) - i32(params.padding_h);
    let row0 = (image * params.height + u32(clamp(y0, 0, i32(params.height) - 1))) * params.width;
    let y1 = i32(oy * params.stride_h + 1u * params.dilation_h) - i32(params.padding_h);
    let row1 = (image * params.height + u32(clamp(y1, 0, i32(params.height) - 1))) * params.width;
    let y2 = i32(oy * params.stride_h + 2u * params.dilation_h) - i32(params.padding_h);
    let row2 = (image * params.height + u32(clamp(y2, 0, i32(params.height) - 1))) * params.width;
    let x0 = i32(ox * params.stride_w + 0u * params.dilation_w) - i32(params.padding_w);
    let column0 = u32(clamp(x0, 0, i32(params.width) - 1));
    let x1 = i32(ox * params.stride_w + 1u * params.dilation_w) - i32(params.padding_w);
    let column1 = u32(clamp(x1, 0, i32(params.width) - 1));
    let x2 = i32(ox * params.stride_w + 2u * params.dilation_w) - i32(params.padding_w);
    let column2 = u32(clamp(x2, 0, i32(params.width) - 1));
    let v00 = input[min(params.input_offset + (row0 + column0) * params.channel_vectors + channel_vector, last)];
    let v01 = input[min(params.input_offset + (row0 + column1) * params.channel_vectors + channel_vector, last)];
    let v02 = input[min(params.input_offset + (row0 + column2) * params.channel_vectors + channel_vector, last)];
    let v10 = input[min(params.input_offset + (row1 + column0) * params.channel_vectors + channel_vector, last)];
    let v11 = input[min(params.input_offset + (row1 + column1) * params.channel_vectors + channel_vector, last)];
    let v12 = input[min(params.input_offset + (row1 + column2) * params.channel_vectors + channel_vector, last)];
    let v20 = input[min(params.input_offset + (row2 + column0) * params.channel_vectors + channel_vector, last)];
    let v21 = input[min(params.input_offset + (row2 + column1) * params.channel_vectors + channel_vector, last)];
    let v22 = input[min(params.input_offset + (row2 + column2) * params.channel_vectors + channel_vector, last)];
    if (y0 >= 0 && y0 < i32(params.height) && x0 >= 0 && x0 < i32(params.width)) {
        if (is_nan_value(T(v00[0][0])) || v00[0][0] > best0) { best0 = v00[0][0]; }
        if (is_nan_value(T(v00[0][1])) || v00[0][1] > best1) { best1 = v00[0][1]; }
        if (is_nan_value(T(v00[0][2])) || v00[0][2] > best2) { best2 = v00[0][2]; }
        if (is_nan_value(T(v00[0][3])) || v00[0][3] > best3) { best3 = v00[0][3]; }
        if (is_nan_value(T(v00[1][0])) || v00[1][0] > best4) { best4 = v00[1][0]; }
        if (is_nan_value(T(v00[1][1])) || v00[1][1] > best5) { best5 = v00[1][1]; }
        if (is_nan_value(T(v00[1][2])) || v00[1][2] > best6) { best6 = v00[1][2]; }
        if (is_nan_value(T(v00[1][3])) || v00[1][3] > best7) { best7 = v00[1][3]; }
    }
    if (y0 >= 0 && y0 < i32(params.height) && x1 >= 0 && x1 < i32(params.width)) {
        if (is_nan_value(T(v01[0][0])) || v01[0][0] > best0) { best0 = v01[0][0]; }
        if (is_nan_value(T(v01[0][1])) || v01[0][1] > best1) { best1 = v01[0][1]; }
        if (is_nan_value(T(v01[0][2])) || v01[0][2] > best2) { best2 = v01[0][2]; }
        if (is_nan_value(T(v01[0][3])) || v01[0][3] > best3) { best3 = v01[0][3]; }
        if (is_nan_value(T(v01[1][0])) || v01[1][0] > best4) { best4 = v01[1][0]; }
        if (is_nan_value(T(v01[1][1])) || v01[1][1] > best5) { best5 = v01[1][1]; }
        if (is_nan_value(T(v01[1][2])) || v01[1][2] > best6) { best6 = v01[1][2]; }
        if (is_nan_value(T(v01[1][3])) || v01[1][3] > best7) { best7 = v01[1][3]; }
    }
    if (y0 >= 0 && y0 < i32(params.height) && x2 >= 0 && x2 < i32(params.width)) {
        if (is_nan_value(T(v02[0][0])) || v02[0][0] > best0) { best0 = v02[0][0]; }
        if (is_nan_value(T(v02[0][1])) || v02[0][1] > best1) { best1 = v02[0][1]; }
        if (is_nan_value(T(v02[0][2])) || v02[0][2] > best2) { best2 = v02[0][2]; }
        if (is_nan_value(T(v02[0][3])) || v02[0][3] > best3) { best3 = v02[0][3]; }
        if (is_nan_value(T(v02[1][0])) || v02[1][0] > best4) { best4 = v02[1][0]; }
        if (is_nan_value(T(v02[1][1])) || v02[1][1] > best5) { best5 = v02[1][1]; }
        if (is_nan_value(T(v02[1][2])) || v02[1][2] > best6) { best6 = v02[1][2]; }
        if (is_nan_value(T(v02[1][3])) || v02[1][3] > best7) { best7 = v02[1][3]; }
    }
    if (y1 >= 0 && y1 < i32(params.height) && x0 >= 0 && x0 < i32(params.width)) {
        if (is_nan_value(T(v10[0][0])) || v10[0][0] > best0) { best0 = v10[0][0]; }
        if (is_nan_value(T(v10[0][1])) || v10[0][1] > best1) { best1 = v10[0][1]; }
        if (is_nan_value(T(v10[0][2])) || v10[0][2] > best2) { best2 = v10[0][2]; }
        if (is_nan_value(T(v10[0][3])) || v10[0][3] > best3) { best3 = v10[0][3]; }
        if (is_nan_value(T(v10[1][0])) || v10[1][0] > best4) { best4 = v10[1][0]; }
        if (is_nan_value(T(v10[1][1])) || v10[1][1] > best5) { best5 = v10[1][1]; }
        if (is_nan_value(T(v10[1][2])) || v10[1][2] > best6) { best6 = v10[1][2]; }
        if (is_nan_value(T(v10[1][3])) || v10[1][3] > best7) { best7 = v10[1][3]; }
    }
    if (y1 >= 0 && y1 < i32(params.height) && x1 >= 0 && x1 < i32(params.width)) {
        if (is_nan_value(T(v11[0][0])) || v11[0][0] > best0) { best0 = v11[0][0]; }
        if (is_nan_value(T(v11[0][1])) || v11[0][1] > best1) { best1 = v11[0][1]; }
        if (is_nan_value(T(v11[0][2])) || v11[0][2] > best2) { best2 = v11[0][2]; }
        if (is_nan_value(T(v11[0][3])) || v11[0][3] > best3) { best3 = v11[0][3]; }
        if (is_nan_value(T(v11[1][0])) || v11[1][0] > best4) { best4 = v11[1][0]; }
        if (is_nan_value(T(v11[1][1])) || v11[1][1] > best5) { best5 = v11[1][1]; }
        if (is_nan_value(T(v11[1][2])) || v11[1][2] > best6) { best6 = v11[1][2]; }
        if (is_nan_value(T(v11[1][3])) || v11[1][3] > best7) { best7 = v11[1][3]; }
    }
    if (y1 >= 0 && y1 < i32(params.height) && x2 >= 0 && x2 < i32(params.width)) {
        if (is_nan_value(T(v12[0][0])) || v12[0][0] > best0) { best0 = v12[0][0]; }
        if (is_nan_value(T(v12[0][1])) || v12[0][1] > best1) { best1 = v12[0][1]; }
        if (is_nan_value(T(v12[0][2])) || v12[0][2] > best2) { best2 = v12[0][2]; }
        if (is_nan_value(T(v12[0][3])) || v12[0][3] > best3) { best3 = v12[0][3]; }
        if (is_nan_value(T(v12[1][0])) || v12[1][0] > best4) { best4 = v12[1][0]; }
        if (is_nan_value(T(v12[1][1])) || v12[1][1] > best5) { best5 = v12[1][1]; }
        if (is_nan_value(T(v12[1][2])) || v12[1][2] > best6) { best6 = v12[1][2]; }
        if (is_nan_value(T(v12[1][3])) || v12[1][3] > best7) { best7 = v12[1][3]; }
    }
    if (y2 >= 0 && y2 < i32(params.height) && x0 >= 0 && x0 < i32(params.width)) {
        if (is_nan_value(T(v20[0][0])) || v20[0][0] > best0) { best0 = v20[0][0]; }
        if (is_nan_value(T(v20[0][1])) || v20[0][1] > best1) { best1 = v20[0][1]; }
        if (is_nan_value(T(v20[0][2])) || v20[0][2] > best2) { best2 = v20[0][2]; }
        if (is_nan_value(T(v20[0][3])) || v20[0][3] > best3) { best3 = v20[0][3]; }
        if (is_nan_value(T(v20[1][0])) || v20[1][0] > best4) { best4 = v20[1][0]; }
        if (is_nan_value(T(v20[1][1])) || v20[1][1] > best5) { best5 = v20[1][1]; }
        if (is_nan_value(T(v20[1][2])) || v20[1][2] > best6) { best6 = v20[1][2]; }
        if (is_nan_value(T(v20[1][3])) || v20[1][3] > best7) { best7 = v20[1][3]; }
    }
    if (y2 >= 0 && y2 < i32(params.height) && x1 >= 0 && x1 < i32(params.width)) {
        if (is_nan_value(T(v21[0][0])) || v21[0][0] > best0) { best0 = v21[0][0]; }
        if (is_nan_value(T(v21[0][1])) || v21[0][1] > best1) { best1 = v21[0][1]; }
        if (is_nan_value(T(v21[0][2])) || v21[0][2] > best2) { best2 = v21[0][2]; }
        if (is_nan_value(T(v21[0][3])) || v21[0][3] > best3) { best3 = v21[0][3]; }
        if (is_nan_value(T(v21[1][0])) || v21[1][0] > best4) { best4 = v21[1][0]; }
        if (is_nan_value(T(v21[1][1])) || v21[1][1] > best5) { best5 = v21[1][1]; }
        if (is_nan_value(T(v21[1][2])) || v21[1][2] > best6) { best6 = v21[1][2]; }
        if (is_nan_value(T(v21[1][3])) || v21[1][3] > best7) { best7 = v21[1][3]; }
    }
    if (y2 >= 0 && y2 < i32(params.height) && x2 >= 0 && x2 < i32(params.width)) {
        if (is_nan_value(T(v22[0][0])) || v22[0][0] > best0) { best0 = v22[0][0]; }
        if (is_nan_value(T(v22[0][1])) || v22[0][1] > best1) { best1 = v22[0][1]; }
        if (is_nan_value(T(v22[0][2])) || v22[0][2] > best2) { best2 = v22[0][2]; }
        if (is_nan_value(T(v22[0][3])) || v22[0][3] > best3) { best3 = v22[0][3]; }
        if (is_nan_value(T(v22[1][0])) || v22[1][0] > best4) { best4 = v22[1][0]; }
        if (is_nan_value(T(v22[1][1])) || v22[1][1] > best5) { best5 = v22[1][1]; }
        if (is_nan_value(T(v22[1][2])) || v22[1][2] > best6) { best6 = v22[1][2]; }
        if (is_nan_value(T(v22[1][3])) || v22[1][3] > best7) { best7 = v22[1][3]; }
    }
    output[i] = mat2x4<S>(vec4<S>(best0, best1, best2, best3), vec4<S>(best4, best5, best6, best7));
}
