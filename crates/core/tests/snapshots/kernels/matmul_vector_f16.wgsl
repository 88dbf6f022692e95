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
struct MatmulParams {
    batch: u32,
    m: u32,
    n: u32,
    k: u32,
    a_offset: u32,
    a_batch_stride: u32,
    a_row_stride: u32,
    a_column_stride: u32,
    b_offset: u32,
    b_batch_stride: u32,
    b_row_stride: u32,
    b_column_stride: u32,
}
@group(0) @binding(0) var<storage, read> params: MatmulParams;
fn dot_vectors(x: vec4<u32>, y: vec4<u32>) -> f32 {
    let low = vec4<f32>(unpack2x16float(x.x), unpack2x16float(x.y))
        * vec4<f32>(unpack2x16float(y.x), unpack2x16float(y.y));
    let high = vec4<f32>(unpack2x16float(x.z), unpack2x16float(x.w))
        * vec4<f32>(unpack2x16float(y.z), unpack2x16float(y.w));
    return dot(low + high, vec4<f32>(1.0));
}
// matmul/vector.rs: 8 columns a workgroup, 32 invocations splitting k for
// each, up to 4 rows of A; 8 elements per 16-byte vector.
const LANES: u32 = 8u;
const SPLIT: u32 = 32u;
const INVOCATIONS: u32 = 256u;
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> c: array<S>;
// The partial sums: row r of A at [r * INVOCATIONS + invocation].
var<workgroup> partial: array<f32, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let lane = local % SPLIT;
    let column = workgroup.x * 8u + local / SPLIT;
    // A column past n reads the last one's row (every invocation reaches the barriers) and
    // stores nothing.
    let read_column = min(column, params.n - 1u);
    let vectors = params.k / LANES;
    let rows = min(params.m, 4u);
    for (var batch = workgroup.z; batch < params.batch; batch += workgroups.z) {
        let a_base = (params.a_offset + batch * params.a_batch_stride) / LANES;
        let a_row = params.a_row_stride / LANES;
        let w_row = (params.b_offset + batch * params.b_batch_stride + read_column * params.b_column_stride) / LANES;
        var sums = array<f32, 4>();
        for (var v = lane; v < vectors; v += SPLIT) {
            let w = b[w_row + v];
            for (var r = 0u; r < rows; r += 1u) {
                sums[r] += dot_vectors(a[a_base + r * a_row + v], w);
            }
        }
        for (var r = 0u; r < 4u; r += 1u) {
            partial[r * INVOCATIONS + local] = sums[r];
        }
        workgroupBarrier();
        for (var half = SPLIT / 2u; half > 0u; half /= 2u) {
            if (lane < half) {
                for (var r = 0u; r < 4u; r += 1u) {
                    partial[r * INVOCATIONS + local] += partial[r * INVOCATIONS + local + half];
                }
            }
            workgroupBarrier();
        }
        if (lane == 0u && column < params.n) {
            for (var r = 0u; r < rows; r += 1u) {
                c[(batch * params.m + r) * params.n + column] = store_value(T(partial[r * INVOCATIONS + local]));
            }
        }
        // The next batch writes the partial sums again.
        workgroupBarrier();
    }
}
