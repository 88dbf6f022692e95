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
@group(0) @binding(1) var<storage, read> matrix_a: array<S>;
@group(0) @binding(2) var<storage, read> matrix_b: array<S>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<S>;

// [8 k][32 vec4]: A's block transposed (vectors along m), B's block (vectors along n).
var<workgroup> tile_a: array<vec4<f32>, 256>;
var<workgroup> tile_b: array<vec4<f32>, 256>;

fn load_a(base: u32, row: u32, column: u32, m: u32, k: u32) -> f32 {
    if (row < m && column < k) {
        return f32(load_value(matrix_a[base + row * params.a_row_stride + column * params.a_column_stride]));
    }
    return 0.0;
}

fn load_b(base: u32, row: u32, column: u32, k: u32, n: u32) -> f32 {
    if (row < k && column < n) {
        return f32(load_value(matrix_b[base + row * params.b_row_stride + column * params.b_column_stride]));
    }
    return 0.0;
}

fn store_c(index: u32, inside: bool, value: f32) {
    if (inside) {
        matrix_c[index] = store_value(T(value));
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // Loader roles: A's block is 128 rows x 8 k (each invocation: one row, 4 k values);
    // B's block is 8 k x 128 columns (each invocation: one k row, 4 columns).
    let a_row = local / 2u;
    let a_k = (local % 2u) * 4u;
    let b_k = local / 32u;
    let b_column = (local % 32u) * 4u;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        let a_base = params.a_offset + b * params.a_batch_stride;
        let b_base = params.b_offset + b * params.b_batch_stride;
        var c00 = vec4<f32>(0.0);
        var c01 = vec4<f32>(0.0);
        var c10 = vec4<f32>(0.0);
        var c11 = vec4<f32>(0.0);
        var c20 = vec4<f32>(0.0);
        var c21 = vec4<f32>(0.0);
        var c30 = vec4<f32>(0.0);
        var c31 = vec4<f32>(0.0);
        var c40 = vec4<f32>(0.0);
        var c41 = vec4<f32>(0.0);
        var c50 = vec4<f32>(0.0);
        var c51 = vec4<f32>(0.0);
        var c60 = vec4<f32>(0.0);
        var c61 = vec4<f32>(0.0);
        var c70 = vec4<f32>(0.0);
        var c71 = vec4<f32>(0.0);
        for (var k0 = 0u; k0 < k; k0 = k0 + 8u) {
            tile_a[(a_k + 0u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + 0u, m, k);
            tile_a[(a_k + 1u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + 1u, m, k);
            tile_a[(a_k + 2u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + 2u, m, k);
            tile_a[(a_k + 3u) * 32u + a_row / 4u][a_row % 4u] = load_a(a_base, row0 + a_row, k0 + a_k + 3u, m, k);
            tile_b[b_k * 32u + local % 32u] = vec4<f32>(
                load_b(b_base, k0 + b_k, column0 + b_column, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 1u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 2u, k, n),
                load_b(b_base, k0 + b_k, column0 + b_column + 3u, k, n));
            workgroupBarrier();
            {
                let a_low = tile_a[0 + ty * 2u];
                let a_high = tile_a[0 + ty * 2u + 1u];
                let b_low = tile_b[0 + tx * 2u];
                let b_high = tile_b[0 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[32 + ty * 2u];
                let a_high = tile_a[32 + ty * 2u + 1u];
                let b_low = tile_b[32 + tx * 2u];
                let b_high = tile_b[32 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[64 + ty * 2u];
                let a_high = tile_a[64 + ty * 2u + 1u];
                let b_low = tile_b[64 + tx * 2u];
                let b_high = tile_b[64 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[96 + ty * 2u];
                let a_high = tile_a[96 + ty * 2u + 1u];
                let b_low = tile_b[96 + tx * 2u];
                let b_high = tile_b[96 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[128 + ty * 2u];
                let a_high = tile_a[128 + ty * 2u + 1u];
                let b_low = tile_b[128 + tx * 2u];
                let b_high = tile_b[128 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[160 + ty * 2u];
                let a_high = tile_a[160 + ty * 2u + 1u];
                let b_low = tile_b[160 + tx * 2u];
                let b_high = tile_b[160 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[192 + ty * 2u];
                let a_high = tile_a[192 + ty * 2u + 1u];
                let b_low = tile_b[192 + tx * 2u];
                let b_high = tile_b[192 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            {
                let a_low = tile_a[224 + ty * 2u];
                let a_high = tile_a[224 + ty * 2u + 1u];
                let b_low = tile_b[224 + tx * 2u];
                let b_high = tile_b[224 + tx * 2u + 1u];
                c00 = c00 + a_low.x * b_low;
                c01 = c01 + a_low.x * b_high;
                c10 = c10 + a_low.y * b_low;
                c11 = c11 + a_low.y * b_high;
                c20 = c20 + a_low.z * b_low;
                c21 = c21 + a_low.z * b_high;
                c30 = c30 + a_low.w * b_low;
                c31 = c31 + a_low.w * b_high;
                c40 = c40 + a_high.x * b_low;
                c41 = c41 + a_high.x * b_high;
                c50 = c50 + a_high.y * b_low;
                c51 = c51 + a_high.y * b_high;
                c60 = c60 + a_high.z * b_low;
                c61 = c61 + a_high.z * b_high;
                c70 = c70 + a_high.w * b_low;
                c71 = c71 + a_high.w * b_high;
            }
            workgroupBarrier();
        }
        let c_base = b * m * n;
        let column = column0 + tx * 8u;
        {
            let row = row0 + ty * 8u + 0u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c00.x);
            store_c(start + 1u, row < m && column + 1u < n, c00.y);
            store_c(start + 2u, row < m && column + 2u < n, c00.z);
            store_c(start + 3u, row < m && column + 3u < n, c00.w);
            store_c(start + 4u, row < m && column + 4u < n, c01.x);
            store_c(start + 5u, row < m && column + 5u < n, c01.y);
            store_c(start + 6u, row < m && column + 6u < n, c01.z);
            store_c(start + 7u, row < m && column + 7u < n, c01.w);
        }
        {
            let row = row0 + ty * 8u + 1u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c10.x);
            store_c(start + 1u, row < m && column + 1u < n, c10.y);
            store_c(start + 2u, row < m && column + 2u < n, c10.z);
            store_c(start + 3u, row < m && column + 3u < n, c10.w);
            store_c(start + 4u, row < m && column + 4u < n, c11.x);
            store_c(start + 5u, row < m && column + 5u < n, c11.y);
            store_c(start + 6u, row < m && column + 6u < n, c11.z);
            store_c(start + 7u, row < m && column + 7u < n, c11.w);
        }
        {
            let row = row0 + ty * 8u + 2u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c20.x);
            store_c(start + 1u, row < m && column + 1u < n, c20.y);
            store_c(start + 2u, row < m && column + 2u < n, c20.z);
            store_c(start + 3u, row < m && column + 3u < n, c20.w);
            store_c(start + 4u, row < m && column + 4u < n, c21.x);
            store_c(start + 5u, row < m && column + 5u < n, c21.y);
            store_c(start + 6u, row < m && column + 6u < n, c21.z);
            store_c(start + 7u, row < m && column + 7u < n, c21.w);
        }
        {
            let row = row0 + ty * 8u + 3u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c30.x);
            store_c(start + 1u, row < m && column + 1u < n, c30.y);
            store_c(start + 2u, row < m && column + 2u < n, c30.z);
            store_c(start + 3u, row < m && column + 3u < n, c30.w);
            store_c(start + 4u, row < m && column + 4u < n, c31.x);
            store_c(start + 5u, row < m && column + 5u < n, c31.y);
            store_c(start + 6u, row < m && column + 6u < n, c31.z);
            store_c(start + 7u, row < m && column + 7u < n, c31.w);
        }
        {
            let row = row0 + ty * 8u + 4u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c40.x);
            store_c(start + 1u, row < m && column + 1u < n, c40.y);
            store_c(start + 2u, row < m && column + 2u < n, c40.z);
            store_c(start + 3u, row < m && column + 3u < n, c40.w);
            store_c(start + 4u, row < m && column + 4u < n, c41.x);
            store_c(start + 5u, row < m && column + 5u < n, c41.y);
            store_c(start + 6u, row < m && column + 6u < n, c41.z);
            store_c(start + 7u, row < m && column + 7u < n, c41.w);
        }
        {
            let row = row0 + ty * 8u + 5u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c50.x);
            store_c(start + 1u, row < m && column + 1u < n, c50.y);
            store_c(start + 2u, row < m && column + 2u < n, c50.z);
            store_c(start + 3u, row < m && column + 3u < n, c50.w);
            store_c(start + 4u, row < m && column + 4u < n, c51.x);
            store_c(start + 5u, row < m && column + 5u < n, c51.y);
            store_c(start + 6u, row < m && column + 6u < n, c51.z);
            store_c(start + 7u, row < m && column + 7u < n, c51.w);
        }
        {
            let row = row0 + ty * 8u + 6u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c60.x);
            store_c(start + 1u, row < m && column + 1u < n, c60.y);
            store_c(start + 2u, row < m && column + 2u < n, c60.z);
            store_c(start + 3u, row < m && column + 3u < n, c60.w);
            store_c(start + 4u, row < m && column + 4u < n, c61.x);
            store_c(start + 5u, row < m && column + 5u < n, c61.y);
            store_c(start + 6u, row < m && column + 6u < n, c61.z);
            store_c(start + 7u, row < m && column + 7u < n, c61.w);
        }
        {
            let row = row0 + ty * 8u + 7u;
            let start = c_base + row * n + column;
            store_c(start + 0u, row < m && column + 0u < n, c70.x);
            store_c(start + 1u, row < m && column + 1u < n, c70.y);
            store_c(start + 2u, row < m && column + 2u < n, c70.z);
            store_c(start + 3u, row < m && column + 3u < n, c70.w);
            store_c(start + 4u, row < m && column + 4u < n, c71.x);
            store_c(start + 5u, row < m && column + 5u < n, c71.y);
            store_c(start + 6u, row < m && column + 6u < n, c71.z);
            store_c(start + 7u, row < m && column + 7u < n, c71.w);
        }
    }
}
