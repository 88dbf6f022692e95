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
@group(0) @binding(1) var<storage, read> matrix_a: array<vec4<S>>;
@group(0) @binding(2) var<storage, read> matrix_b: array<vec4<S>>;
@group(0) @binding(3) var<storage, read_write> matrix_c: array<vec4<S>>;

// Two copies (ping-pong) of [16 k][32 vec4]: A's block transposed (vectors along m) and
// B's block (vectors along n).
var<workgroup> tile_a: array<vec4<f32>, 1024>;
var<workgroup> tile_b: array<vec4<f32>, 1024>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let batch = params.batch;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    // Offsets and strides arrive in elements; the host (aligned_applies) made them, m, n and
    // k multiples of 4, so they convert to vec4 units exactly. Row strides: A its own (k or
    // more: a split-K slice of a wider A), B and C n / 4.
    let k4 = params.a_row_stride / 4u;
    let n4 = n / 4u;
    let steps = k / 16u;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let column0 = workgroup.x * 128u;
    // Loader roles: vec4 a_quad of row a_row of A's block (and of the rows
    // 64 further down), vec4 b_quad of k row b_k of B's block (and of the k
    // rows 8 further down).
    let a_row = local / 4u;
    let a_quad = local % 4u;
    let b_k = local / 32u;
    let b_quad = local % 32u;
    // Where they go: A's four k values to four k rows of its transposed block (component
    // a_row % 4 of vec4 a_row / 4 of each), B's vector as it is.
    let a_store = a_quad * 128u + a_row / 4u;
    let a_lane = a_row % 4u;
    let b_store = b_k * 32u + b_quad;
    for (var b = workgroup.z; b < batch; b = b + workgroups.z) {
        // This invocation's first vec4 of A and of B in k-block 0 of batch b.
        let a_start = (params.a_offset + b * params.a_batch_stride) / 4u + (row0 + a_row) * k4 + a_quad;
        let b_start = (params.b_offset + b * params.b_batch_stride) / 4u + b_k * n4 + column0 / 4u + b_quad;
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
        // k-block 0 into copy 0.
        var a0 = vec4<f32>(matrix_a[a_start + 0u * k4]);
        var a1 = vec4<f32>(matrix_a[a_start + 64u * k4]);
        var b0 = vec4<f32>(matrix_b[b_start + 0u * n4]);
        var b1 = vec4<f32>(matrix_b[b_start + 8u * n4]);
        tile_a[0u + a_store + 0u][a_lane] = a0.x;
        tile_a[0u + a_store + 32u][a_lane] = a0.y;
        tile_a[0u + a_store + 64u][a_lane] = a0.z;
        tile_a[0u + a_store + 96u][a_lane] = a0.w;
        tile_b[0u + b_store + 0u] = b0;
        tile_a[0u + a_store + 16u][a_lane] = a1.x;
        tile_a[0u + a_store + 48u][a_lane] = a1.y;
        tile_a[0u + a_store + 80u][a_lane] = a1.z;
        tile_a[0u + a_store + 112u][a_lane] = a1.w;
        tile_b[0u + b_store + 256u] = b1;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = (step % 2u) * 512u;
            let next = 512u - current;
            let more = step + 1u < steps;
            if (more) {
                let a_next = a_start + (step + 1u) * 4u;
                let b_next = b_start + (step + 1u) * 16u * n4;
                a0 = vec4<f32>(matrix_a[a_next + 0u * k4]);
                a1 = vec4<f32>(matrix_a[a_next + 64u * k4]);
                b0 = vec4<f32>(matrix_b[b_next + 0u * n4]);
                b1 = vec4<f32>(matrix_b[b_next + 8u * n4]);
            }
            {
                let a_low = tile_a[current + 0u + ty];
                let a_high = tile_a[current + 16u + ty];
                let b_low = tile_b[current + 0u + tx];
                let b_high = tile_b[current + 16u + tx];
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
                let a_low = tile_a[current + 32u + ty];
                let a_high = tile_a[current + 48u + ty];
                let b_low = tile_b[current + 32u + tx];
                let b_high = tile_b[current + 48u + tx];
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
                let a_low = tile_a[current + 64u + ty];
                let a_high = tile_a[current + 80u + ty];
                let b_low = tile_b[current + 64u + tx];
                let b_high = tile_b[current + 80u + tx];
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
                let a_low = tile_a[current + 96u + ty];
                let a_high = tile_a[current + 112u + ty];
                let b_low = tile_b[current + 96u + tx];
                let b_high = tile_b[current + 112u + tx];
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
                let a_low = tile_a[current + 128u + ty];
                let a_high = tile_a[current + 144u + ty];
                let b_low = tile_b[current + 128u + tx];
                let b_high = tile_b[current + 144u + tx];
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
                let a_low = tile_a[current + 160u + ty];
                let a_high = tile_a[current + 176u + ty];
                let b_low = tile_b[current + 160u + tx];
                let b_high = tile_b[current + 176u + tx];
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
                let a_low = tile_a[current + 192u + ty];
                let a_high = tile_a[current + 208u + ty];
                let b_low = tile_b[current + 192u + tx];
                let b_high = tile_b[current + 208u + tx];
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
                let a_low = tile_a[current + 224u + ty];
                let a_high = tile_a[current + 240u + ty];
                let b_low = tile_b[current + 224u + tx];
                let b_high = tile_b[current + 240u + tx];
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
                let a_low = tile_a[current + 256u + ty];
                let a_high = tile_a[current + 272u + ty];
                let b_low = tile_b[current + 256u + tx];
                let b_high = tile_b[current + 272u + tx];
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
                let a_low = tile_a[current + 288u + ty];
                let a_high = tile_a[current + 304u + ty];
                let b_low = tile_b[current + 288u + tx];
                let b_high = tile_b[current + 304u + tx];
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
                let a_low = tile_a[current + 320u + ty];
                let a_high = tile_a[current + 336u + ty];
                let b_low = tile_b[current + 320u + tx];
                let b_high = tile_b[current + 336u + tx];
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
                let a_low = tile_a[current + 352u + ty];
                let a_high = tile_a[current + 368u + ty];
                let b_low = tile_b[current + 352u + tx];
                let b_high = tile_b[current + 368u + tx];
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
                let a_low = tile_a[current + 384u + ty];
                let a_high = tile_a[current + 400u + ty];
                let b_low = tile_b[current + 384u + tx];
                let b_high = tile_b[current + 400u + tx];
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
                let a_low = tile_a[current + 416u + ty];
                let a_high = tile_a[current + 432u + ty];
                let b_low = tile_b[current + 416u + tx];
                let b_high = tile_b[current + 432u + tx];
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
                let a_low = tile_a[current + 448u + ty];
                let a_high = tile_a[current + 464u + ty];
                let b_low = tile_b[current + 448u + tx];
                let b_high = tile_b[current + 464u + tx];
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
                let a_low = tile_a[current + 480u + ty];
                let a_high = tile_a[current + 496u + ty];
                let b_low = tile_b[current + 480u + tx];
                let b_high = tile_b[current + 496u + tx];
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
            if (more) {
                tile_a[next + a_store + 0u][a_lane] = a0.x;
                tile_a[next + a_store + 32u][a_lane] = a0.y;
                tile_a[next + a_store + 64u][a_lane] = a0.z;
                tile_a[next + a_store + 96u][a_lane] = a0.w;
                tile_b[next + b_store + 0u] = b0;
                tile_a[next + a_store + 16u][a_lane] = a1.x;
                tile_a[next + a_store + 48u][a_lane] = a1.y;
                tile_a[next + a_store + 80u][a_lane] = a1.z;
                tile_a[next + a_store + 112u][a_lane] = a1.w;
                tile_b[next + b_store + 256u] = b1;
            }
            workgroupBarrier();
        }
        // Rows ty * 4 + i and 64 + ty * 4 + i; columns tx * 4 and 64 + tx * 4 (vec4 + 16).
        let c_low = (b * m + row0 + ty * 4u) * n4 + column0 / 4u + tx;
        let c_high = c_low + 64u * n4;
        matrix_c[c_low + 0u * n4] = vec4<S>(c00);
        matrix_c[c_low + 0u * n4 + 16u] = vec4<S>(c01);
        matrix_c[c_low + 1u * n4] = vec4<S>(c10);
        matrix_c[c_low + 1u * n4 + 16u] = vec4<S>(c11);
        matrix_c[c_low + 2u * n4] = vec4<S>(c20);
        matrix_c[c_low + 2u * n4 + 16u] = vec4<S>(c21);
        matrix_c[c_low + 3u * n4] = vec4<S>(c30);
        matrix_c[c_low + 3u * n4 + 16u] = vec4<S>(c31);
        matrix_c[c_high + 0u * n4] = vec4<S>(c40);
        matrix_c[c_high + 0u * n4 + 16u] = vec4<S>(c41);
        matrix_c[c_high + 1u * n4] = vec4<S>(c50);
        matrix_c[c_high + 1u * n4 + 16u] = vec4<S>(c51);
        matrix_c[c_high + 2u * n4] = vec4<S>(c60);
        matrix_c[c_high + 2u * n4 + 16u] = vec4<S>(c61);
        matrix_c[c_high + 3u * n4] = vec4<S>(c70);
        matrix_c[c_high + 3u * n4 + 16u] = vec4<S>(c71);
    }
}
