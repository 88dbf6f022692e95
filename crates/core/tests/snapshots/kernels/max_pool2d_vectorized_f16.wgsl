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
struct HalvingParams {
    count: u32,
    height: u32,
    out_height: u32,
    row_vectors: u32,
    input_offset: u32,
}
@group(0) @binding(0) var<storage, read> params: HalvingParams;
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
// Vectorized max pooling forward (pool/vectorized.rs): a 3x3 window, stride 2,
// padding 1x1; 8 input columns and 4 outputs per invocation.
@group(0) @binding(1) var<storage, read> input: array<mat2x4<S>>;
@group(0) @binding(2) var<storage, read_write> output: array<vec4<S>>;

fn negative_infinity() -> S {
    return S(bitcast<f32>(0xff800000u));
}

// The columns of input row `row` (of the plane whose first row is `plane_row`) under vector
// `column_vector`, from the column before it when the window is 3 wide; -inf outside the image.
fn load_row(plane_row: u32, row: i32, column_vector: u32) -> array<S, 9> {
    var values: array<S, 9>;
    for (var column = 0u; column < 9u; column = column + 1u) {
        values[column] = negative_infinity();
    }
    if (row < 0 || row >= i32(params.height)) {
        return values;
    }
    let at = params.input_offset + (plane_row + u32(row)) * params.row_vectors + column_vector;
    let vector = input[at];
    values[1] = vector[0][0];
    values[2] = vector[0][1];
    values[3] = vector[0][2];
    values[4] = vector[0][3];
    values[5] = vector[1][0];
    values[6] = vector[1][1];
    values[7] = vector[1][2];
    values[8] = vector[1][3];
    if (column_vector > 0u) {
        values[0] = input[at - 1u][1][3];
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
    let plane_row = (rest / params.out_height) * params.height;
    let top = i32((rest % params.out_height) * 2u) - 1;
    let row0 = load_row(plane_row, top + 0, column_vector);
    let row1 = load_row(plane_row, top + 1, column_vector);
    let row2 = load_row(plane_row, top + 2, column_vector);
    var best0 = negative_infinity();
    if (is_nan_value(T(row0[0])) || row0[0] > best0) { best0 = row0[0]; }
    if (is_nan_value(T(row0[1])) || row0[1] > best0) { best0 = row0[1]; }
    if (is_nan_value(T(row0[2])) || row0[2] > best0) { best0 = row0[2]; }
    if (is_nan_value(T(row1[0])) || row1[0] > best0) { best0 = row1[0]; }
    if (is_nan_value(T(row1[1])) || row1[1] > best0) { best0 = row1[1]; }
    if (is_nan_value(T(row1[2])) || row1[2] > best0) { best0 = row1[2]; }
    if (is_nan_value(T(row2[0])) || row2[0] > best0) { best0 = row2[0]; }
    if (is_nan_value(T(row2[1])) || row2[1] > best0) { best0 = row2[1]; }
    if (is_nan_value(T(row2[2])) || row2[2] > best0) { best0 = row2[2]; }
    var best1 = negative_infinity();
    if (is_nan_value(T(row0[2])) || row0[2] > best1) { best1 = row0[2]; }
    if (is_nan_value(T(row0[3])) || row0[3] > best1) { best1 = row0[3]; }
    if (is_nan_value(T(row0[4])) || row0[4] > best1) { best1 = row0[4]; }
    if (is_nan_value(T(row1[2])) || row1[2] > best1) { best1 = row1[2]; }
    if (is_nan_value(T(row1[3])) || row1[3] > best1) { best1 = row1[3]; }
    if (is_nan_value(T(row1[4])) || row1[4] > best1) { best1 = row1[4]; }
    if (is_nan_value(T(row2[2])) || row2[2] > best1) { best1 = row2[2]; }
    if (is_nan_value(T(row2[3])) || row2[3] > best1) { best1 = row2[3]; }
    if (is_nan_value(T(row2[4])) || row2[4] > best1) { best1 = row2[4]; }
    var best2 = negative_infinity();
    if (is_nan_value(T(row0[4])) || row0[4] > best2) { best2 = row0[4]; }
    if (is_nan_value(T(row0[5])) || row0[5] > best2) { best2 = row0[5]; }
    if (is_nan_value(T(row0[6])) || row0[6] > best2) { best2 = row0[6]; }
    if (is_nan_value(T(row1[4])) || row1[4] > best2) { best2 = row1[4]; }
    if (is_nan_value(T(row1[5])) || row1[5] > best2) { best2 = row1[5]; }
    if (is_nan_value(T(row1[6])) || row1[6] > best2) { best2 = row1[6]; }
    if (is_nan_value(T(row2[4])) || row2[4] > best2) { best2 = row2[4]; }
    if (is_nan_value(T(row2[5])) || row2[5] > best2) { best2 = row2[5]; }
    if (is_nan_value(T(row2[6])) || row2[6] > best2) { best2 = row2[6]; }
    var best3 = negative_infinity();
    if (is_nan_value(T(row0[6])) || row0[6] > best3) { best3 = row0[6]; }
    if (is_nan_value(T(row0[7])) || row0[7] > best3) { best3 = row0[7]; }
    if (is_nan_value(T(row0[8])) || row0[8] > best3) { best3 = row0[8]; }
    if (is_nan_value(T(row1[6])) || row1[6] > best3) { best3 = row1[6]; }
    if (is_nan_value(T(row1[7])) || row1[7] > best3) { best3 = row1[7]; }
    if (is_nan_value(T(row1[8])) || row1[8] > best3) { best3 = row1[8]; }
    if (is_nan_value(T(row2[6])) || row2[6] > best3) { best3 = row2[6]; }
    if (is_nan_value(T(row2[7])) || row2[7] > best3) { best3 = row2[7]; }
    if (is_nan_value(T(row2[8])) || row2[8] > best3) { best3 = row2[8]; }
    output[i] = vec4<S>(best0, best1, best2, best3);
}
