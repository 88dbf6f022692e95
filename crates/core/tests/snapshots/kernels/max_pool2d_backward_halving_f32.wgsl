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
struct HalvingBackwardParams {
    count: u32,
    height: u32,
    row_pairs: u32,
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
// padding 1x1; 2 input rows x 4 columns per invocation.
@group(0) @binding(1) var<storage, read> input: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<vec4<S>>;

const NO_TAP: u32 = 0xffffffffu;

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: S, maximum: S) -> bool {
    return value == maximum || (is_nan_value(T(value)) && is_nan_value(T(maximum)));
}

// Input row `row` (of the plane whose first row is `plane_row`) around vector `column_vector`:
// its 4 columns at 1.., the previous vector's last column at 0 for a 3-wide
// window, the next vector's first columns after them. Zero where not read (outside the image;
// the route never looks there).
fn load_row(plane_row: u32, row: i32, column_vector: u32) -> array<S, 7> {
    var values: array<S, 7>;
    if (row < 0 || row >= i32(params.height)) {
        return values;
    }
    let at = params.input_offset + (plane_row + u32(row)) * params.row_vectors + column_vector;
    let middle = input[at];
    values[1] = middle[0];
    values[2] = middle[1];
    values[3] = middle[2];
    values[4] = middle[3];
    if (column_vector > 0u) {
        values[0] = input[at - 1u][3];
    }
    if (column_vector + 1u < params.row_vectors) {
        let next = input[at + 1u];
        values[5] = next[0];
        values[6] = next[1];
    }
    return values;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let column_vector = i % params.row_vectors;
    let rest = i / params.row_vectors;
    let pair = rest % params.row_pairs;
    let plane = rest / params.row_pairs;
    let plane_row = plane * params.height;
    let top = i32(pair * 2u) - 1;
    let first_window_column = column_vector * 2u;
    let row0 = load_row(plane_row, top + 0, column_vector);
    let inside_row0 = top + 0 >= 0 && top + 0 < i32(params.height);
    let row1 = load_row(plane_row, top + 1, column_vector);
    let inside_row1 = top + 1 >= 0 && top + 1 < i32(params.height);
    let row2 = load_row(plane_row, top + 2, column_vector);
    let inside_row2 = top + 2 >= 0 && top + 2 < i32(params.height);
    let row3 = load_row(plane_row, top + 3, column_vector);
    let inside_row3 = top + 3 >= 0 && top + 3 < i32(params.height);
    let row4 = load_row(plane_row, top + 4, column_vector);
    let inside_row4 = top + 4 >= 0 && top + 4 < i32(params.height);
    let inside_left = column_vector > 0u;
    var route0_0 = NO_TAP;
    var gradient0_0 = T(0.0);
    if (pair + 0u < params.out_height && first_window_column + 0u < params.out_width) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 0u;
        let maximum = pooled[params.output_offset + at];
        gradient0_0 = T(grad[params.grad_offset + at]);
        if (inside_row0 && inside_left && matches(row0[0], maximum)) {
            route0_0 = 0u;
        }
        else if (inside_row0 && matches(row0[1], maximum)) {
            route0_0 = 1u;
        }
        else if (inside_row0 && matches(row0[2], maximum)) {
            route0_0 = 2u;
        }
        else if (inside_row1 && inside_left && matches(row1[0], maximum)) {
            route0_0 = 3u;
        }
        else if (inside_row1 && matches(row1[1], maximum)) {
            route0_0 = 4u;
        }
        else if (inside_row1 && matches(row1[2], maximum)) {
            route0_0 = 5u;
        }
        else if (inside_row2 && inside_left && matches(row2[0], maximum)) {
            route0_0 = 6u;
        }
        else if (inside_row2 && matches(row2[1], maximum)) {
            route0_0 = 7u;
        }
        else if (inside_row2 && matches(row2[2], maximum)) {
            route0_0 = 8u;
        }
    }
    var route0_1 = NO_TAP;
    var gradient0_1 = T(0.0);
    if (pair + 0u < params.out_height && first_window_column + 1u < params.out_width) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 1u;
        let maximum = pooled[params.output_offset + at];
        gradient0_1 = T(grad[params.grad_offset + at]);
        if (inside_row0 && matches(row0[2], maximum)) {
            route0_1 = 0u;
        }
        else if (inside_row0 && matches(row0[3], maximum)) {
            route0_1 = 1u;
        }
        else if (inside_row0 && matches(row0[4], maximum)) {
            route0_1 = 2u;
        }
        else if (inside_row1 && matches(row1[2], maximum)) {
            route0_1 = 3u;
        }
        else if (inside_row1 && matches(row1[3], maximum)) {
            route0_1 = 4u;
        }
        else if (inside_row1 && matches(row1[4], maximum)) {
            route0_1 = 5u;
        }
        else if (inside_row2 && matches(row2[2], maximum)) {
            route0_1 = 6u;
        }
        else if (inside_row2 && matches(row2[3], maximum)) {
            route0_1 = 7u;
        }
        else if (inside_row2 && matches(row2[4], maximum)) {
            route0_1 = 8u;
        }
    }
    var route0_2 = NO_TAP;
    var gradient0_2 = T(0.0);
    if (pair + 0u < params.out_height && first_window_column + 2u < params.out_width) {
        let at = (plane * params.out_height + pair + 0u) * params.out_width + first_window_column + 2u;
        let maximum = pooled[params.output_offset + at];
        gradient0_2 = T(grad[params.grad_offset + at]);
        if (inside_row0 && matches(row0[4], maximum)) {
            route0_2 = 0u;
        }
        else if (inside_row0 && matches(row0[5], maximum)) {
            route0_2 = 1u;
        }
        else if (inside_row0 && matches(row0[6], maximum)) {
            route0_2 = 2u;
        }
        else if (inside_row1 && matches(row1[4], maximum)) {
            route0_2 = 3u;
        }
        else if (inside_row1 && matches(row1[5], maximum)) {
            route0_2 = 4u;
        }
        else if (inside_row1 && matches(row1[6], maximum)) {
            route0_2 = 5u;
        }
        else if (inside_row2 && matches(row2[4], maximum)) {
            route0_2 = 6u;
        }
        else if (inside_row2 && matches(row2[5], maximum)) {
            route0_2 = 7u;
        }
        else if (inside_row2 && matches(row2[6], maximum)) {
            route0_2 = 8u;
        }
    }
    var route1_0 = NO_TAP;
    var gradient1_0 = T(0.0);
    if (pair + 1u < params.out_height && first_window_column + 0u < params.out_width) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 0u;
        let maximum = pooled[params.output_offset + at];
        gradient1_0 = T(grad[params.grad_offset + at]);
        if (inside_row2 && inside_left && matches(row2[0], maximum)) {
            route1_0 = 0u;
        }
        else if (inside_row2 && matches(row2[1], maximum)) {
            route1_0 = 1u;
        }
        else if (inside_row2 && matches(row2[2], maximum)) {
            route1_0 = 2u;
        }
        else if (inside_row3 && inside_left && matches(row3[0], maximum)) {
            route1_0 = 3u;
        }
        else if (inside_row3 && matches(row3[1], maximum)) {
            route1_0 = 4u;
        }
        else if (inside_row3 && matches(row3[2], maximum)) {
            route1_0 = 5u;
        }
        else if (inside_row4 && inside_left && matches(row4[0], maximum)) {
            route1_0 = 6u;
        }
        else if (inside_row4 && matches(row4[1], maximum)) {
            route1_0 = 7u;
        }
        else if (inside_row4 && matches(row4[2], maximum)) {
            route1_0 = 8u;
        }
    }
    var route1_1 = NO_TAP;
    var gradient1_1 = T(0.0);
    if (pair + 1u < params.out_height && first_window_column + 1u < params.out_width) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 1u;
        let maximum = pooled[params.output_offset + at];
        gradient1_1 = T(grad[params.grad_offset + at]);
        if (inside_row2 && matches(row2[2], maximum)) {
            route1_1 = 0u;
        }
        else if (inside_row2 && matches(row2[3], maximum)) {
            route1_1 = 1u;
        }
        else if (inside_row2 && matches(row2[4], maximum)) {
            route1_1 = 2u;
        }
        else if (inside_row3 && matches(row3[2], maximum)) {
            route1_1 = 3u;
        }
        else if (inside_row3 && matches(row3[3], maximum)) {
            route1_1 = 4u;
        }
        else if (inside_row3 && matches(row3[4], maximum)) {
            route1_1 = 5u;
        }
        else if (inside_row4 && matches(row4[2], maximum)) {
            route1_1 = 6u;
        }
        else if (inside_row4 && matches(row4[3], maximum)) {
            route1_1 = 7u;
        }
        else if (inside_row4 && matches(row4[4], maximum)) {
            route1_1 = 8u;
        }
    }
    var route1_2 = NO_TAP;
    var gradient1_2 = T(0.0);
    if (pair + 1u < params.out_height && first_window_column + 2u < params.out_width) {
        let at = (plane * params.out_height + pair + 1u) * params.out_width + first_window_column + 2u;
        let maximum = pooled[params.output_offset + at];
        gradient1_2 = T(grad[params.grad_offset + at]);
        if (inside_row2 && matches(row2[4], maximum)) {
            route1_2 = 0u;
        }
        else if (inside_row2 && matches(row2[5], maximum)) {
            route1_2 = 1u;
        }
        else if (inside_row2 && matches(row2[6], maximum)) {
            route1_2 = 2u;
        }
        else if (inside_row3 && matches(row3[4], maximum)) {
            route1_2 = 3u;
        }
        else if (inside_row3 && matches(row3[5], maximum)) {
            route1_2 = 4u;
        }
        else if (inside_row3 && matches(row3[6], maximum)) {
            route1_2 = 5u;
        }
        else if (inside_row4 && matches(row4[4], maximum)) {
            route1_2 = 6u;
        }
        else if (inside_row4 && matches(row4[5], maximum)) {
            route1_2 = 7u;
        }
        else if (inside_row4 && matches(row4[6], maximum)) {
            route1_2 = 8u;
        }
    }
    var sum0_0 = T(0.0);
    if (route0_0 == 4u) { sum0_0 = sum0_0 + gradient0_0; }
    var sum0_1 = T(0.0);
    if (route0_0 == 5u) { sum0_1 = sum0_1 + gradient0_0; }
    if (route0_1 == 3u) { sum0_1 = sum0_1 + gradient0_1; }
    var sum0_2 = T(0.0);
    if (route0_1 == 4u) { sum0_2 = sum0_2 + gradient0_1; }
    var sum0_3 = T(0.0);
    if (route0_1 == 5u) { sum0_3 = sum0_3 + gradient0_1; }
    if (route0_2 == 3u) { sum0_3 = sum0_3 + gradient0_2; }
    if (pair * 2u + 0u < params.height) {
        grad_input[(plane_row + pair * 2u + 0u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum0_0), store_value(sum0_1), store_value(sum0_2), store_value(sum0_3));
    }
    var sum1_0 = T(0.0);
    if (route0_0 == 7u) { sum1_0 = sum1_0 + gradient0_0; }
    if (route1_0 == 1u) { sum1_0 = sum1_0 + gradient1_0; }
    var sum1_1 = T(0.0);
    if (route0_0 == 8u) { sum1_1 = sum1_1 + gradient0_0; }
    if (route0_1 == 6u) { sum1_1 = sum1_1 + gradient0_1; }
    if (route1_0 == 2u) { sum1_1 = sum1_1 + gradient1_0; }
    if (route1_1 == 0u) { sum1_1 = sum1_1 + gradient1_1; }
    var sum1_2 = T(0.0);
    if (route0_1 == 7u) { sum1_2 = sum1_2 + gradient0_1; }
    if (route1_1 == 1u) { sum1_2 = sum1_2 + gradient1_1; }
    var sum1_3 = T(0.0);
    if (route0_1 == 8u) { sum1_3 = sum1_3 + gradient0_1; }
    if (route0_2 == 6u) { sum1_3 = sum1_3 + gradient0_2; }
    if (route1_1 == 2u) { sum1_3 = sum1_3 + gradient1_1; }
    if (route1_2 == 0u) { sum1_3 = sum1_3 + gradient1_2; }
    if (pair * 2u + 1u < params.height) {
        grad_input[(plane_row + pair * 2u + 1u) * params.row_vectors + column_vector] = vec4<S>(store_value(sum1_0), store_value(sum1_1), store_value(sum1_2), store_value(sum1_3));
    }
}
