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
struct HalvingBackwardParams {
    count: u32,
    height: u32,
    row_blocks: u32,
    row_vectors: u32,
    out_height: u32,
    out_width: u32,
    input_offset: u32,
    output_offset: u32,
    grad_offset: u32,
}
@group(0) @binding(0) var<storage, read> params: HalvingBackwardParams;
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
// Vectorized max pooling gradient (pool/halving_backward.rs): a 3x3 window, stride 2,
// padding 1x1; 4 input rows x 4 columns per invocation.
@group(0) @binding(1) var<storage, read> input: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<vec4<S>>;

const NO_TAP: u32 = 0xffffffffu;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let column_vector = i % params.row_vectors;
    let rest = i / params.row_vectors;
    let pair = (rest % params.row_blocks) * 2u;
    let plane = rest / params.row_blocks;
    let plane_row = plane * params.height;
    let top = i32(pair * 2u) - 1;
    let first_window_column = column_vector * 2u;
    let has_left = column_vector > 0u;
    let has_right = column_vector + 1u < params.row_vectors;
    let inside_row0 = top + 0 >= 0 && top + 0 < i32(params.height);
    var x0_0 = S(0.0);
    var x0_1 = S(0.0);
    var x0_2 = S(0.0);
    var x0_3 = S(0.0);
    var x0_4 = S(0.0);
    var x0_5 = S(0.0);
    var x0_6 = S(0.0);
    if (inside_row0) {
        let at = params.input_offset + (plane_row + u32(top + 0)) * params.row_vectors + column_vector;
        let middle = input[at];
        x0_1 = middle[0];
        x0_2 = middle[1];
        x0_3 = middle[2];
        x0_4 = middle[3];
        if (has_left) { x0_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x0_5 = next[0];
            x0_6 = next[1];
        }
    }
    let nan0_0 = is_nan_value(T(x0_0));
    let nan0_1 = is_nan_value(T(x0_1));
    let nan0_2 = is_nan_value(T(x0_2));
    let nan0_3 = is_nan_value(T(x0_3));
    let nan0_4 = is_nan_value(T(x0_4));
    let nan0_5 = is_nan_value(T(x0_5));
    let nan0_6 = is_nan_value(T(x0_6));
    let inside_row1 = top + 1 >= 0 && top + 1 < i32(params.height);
    var x1_0 = S(0.0);
    var x1_1 = S(0.0);
    var x1_2 = S(0.0);
    var x1_3 = S(0.0);
    var x1_4 = S(0.0);
    var x1_5 = S(0.0);
    var x1_6 = S(0.0);
    if (inside_row1) {
        let at = params.input_offset + (plane_row + u32(top + 1)) * params.row_vectors + column_vector;
        let middle = input[at];
        x1_1 = middle[0];
        x1_2 = middle[1];
        x1_3 = middle[2];
        x1_4 = middle[3];
        if (has_left) { x1_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x1_5 = next[0];
            x1_6 = next[1];
        }
    }
    let nan1_0 = is_nan_value(T(x1_0));
    let nan1_1 = is_nan_value(T(x1_1));
    let nan1_2 = is_nan_value(T(x1_2));
    let nan1_3 = is_nan_value(T(x1_3));
    let nan1_4 = is_nan_value(T(x1_4));
    let nan1_5 = is_nan_value(T(x1_5));
    let nan1_6 = is_nan_value(T(x1_6));
    let inside_row2 = top + 2 >= 0 && top + 2 < i32(params.height);
    var x2_0 = S(0.0);
    var x2_1 = S(0.0);
    var x2_2 = S(0.0);
    var x2_3 = S(0.0);
    var x2_4 = S(0.0);
    var x2_5 = S(0.0);
    var x2_6 = S(0.0);
    if (inside_row2) {
        let at = params.input_offset + (plane_row + u32(top + 2)) * params.row_vectors + column_vector;
        let middle = input[at];
        x2_1 = middle[0];
        x2_2 = middle[1];
        x2_3 = middle[2];
        x2_4 = middle[3];
        if (has_left) { x2_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x2_5 = next[0];
            x2_6 = next[1];
        }
    }
    let nan2_0 = is_nan_value(T(x2_0));
    let nan2_1 = is_nan_value(T(x2_1));
    let nan2_2 = is_nan_value(T(x2_2));
    let nan2_3 = is_nan_value(T(x2_3));
    let nan2_4 = is_nan_value(T(x2_4));
    let nan2_5 = is_nan_value(T(x2_5));
    let nan2_6 = is_nan_value(T(x2_6));
    let inside_row3 = top + 3 >= 0 && top + 3 < i32(params.height);
    var x3_0 = S(0.0);
    var x3_1 = S(0.0);
    var x3_2 = S(0.0);
    var x3_3 = S(0.0);
    var x3_4 = S(0.0);
    var x3_5 = S(0.0);
    var x3_6 = S(0.0);
    if (inside_row3) {
        let at = params.input_offset + (plane_row + u32(top + 3)) * params.row_vectors + column_vector;
        let middle = input[at];
        x3_1 = middle[0];
        x3_2 = middle[1];
        x3_3 = middle[2];
        x3_4 = middle[3];
        if (has_left) { x3_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x3_5 = next[0];
            x3_6 = next[1];
        }
    }
    let nan3_0 = is_nan_value(T(x3_0));
    let nan3_1 = is_nan_value(T(x3_1));
    let nan3_2 = is_nan_value(T(x3_2));
    let nan3_3 = is_nan_value(T(x3_3));
    let nan3_4 = is_nan_value(T(x3_4));
    let nan3_5 = is_nan_value(T(x3_5));
    let nan3_6 = is_nan_value(T(x3_6));
    let inside_row4 = top + 4 >= 0 && top + 4 < i32(params.height);
    var x4_0 = S(0.0);
    var x4_1 = S(0.0);
    var x4_2 = S(0.0);
    var x4_3 = S(0.0);
    var x4_4 = S(0.0);
    var x4_5 = S(0.0);
    var x4_6 = S(0.0);
    if (inside_row4) {
        let at = params.input_offset + (plane_row + u32(top + 4)) * params.row_vectors + column_vector;
        let middle = input[at];
        x4_1 = middle[0];
        x4_2 = middle[1];
        x4_3 = middle[2];
        x4_4 = middle[3];
        if (has_left) { x4_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x4_5 = next[0];
            x4_6 = next[1];
        }
    }
    let nan4_0 = is_nan_value(T(x4_0));
    let nan4_1 = is_nan_value(T(x4_1));
    let nan4_2 = is_nan_value(T(x4_2));
    let nan4_3 = is_nan_value(T(x4_3));
    let nan4_4 = is_nan_value(T(x4_4));
    let nan4_5 = is_nan_value(T(x4_5));
    let nan4_6 = is_nan_value(T(x4_6));
    let inside_row5 = top + 5 >= 0 && top + 5 < i32(params.height);
    var x5_0 = S(0.0);
    var x5_1 = S(0.0);
    var x5_2 = S(0.0);
    var x5_3 = S(0.0);
    var x5_4 = S(0.0);
    var x5_5 = S(0.0);
    var x5_6 = S(0.0);
    if (inside_row5) {
        let at = params.input_offset + (plane_row + u32(top + 5)) * params.row_vectors + column_vector;
        let middle = input[at];
        x5_1 = middle[0];
        x5_2 = middle[1];
        x5_3 = middle[2];
        x5_4 = middle[3];
        if (has_left) { x5_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x5_5 = next[0];
            x5_6 = next[1];
        }
    }
    let nan5_0 = is_nan_value(T(x5_0));
    let nan5_1 = is_nan_value(T(x5_1));
    let nan5_2 = is_nan_value(T(x5_2));
    let nan5_3 = is_nan_value(T(x5_3));
    let nan5_4 = is_nan_value(T(x5_4));
    let nan5_5 = is_nan_value(T(x5_5));
    let nan5_6 = is_nan_value(T(x5_6));
    let inside_row6 = top + 6 >= 0 && top + 6 < i32(params.height);
    var x6_0 = S(0.0);
    var x6_1 = S(0.0);
    var x6_2 = S(0.0);
    var x6_3 = S(0.0);
    var x6_4 = S(0.0);
    var x6_5 = S(0.0);
    var x6_6 = S(0.0);
    if (inside_row6) {
        let at = params.input_offset + (plane_row + u32(top + 6)) * params.row_vectors + column_vector;
        let middle = input[at];
        x6_1 = middle[0];
        x6_2 = middle[1];
        x6_3 = middle[2];
        x6_4 = middle[3];
        if (has_left) { x6_0 = input[at - 1u][3]; }
        if (has_right) {
            let next = input[at + 1u];
            x6_5 = next[0];
            x6_6 = next[1];
        }
    }
    let nan6_0 = is_nan_value(T(x6_0));
    let nan6_1 = is_nan_value(T(x6_1));
    let nan6_2 = is_nan_value(T(x6_2));
    let nan6_3 = is_nan_value(T(x6_3));
    let nan6_4 = is_nan_value(T(x6_4));
    let nan6_5 = is_nan_value(T(x6_5));
    let nan6_6 = is_nan_value(T(x6_6));
    let exists0_0 = pair + 0u < params.out_height && first_window_column + 0u < params.out_width;
    var maximum0_0 = S(0.0);
    var gradient0_0 = T(0.0);
    if (exists0_0) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 0u;
        maximum0_0 = pooled[params.output_offset + at];
        gradient0_0 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum0_0 = is_nan_value(T(maximum0_0));
    var route0_0 = NO_TAP;
    route0_0 = select(route0_0, 8u, exists0_0 && inside_row2 && (x2_2 == maximum0_0 || (nan2_2 && nan_maximum0_0)));
    route0_0 = select(route0_0, 7u, exists0_0 && inside_row2 && (x2_1 == maximum0_0 || (nan2_1 && nan_maximum0_0)));
    route0_0 = select(route0_0, 6u, exists0_0 && inside_row2 && has_left && (x2_0 == maximum0_0 || (nan2_0 && nan_maximum0_0)));
    route0_0 = select(route0_0, 5u, exists0_0 && inside_row1 && (x1_2 == maximum0_0 || (nan1_2 && nan_maximum0_0)));
    route0_0 = select(route0_0, 4u, exists0_0 && inside_row1 && (x1_1 == maximum0_0 || (nan1_1 && nan_maximum0_0)));
    route0_0 = select(route0_0, 3u, exists0_0 && inside_row1 && has_left && (x1_0 == maximum0_0 || (nan1_0 && nan_maximum0_0)));
    route0_0 = select(route0_0, 2u, exists0_0 && inside_row0 && (x0_2 == maximum0_0 || (nan0_2 && nan_maximum0_0)));
    route0_0 = select(route0_0, 1u, exists0_0 && inside_row0 && (x0_1 == maximum0_0 || (nan0_1 && nan_maximum0_0)));
    route0_0 = select(route0_0, 0u, exists0_0 && inside_row0 && has_left && (x0_0 == maximum0_0 || (nan0_0 && nan_maximum0_0)));
    let exists0_1 = pair + 0u < params.out_height && first_window_column + 1u < params.out_width;
    var maximum0_1 = S(0.0);
    var gradient0_1 = T(0.0);
    if (exists0_1) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 1u;
        maximum0_1 = pooled[params.output_offset + at];
        gradient0_1 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum0_1 = is_nan_value(T(maximum0_1));
    var route0_1 = NO_TAP;
    route0_1 = select(route0_1, 8u, exists0_1 && inside_row2 && (x2_4 == maximum0_1 || (nan2_4 && nan_maximum0_1)));
    route0_1 = select(route0_1, 7u, exists0_1 && inside_row2 && (x2_3 == maximum0_1 || (nan2_3 && nan_maximum0_1)));
    route0_1 = select(route0_1, 6u, exists0_1 && inside_row2 && (x2_2 == maximum0_1 || (nan2_2 && nan_maximum0_1)));
    route0_1 = select(route0_1, 5u, exists0_1 && inside_row1 && (x1_4 == maximum0_1 || (nan1_4 && nan_maximum0_1)));
    route0_1 = select(route0_1, 4u, exists0_1 && inside_row1 && (x1_3 == maximum0_1 || (nan1_3 && nan_maximum0_1)));
    route0_1 = select(route0_1, 3u, exists0_1 && inside_row1 && (x1_2 == maximum0_1 || (nan1_2 && nan_maximum0_1)));
    route0_1 = select(route0_1, 2u, exists0_1 && inside_row0 && (x0_4 == maximum0_1 || (nan0_4 && nan_maximum0_1)));
    route0_1 = select(route0_1, 1u, exists0_1 && inside_row0 && (x0_3 == maximum0_1 || (nan0_3 && nan_maximum0_1)));
    route0_1 = select(route0_1, 0u, exists0_1 && inside_row0 && (x0_2 == maximum0_1 || (nan0_2 && nan_maximum0_1)));
    let exists0_2 = pair + 0u < params.out_height && first_window_column + 2u < params.out_width;
    var maximum0_2 = S(0.0);
    var gradient0_2 = T(0.0);
    if (exists0_2) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 2u;
        maximum0_2 = pooled[params.output_offset + at];
        gradient0_2 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum0_2 = is_nan_value(T(maximum0_2));
    var route0_2 = NO_TAP;
    route0_2 = select(route0_2, 8u, exists0_2 && inside_row2 && (x2_6 == maximum0_2 || (nan2_6 && nan_maximum0_2)));
    route0_2 = select(route0_2, 7u, exists0_2 && inside_row2 && (x2_5 == maximum0_2 || (nan2_5 && nan_maximum0_2)));
    route0_2 = select(route0_2, 6u, exists0_2 && inside_row2 && (x2_4 == maximum0_2 || (nan2_4 && nan_maximum0_2)));
    route0_2 = select(route0_2, 5u, exists0_2 && inside_row1 && (x1_6 == maximum0_2 || (nan1_6 && nan_maximum0_2)));
    route0_2 = select(route0_2, 4u, exists0_2 && inside_row1 && (x1_5 == maximum0_2 || (nan1_5 && nan_maximum0_2)));
    route0_2 = select(route0_2, 3u, exists0_2 && inside_row1 && (x1_4 == maximum0_2 || (nan1_4 && nan_maximum0_2)));
    route0_2 = select(route0_2, 2u, exists0_2 && inside_row0 && (x0_6 == maximum0_2 || (nan0_6 && nan_maximum0_2)));
    route0_2 = select(route0_2, 1u, exists0_2 && inside_row0 && (x0_5 == maximum0_2 || (nan0_5 && nan_maximum0_2)));
    route0_2 = select(route0_2, 0u, exists0_2 && inside_row0 && (x0_4 == maximum0_2 || (nan0_4 && nan_maximum0_2)));
    let exists1_0 = pair + 1u < params.out_height && first_window_column + 0u < params.out_width;
    var maximum1_0 = S(0.0);
    var gradient1_0 = T(0.0);
    if (exists1_0) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 0u;
        maximum1_0 = pooled[params.output_offset + at];
        gradient1_0 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum1_0 = is_nan_value(T(maximum1_0));
    var route1_0 = NO_TAP;
    route1_0 = select(route1_0, 8u, exists1_0 && inside_row4 && (x4_2 == maximum1_0 || (nan4_2 && nan_maximum1_0)));
    route1_0 = select(route1_0, 7u, exists1_0 && inside_row4 && (x4_1 == maximum1_0 || (nan4_1 && nan_maximum1_0)));
    route1_0 = select(route1_0, 6u, exists1_0 && inside_row4 && has_left && (x4_0 == maximum1_0 || (nan4_0 && nan_maximum1_0)));
    route1_0 = select(route1_0, 5u, exists1_0 && inside_row3 && (x3_2 == maximum1_0 || (nan3_2 && nan_maximum1_0)));
    route1_0 = select(route1_0, 4u, exists1_0 && inside_row3 && (x3_1 == maximum1_0 || (nan3_1 && nan_maximum1_0)));
    route1_0 = select(route1_0, 3u, exists1_0 && inside_row3 && has_left && (x3_0 == maximum1_0 || (nan3_0 && nan_maximum1_0)));
    route1_0 = select(route1_0, 2u, exists1_0 && inside_row2 && (x2_2 == maximum1_0 || (nan2_2 && nan_maximum1_0)));
    route1_0 = select(route1_0, 1u, exists1_0 && inside_row2 && (x2_1 == maximum1_0 || (nan2_1 && nan_maximum1_0)));
    route1_0 = select(route1_0, 0u, exists1_0 && inside_row2 && has_left && (x2_0 == maximum1_0 || (nan2_0 && nan_maximum1_0)));
    let exists1_1 = pair + 1u < params.out_height && first_window_column + 1u < params.out_width;
    var maximum1_1 = S(0.0);
    var gradient1_1 = T(0.0);
    if (exists1_1) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 1u;
        maximum1_1 = pooled[params.output_offset + at];
        gradient1_1 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum1_1 = is_nan_value(T(maximum1_1));
    var route1_1 = NO_TAP;
    route1_1 = select(route1_1, 8u, exists1_1 && inside_row4 && (x4_4 == maximum1_1 || (nan4_4 && nan_maximum1_1)));
    route1_1 = select(route1_1, 7u, exists1_1 && inside_row4 && (x4_3 == maximum1_1 || (nan4_3 && nan_maximum1_1)));
    route1_1 = select(route1_1, 6u, exists1_1 && inside_row4 && (x4_2 == maximum1_1 || (nan4_2 && nan_maximum1_1)));
    route1_1 = select(route1_1, 5u, exists1_1 && inside_row3 && (x3_4 == maximum1_1 || (nan3_4 && nan_maximum1_1)));
    route1_1 = select(route1_1, 4u, exists1_1 && inside_row3 && (x3_3 == maximum1_1 || (nan3_3 && nan_maximum1_1)));
    route1_1 = select(route1_1, 3u, exists1_1 && inside_row3 && (x3_2 == maximum1_1 || (nan3_2 && nan_maximum1_1)));
    route1_1 = select(route1_1, 2u, exists1_1 && inside_row2 && (x2_4 == maximum1_1 || (nan2_4 && nan_maximum1_1)));
    route1_1 = select(route1_1, 1u, exists1_1 && inside_row2 && (x2_3 == maximum1_1 || (nan2_3 && nan_maximum1_1)));
    route1_1 = select(route1_1, 0u, exists1_1 && inside_row2 && (x2_2 == maximum1_1 || (nan2_2 && nan_maximum1_1)));
    let exists1_2 = pair + 1u < params.out_height && first_window_column + 2u < params.out_width;
    var maximum1_2 = S(0.0);
    var gradient1_2 = T(0.0);
    if (exists1_2) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 2u;
        maximum1_2 = pooled[params.output_offset + at];
        gradient1_2 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum1_2 = is_nan_value(T(maximum1_2));
    var route1_2 = NO_TAP;
    route1_2 = select(route1_2, 8u, exists1_2 && inside_row4 && (x4_6 == maximum1_2 || (nan4_6 && nan_maximum1_2)));
    route1_2 = select(route1_2, 7u, exists1_2 && inside_row4 && (x4_5 == maximum1_2 || (nan4_5 && nan_maximum1_2)));
    route1_2 = select(route1_2, 6u, exists1_2 && inside_row4 && (x4_4 == maximum1_2 || (nan4_4 && nan_maximum1_2)));
    route1_2 = select(route1_2, 5u, exists1_2 && inside_row3 && (x3_6 == maximum1_2 || (nan3_6 && nan_maximum1_2)));
    route1_2 = select(route1_2, 4u, exists1_2 && inside_row3 && (x3_5 == maximum1_2 || (nan3_5 && nan_maximum1_2)));
    route1_2 = select(route1_2, 3u, exists1_2 && inside_row3 && (x3_4 == maximum1_2 || (nan3_4 && nan_maximum1_2)));
    route1_2 = select(route1_2, 2u, exists1_2 && inside_row2 && (x2_6 == maximum1_2 || (nan2_6 && nan_maximum1_2)));
    route1_2 = select(route1_2, 1u, exists1_2 && inside_row2 && (x2_5 == maximum1_2 || (nan2_5 && nan_maximum1_2)));
    route1_2 = select(route1_2, 0u, exists1_2 && inside_row2 && (x2_4 == maximum1_2 || (nan2_4 && nan_maximum1_2)));
    let exists2_0 = pair + 2u < params.out_height && first_window_column + 0u < params.out_width;
    var maximum2_0 = S(0.0);
    var gradient2_0 = T(0.0);
    if (exists2_0) {
        let at = (plane * params.out_height + pair + 2u) * params.out_width + first_window_column + 0u;
        maximum2_0 = pooled[params.output_offset + at];
        gradient2_0 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum2_0 = is_nan_value(T(maximum2_0));
    var route2_0 = NO_TAP;
    route2_0 = select(route2_0, 8u, exists2_0 && inside_row6 && (x6_2 == maximum2_0 || (nan6_2 && nan_maximum2_0)));
    route2_0 = select(route2_0, 7u, exists2_0 && inside_row6 && (x6_1 == maximum2_0 || (nan6_1 && nan_maximum2_0)));
    route2_0 = select(route2_0, 6u, exists2_0 && inside_row6 && has_left && (x6_0 == maximum2_0 || (nan6_0 && nan_maximum2_0)));
    route2_0 = select(route2_0, 5u, exists2_0 && inside_row5 && (x5_2 == maximum2_0 || (nan5_2 && nan_maximum2_0)));
    route2_0 = select(route2_0, 4u, exists2_0 && inside_row5 && (x5_1 == maximum2_0 || (nan5_1 && nan_maximum2_0)));
    route2_0 = select(route2_0, 3u, exists2_0 && inside_row5 && has_left && (x5_0 == maximum2_0 || (nan5_0 && nan_maximum2_0)));
    route2_0 = select(route2_0, 2u, exists2_0 && inside_row4 && (x4_2 == maximum2_0 || (nan4_2 && nan_maximum2_0)));
    route2_0 = select(route2_0, 1u, exists2_0 && inside_row4 && (x4_1 == maximum2_0 || (nan4_1 && nan_maximum2_0)));
    route2_0 = select(route2_0, 0u, exists2_0 && inside_row4 && has_left && (x4_0 == maximum2_0 || (nan4_0 && nan_maximum2_0)));
    let exists2_1 = pair + 2u < params.out_height && first_window_column + 1u < params.out_width;
    var maximum2_1 = S(0.0);
    var gradient2_1 = T(0.0);
    if (exists2_1) {
        let at = (plane * params.out_height + pair + 2u) * params.out_width + first_window_column + 1u;
        maximum2_1 = pooled[params.output_offset + at];
        gradient2_1 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum2_1 = is_nan_value(T(maximum2_1));
    var route2_1 = NO_TAP;
    route2_1 = select(route2_1, 8u, exists2_1 && inside_row6 && (x6_4 == maximum2_1 || (nan6_4 && nan_maximum2_1)));
    route2_1 = select(route2_1, 7u, exists2_1 && inside_row6 && (x6_3 == maximum2_1 || (nan6_3 && nan_maximum2_1)));
    route2_1 = select(route2_1, 6u, exists2_1 && inside_row6 && (x6_2 == maximum2_1 || (nan6_2 && nan_maximum2_1)));
    route2_1 = select(route2_1, 5u, exists2_1 && inside_row5 && (x5_4 == maximum2_1 || (nan5_4 && nan_maximum2_1)));
    route2_1 = select(route2_1, 4u, exists2_1 && inside_row5 && (x5_3 == maximum2_1 || (nan5_3 && nan_maximum2_1)));
    route2_1 = select(route2_1, 3u, exists2_1 && inside_row5 && (x5_2 == maximum2_1 || (nan5_2 && nan_maximum2_1)));
    route2_1 = select(route2_1, 2u, exists2_1 && inside_row4 && (x4_4 == maximum2_1 || (nan4_4 && nan_maximum2_1)));
    route2_1 = select(route2_1, 1u, exists2_1 && inside_row4 && (x4_3 == maximum2_1 || (nan4_3 && nan_maximum2_1)));
    route2_1 = select(route2_1, 0u, exists2_1 && inside_row4 && (x4_2 == maximum2_1 || (nan4_2 && nan_maximum2_1)));
    let exists2_2 = pair + 2u < params.out_height && first_window_column + 2u < params.out_width;
    var maximum2_2 = S(0.0);
    var gradient2_2 = T(0.0);
    if (exists2_2) {
        let at = (plane * params.out_height + pair + 2u) * params.out_width + first_window_column + 2u;
        maximum2_2 = pooled[params.output_offset + at];
        gradient2_2 = T(grad[params.grad_offset + at]);
    }
    let nan_maximum2_2 = is_nan_value(T(maximum2_2));
    var route2_2 = NO_TAP;
    route2_2 = select(route2_2, 8u, exists2_2 && inside_row6 && (x6_6 == maximum2_2 || (nan6_6 && nan_maximum2_2)));
    route2_2 = select(route2_2, 7u, exists2_2 && inside_row6 && (x6_5 == maximum2_2 || (nan6_5 && nan_maximum2_2)));
    route2_2 = select(route2_2, 6u, exists2_2 && inside_row6 && (x6_4 == maximum2_2 || (nan6_4 && nan_maximum2_2)));
    route2_2 = select(route2_2, 5u, exists2_2 && inside_row5 && (x5_6 == maximum2_2 || (nan5_6 && nan_maximum2_2)));
    route2_2 = select(route2_2, 4u, exists2_2 && inside_row5 && (x5_5 == maximum2_2 || (nan5_5 && nan_maximum2_2)));
    route2_2 = select(route2_2, 3u, exists2_2 && inside_row5 && (x5_4 == maximum2_2 || (nan5_4 && nan_maximum2_2)));
    route2_2 = select(route2_2, 2u, exists2_2 && inside_row4 && (x4_6 == maximum2_2 || (nan4_6 && nan_maximum2_2)));
    route2_2 = select(route2_2, 1u, exists2_2 && inside_row4 && (x4_5 == maximum2_2 || (nan4_5 && nan_maximum2_2)));
    route2_2 = select(route2_2, 0u, exists2_2 && inside_row4 && (x4_4 == maximum2_2 || (nan4_4 && nan_maximum2_2)));
    var sum0_0 = T(0.0);
    sum0_0 = sum0_0 + select(T(0.0), gradient0_0, route0_0 == 4u);
    var sum0_1 = T(0.0);
    sum0_1 = sum0_1 + select(T(0.0), gradient0_0, route0_0 == 5u);
    sum0_1 = sum0_1 + select(T(0.0), gradient0_1, route0_1 == 3u);
    var sum0_2 = T(0.0);
    sum0_2 = sum0_2 + select(T(0.0), gradient0_1, route0_1 == 4u);
    var sum0_3 = T(0.0);
    sum0_3 = sum0_3 + select(T(0.0), gradient0_1, route0_1 == 5u);
    sum0_3 = sum0_3 + select(T(0.0), gradient0_2, route0_2 == 3u);
    if (pair * 2u + 0u < params.height) {
        grad_input[(plane_row + pair * 2u + 0u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum0_0), store_value(sum0_1), store_value(sum0_2), store_value(sum0_3));
    }
    var sum1_0 = T(0.0);
    sum1_0 = sum1_0 + select(T(0.0), gradient0_0, route0_0 == 7u);
    sum1_0 = sum1_0 + select(T(0.0), gradient1_0, route1_0 == 1u);
    var sum1_1 = T(0.0);
    sum1_1 = sum1_1 + select(T(0.0), gradient0_0, route0_0 == 8u);
    sum1_1 = sum1_1 + select(T(0.0), gradient0_1, route0_1 == 6u);
    sum1_1 = sum1_1 + select(T(0.0), gradient1_0, route1_0 == 2u);
    sum1_1 = sum1_1 + select(T(0.0), gradient1_1, route1_1 == 0u);
    var sum1_2 = T(0.0);
    sum1_2 = sum1_2 + select(T(0.0), gradient0_1, route0_1 == 7u);
    sum1_2 = sum1_2 + select(T(0.0), gradient1_1, route1_1 == 1u);
    var sum1_3 = T(0.0);
    sum1_3 = sum1_3 + select(T(0.0), gradient0_1, route0_1 == 8u);
    sum1_3 = sum1_3 + select(T(0.0), gradient0_2, route0_2 == 6u);
    sum1_3 = sum1_3 + select(T(0.0), gradient1_1, route1_1 == 2u);
    sum1_3 = sum1_3 + select(T(0.0), gradient1_2, route1_2 == 0u);
    if (pair * 2u + 1u < params.height) {
        grad_input[(plane_row + pair * 2u + 1u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum1_0), store_value(sum1_1), store_value(sum1_2), store_value(sum1_3));
    }
    var sum2_0 = T(0.0);
    sum2_0 = sum2_0 + select(T(0.0), gradient1_0, route1_0 == 4u);
    var sum2_1 = T(0.0);
    sum2_1 = sum2_1 + select(T(0.0), gradient1_0, route1_0 == 5u);
    sum2_1 = sum2_1 + select(T(0.0), gradient1_1, route1_1 == 3u);
    var sum2_2 = T(0.0);
    sum2_2 = sum2_2 + select(T(0.0), gradient1_1, route1_1 == 4u);
    var sum2_3 = T(0.0);
    sum2_3 = sum2_3 + select(T(0.0), gradient1_1, route1_1 == 5u);
    sum2_3 = sum2_3 + select(T(0.0), gradient1_2, route1_2 == 3u);
    if (pair * 2u + 2u < params.height) {
        grad_input[(plane_row + pair * 2u + 2u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum2_0), store_value(sum2_1), store_value(sum2_2), store_value(sum2_3));
    }
    var sum3_0 = T(0.0);
    sum3_0 = sum3_0 + select(T(0.0), gradient1_0, route1_0 == 7u);
    sum3_0 = sum3_0 + select(T(0.0), gradient2_0, route2_0 == 1u);
    var sum3_1 = T(0.0);
    sum3_1 = sum3_1 + select(T(0.0), gradient1_0, route1_0 == 8u);
    sum3_1 = sum3_1 + select(T(0.0), gradient1_1, route1_1 == 6u);
    sum3_1 = sum3_1 + select(T(0.0), gradient2_0, route2_0 == 2u);
    sum3_1 = sum3_1 + select(T(0.0), gradient2_1, route2_1 == 0u);
    var sum3_2 = T(0.0);
    sum3_2 = sum3_2 + select(T(0.0), gradient1_1, route1_1 == 7u);
    sum3_2 = sum3_2 + select(T(0.0), gradient2_1, route2_1 == 1u);
    var sum3_3 = T(0.0);
    sum3_3 = sum3_3 + select(T(0.0), gradient1_1, route1_1 == 8u);
    sum3_3 = sum3_3 + select(T(0.0), gradient1_2, route1_2 == 6u);
    sum3_3 = sum3_3 + select(T(0.0), gradient2_1, route2_1 == 2u);
    sum3_3 = sum3_3 + select(T(0.0), gradient2_2, route2_2 == 0u);
    if (pair * 2u + 3u < params.height) {
        grad_input[(plane_row + pair * 2u + 3u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum3_0), store_value(sum3_1), store_value(sum3_2), store_value(sum3_3));
    }
}
