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
struct FusedParams {
    units: u32,
    // per input: offset (in units), and for a strided input shape[rank], strides[rank]; then each scalar's f32 bits
    tail: array<u32>,
}
@group(0) @binding(0) var<storage, read> params: FusedParams;
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
// strided.wgsl — for kernels whose params end in the runtime array `tail` (params.rs).
// The storage offset (without the view's base offset) of element `linear`, counted row-major
// over the `rank` sizes at params.tail[shape_at..], for a view whose strides are at
// params.tail[strides_at..]. A stride of 0 repeats the same element: that is broadcasting.
fn strided_position(linear: u32, rank: u32, shape_at: u32, strides_at: u32) -> u32 {
    var remaining = linear;
    var position = 0u;
    for (var d = rank; d > 0u; d = d - 1u) {
        let size = params.tail[shape_at + d - 1u];
        position = position + (remaining % size) * params.tail[strides_at + d - 1u];
        remaining = remaining / size;
    }
    return position;
}
@group(0) @binding(1) var<storage, read> leaf0: array<S>;
@group(0) @binding(2) var<storage, read> leaf1: array<S>;
@group(0) @binding(3) var<storage, read_write> output: array<S>;
fn binary_mul(a: T, b: T) -> T { return a * b; }
fn binary_add(a: T, b: T) -> T { return a + b; }
fn unary_relu(x: T) -> T { return select(max(x, T(0.0)), x, is_nan_value(x)); }
var<private> runtime_zero: u32;
fn as_stored(x: T) -> T { return load_value(store_value(bitcast<T>(bitcast<u32>(x) | runtime_zero))); }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>) {
    runtime_zero = params.units >> 31u;
    let units = params.units;
    let stride = workgroups.x * 256u;
    var i = id.x;
    // 4 elements per invocation and trip: all loads first, so that they are in flight
    // together (the compiler may not move a load above a store to another binding).
    for (; i + 3u * stride < units; i = i + 4u * stride) {
        let loaded0_0 = leaf0[params.tail[0] + i + 0u * stride];
        let loaded1_0 = leaf1[params.tail[1] + strided_position(i + 0u * stride, 2u, 2u, 4u)];
        let loaded0_1 = leaf0[params.tail[0] + i + 1u * stride];
        let loaded1_1 = leaf1[params.tail[1] + strided_position(i + 1u * stride, 2u, 2u, 4u)];
        let loaded0_2 = leaf0[params.tail[0] + i + 2u * stride];
        let loaded1_2 = leaf1[params.tail[1] + strided_position(i + 2u * stride, 2u, 2u, 4u)];
        let loaded0_3 = leaf0[params.tail[0] + i + 3u * stride];
        let loaded1_3 = leaf1[params.tail[1] + strided_position(i + 3u * stride, 2u, 2u, 4u)];
        let v0_0 = load_value(loaded0_0);
        let v1_0 = load_value(loaded1_0);
        let v2_0 = as_stored(binary_mul(v0_0, v1_0));
        let v3_0 = as_stored(binary_add(v2_0, bitcast<f32>(params.tail[6])));
        let v4_0 = as_stored(unary_relu(v3_0));
        output[i + 0u * stride] = store_value(v4_0);
        let v0_1 = load_value(loaded0_1);
        let v1_1 = load_value(loaded1_1);
        let v2_1 = as_stored(binary_mul(v0_1, v1_1));
        let v3_1 = as_stored(binary_add(v2_1, bitcast<f32>(params.tail[6])));
        let v4_1 = as_stored(unary_relu(v3_1));
        output[i + 1u * stride] = store_value(v4_1);
        let v0_2 = load_value(loaded0_2);
        let v1_2 = load_value(loaded1_2);
        let v2_2 = as_stored(binary_mul(v0_2, v1_2));
        let v3_2 = as_stored(binary_add(v2_2, bitcast<f32>(params.tail[6])));
        let v4_2 = as_stored(unary_relu(v3_2));
        output[i + 2u * stride] = store_value(v4_2);
        let v0_3 = load_value(loaded0_3);
        let v1_3 = load_value(loaded1_3);
        let v2_3 = as_stored(binary_mul(v0_3, v1_3));
        let v3_3 = as_stored(binary_add(v2_3, bitcast<f32>(params.tail[6])));
        let v4_3 = as_stored(unary_relu(v3_3));
        output[i + 3u * stride] = store_value(v4_3);
    }
    for (; i < units; i = i + stride) {
        let loaded0_t = leaf0[params.tail[0] + i];
        let loaded1_t = leaf1[params.tail[1] + strided_position(i, 2u, 2u, 4u)];
        let v0_t = load_value(loaded0_t);
        let v1_t = load_value(loaded1_t);
        let v2_t = as_stored(binary_mul(v0_t, v1_t));
        let v3_t = as_stored(binary_add(v2_t, bitcast<f32>(params.tail[6])));
        let v4_t = as_stored(unary_relu(v3_t));
        output[i] = store_value(v4_t);
    }
}
