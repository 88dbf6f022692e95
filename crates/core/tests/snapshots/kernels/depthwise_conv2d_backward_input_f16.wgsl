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
