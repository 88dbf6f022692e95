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
struct ConvParams {
    columns: u32,
    rows: u32,
    depth: u32,
    channels: u32,
    height: u32,
    width: u32,
    out_height: u32,
    out_width: u32,
    kernel_height: u32,
    kernel_width: u32,
    stride_height: u32,
    stride_width: u32,
    pad_height: u32,
    pad_width: u32,
    dilation_height: u32,
    dilation_width: u32,
    b_offset: u32,
    b_stride_n: u32,
    b_stride_c: u32,
    b_stride_h: u32,
    b_stride_w: u32,
    a_offset: u32,
    a_stride_n: u32,
    a_stride_c: u32,
    a_stride_h: u32,
    a_stride_w: u32,
    k_chunk: u32,
}
@group(0) @binding(0) var<storage, read> params: ConvParams;
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
@group(0) @binding(1) var<storage, read> conv_input: array<S>;
@group(0) @binding(2) var<storage, read> conv_grad: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<f32>;
// Two copies (ping-pong) of [16 k][33 vec4]: A's block transposed (vectors along the
// rows), and of [16 k][33 vec4]: B's block (vectors along the columns); the last
// vec4 of each row is padding.
var<workgroup> tile_a: array<vec4<f32>, 1056>;
var<workgroup> tile_b: array<vec4<f32>, 1056>;
fn load_input(index: u32, inside: bool) -> f32 {
    if (inside) {
        return f32(load_value(conv_input[index]));
    }
    return 0.0;
}
fn load_grad(index: u32, inside: bool) -> f32 {
    if (inside) {
        return f32(load_value(conv_grad[index]));
    }
    return 0.0;
}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let columns = params.columns;
    let m = params.rows;
    let k = params.depth;
    let height = params.height;
    let width = params.width;
    let oh = params.out_height;
    let ow = params.out_width;
    let kh = params.kernel_height;
    let kw = params.kernel_width;
    let taps = kh * kw;
    let stride_h = params.stride_height;
    let stride_w = params.stride_width;
    let pad_h = params.pad_height;
    let pad_w = params.pad_width;
    let dilation_h = params.dilation_height;
    let dilation_w = params.dilation_width;
    let tx = local % 16u;
    let ty = local / 16u;
    let row0 = workgroup.y * 128u;
    let tiles = (columns + 127u) / 128u;
    // Where this invocation's loaded vectors go in a copy: A's rows at k0 + tx (transposed),
    // B's columns at k0 + ty.
    let a_store = tx * 33u + ty;
    let b_store = tx * 33u + ty;
    let x_offset = params.b_offset;
    let x_n = params.b_stride_n;
    let x_c = params.b_stride_c;
    let x_h = params.b_stride_h;
    let x_w = params.b_stride_w;
    let g_n = params.a_stride_n;
    let g_c = params.a_stride_c;
    let g_h = params.a_stride_h;
    let g_w = params.a_stride_w;
    let k_chunk = params.k_chunk;
    let plane = oh * ow;
    // This split's k-range.
    let k_first = workgroup.z * k_chunk;
    let k_end = min(k_first + k_chunk, k);
    let steps = select(0u, (k_end - k_first + 15u) / 16u, k_end > k_first);
    let out_base = workgroup.z * m * columns;
    // Loader roles: both at k0 + tx (consecutive invocations read consecutive pixels). A: rows
    // row0 + 64 * group + ty * 4 + 0..4; B: columns ty * 4 + 0..4 and 64 + ty * 4 + 0..4.
    let a_rows = params.a_offset + (row0 + ty * 4u) * g_c;
    let a_ok0 = row0 + ty * 4u + 0u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    let a_ok4 = row0 + ty * 4u + 64u < m;
    let a_ok5 = row0 + ty * 4u + 65u < m;
    let a_ok6 = row0 + ty * 4u + 66u < m;
    let a_ok7 = row0 + ty * 4u + 67u < m;
    // The pixel walk: this invocation's k = k_first + tx + 16 * step as (image, oi, oj).
    let row_x = stride_h * x_h;
    let column_x = stride_w * x_w;
    let pad_x = pad_h * x_h + pad_w * x_w;
    let walk_k0 = k_first + tx;
    let walk_image0 = walk_k0 / plane;
    let walk_pixel0 = walk_k0 - walk_image0 * plane;
    let walk_oi0 = walk_pixel0 / ow;
    let walk_oj0 = walk_pixel0 - walk_oi0 * ow;
    let walk_x0 = x_offset + walk_image0 * x_n + walk_oi0 * row_x + walk_oj0 * column_x - pad_x;
    let walk_g0 = a_rows + walk_image0 * g_n + walk_oi0 * g_h + walk_oj0 * g_w;
    // One advance by 16 pixels, and the corrections when oj resp. oi wraps around.
    let pstep_image = 16u / plane;
    let pstep_pixel = 16u - pstep_image * plane;
    let pstep_oi = pstep_pixel / ow;
    let pstep_oj = pstep_pixel - pstep_oi * ow;
    let pstep_x = pstep_image * x_n + pstep_oi * row_x + pstep_oj * column_x;
    let pstep_g = pstep_image * g_n + pstep_oi * g_h + pstep_oj * g_w;
    let wrap_oj_x = row_x - ow * column_x;
    let wrap_oi_x = x_n - oh * row_x;
    let wrap_oj_g = g_h - ow * g_w;
    let wrap_oi_g = g_n - oh * g_h;
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {
        let column0 = tile * 128u;
        let lc0 = column0 + ty * 4u + 0u;
        let lok0 = lc0 < columns;
        let ci0 = lc0 / taps;
        let tap0 = lc0 - ci0 * taps;
        let ki0 = tap0 / kw;
        let kj0 = tap0 - ki0 * kw;
        let dh0 = i32(ki0 * dilation_h);
        let dw0 = i32(kj0 * dilation_w);
        let off0 = ci0 * x_c + ki0 * dilation_h * x_h + kj0 * dilation_w * x_w;
        let lc1 = column0 + ty * 4u + 1u;
        let lok1 = lc1 < columns;
        let ci1 = lc1 / taps;
        let tap1 = lc1 - ci1 * taps;
        let ki1 = tap1 / kw;
        let kj1 = tap1 - ki1 * kw;
        let dh1 = i32(ki1 * dilation_h);
        let dw1 = i32(kj1 * dilation_w);
        let off1 = ci1 * x_c + ki1 * dilation_h * x_h + kj1 * dilation_w * x_w;
        let lc2 = column0 + ty * 4u + 2u;
        let lok2 = lc2 < columns;
        let ci2 = lc2 / taps;
        let tap2 = lc2 - ci2 * taps;
        let ki2 = tap2 / kw;
        let kj2 = tap2 - ki2 * kw;
        let dh2 = i32(ki2 * dilation_h);
        let dw2 = i32(kj2 * dilation_w);
        let off2 = ci2 * x_c + ki2 * dilation_h * x_h + kj2 * dilation_w * x_w;
        let lc3 = column0 + ty * 4u + 3u;
        let lok3 = lc3 < columns;
        let ci3 = lc3 / taps;
        let tap3 = lc3 - ci3 * taps;
        let ki3 = tap3 / kw;
        let kj3 = tap3 - ki3 * kw;
        let dh3 = i32(ki3 * dilation_h);
        let dw3 = i32(kj3 * dilation_w);
        let off3 = ci3 * x_c + ki3 * dilation_h * x_h + kj3 * dilation_w * x_w;
        let lc4 = column0 + ty * 4u + 64u;
        let lok4 = lc4 < columns;
        let ci4 = lc4 / taps;
        let tap4 = lc4 - ci4 * taps;
        let ki4 = tap4 / kw;
        let kj4 = tap4 - ki4 * kw;
        let dh4 = i32(ki4 * dilation_h);
        let dw4 = i32(kj4 * dilation_w);
        let off4 = ci4 * x_c + ki4 * dilation_h * x_h + kj4 * dilation_w * x_w;
        let lc5 = column0 + ty * 4u + 65u;
        let lok5 = lc5 < columns;
        let ci5 = lc5 / taps;
        let tap5 = lc5 - ci5 * taps;
        let ki5 = tap5 / kw;
        let kj5 = tap5 - ki5 * kw;
        let dh5 = i32(ki5 * dilation_h);
        let dw5 = i32(kj5 * dilation_w);
        let off5 = ci5 * x_c + ki5 * dilation_h * x_h + kj5 * dilation_w * x_w;
        let lc6 = column0 + ty * 4u + 66u;
        let lok6 = lc6 < columns;
        let ci6 = lc6 / taps;
        let tap6 = lc6 - ci6 * taps;
        let ki6 = tap6 / kw;
        let kj6 = tap6 - ki6 * kw;
        let dh6 = i32(ki6 * dilation_h);
        let dw6 = i32(kj6 * dilation_w);
        let off6 = ci6 * x_c + ki6 * dilation_h * x_h + kj6 * dilation_w * x_w;
        let lc7 = column0 + ty * 4u + 67u;
        let lok7 = lc7 < columns;
        let ci7 = lc7 / taps;
        let tap7 = lc7 - ci7 * taps;
        let ki7 = tap7 / kw;
        let kj7 = tap7 - ki7 * kw;
        let dh7 = i32(ki7 * dilation_h);
        let dw7 = i32(kj7 * dilation_w);
        let off7 = ci7 * x_c + ki7 * dilation_h * x_h + kj7 * dilation_w * x_w;
        var walk_k = k_first + tx;
        var walk_oi = walk_oi0;
        var walk_oj = walk_oj0;
        var walk_x = walk_x0;
        var walk_g = walk_g0;
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
        // A column tile whose second half lies past N multiplies out its first half only.
        if (column0 + 64u < columns) {
        // Registers of the block in flight.
        var pa0: vec4<f32>;
        var pa1: vec4<f32>;
        var pb0: vec4<f32>;
        var pb1: vec4<f32>;
        {
            let k_ok = walk_k < k_end;
            let oi = walk_oi;
            let oj = walk_oj;
            let corner = walk_x;
            let g_at = walk_g;
            let ih = i32(oi * stride_h) - i32(pad_h);
            let iw = i32(oj * stride_w) - i32(pad_w);
            let v0 = load_input(corner + off0, k_ok && lok0 && bitcast<u32>(ih + dh0) < height && bitcast<u32>(iw + dw0) < width);
            let v1 = load_input(corner + off1, k_ok && lok1 && bitcast<u32>(ih + dh1) < height && bitcast<u32>(iw + dw1) < width);
            let v2 = load_input(corner + off2, k_ok && lok2 && bitcast<u32>(ih + dh2) < height && bitcast<u32>(iw + dw2) < width);
            let v3 = load_input(corner + off3, k_ok && lok3 && bitcast<u32>(ih + dh3) < height && bitcast<u32>(iw + dw3) < width);
            let v4 = load_input(corner + off4, k_ok && lok4 && bitcast<u32>(ih + dh4) < height && bitcast<u32>(iw + dw4) < width);
            let v5 = load_input(corner + off5, k_ok && lok5 && bitcast<u32>(ih + dh5) < height && bitcast<u32>(iw + dw5) < width);
            let v6 = load_input(corner + off6, k_ok && lok6 && bitcast<u32>(ih + dh6) < height && bitcast<u32>(iw + dw6) < width);
            let v7 = load_input(corner + off7, k_ok && lok7 && bitcast<u32>(ih + dh7) < height && bitcast<u32>(iw + dw7) < width);
            pb0 = vec4<f32>(v0, v1, v2, v3);
            pb1 = vec4<f32>(v4, v5, v6, v7);
            pa0 = vec4<f32>(
                load_grad(g_at, a_ok0 && k_ok),
                load_grad(g_at + g_c, a_ok1 && k_ok),
                load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
                load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
            pa1 = vec4<f32>(
                load_grad(g_at + 64u * g_c, a_ok4 && k_ok),
                load_grad(g_at + 65u * g_c, a_ok5 && k_ok),
                load_grad(g_at + 66u * g_c, a_ok6 && k_ok),
                load_grad(g_at + 67u * g_c, a_ok7 && k_ok));
        }
        {
            walk_k = walk_k + 16u;
            let oj_sum = walk_oj + pstep_oj;
            let carry_j = oj_sum >= ow;
            walk_oj = select(oj_sum, oj_sum - ow, carry_j);
            let oi_sum = walk_oi + pstep_oi + select(0u, 1u, carry_j);
            let carry_i = oi_sum >= oh;
            walk_oi = select(oi_sum, oi_sum - oh, carry_i);
            walk_x = walk_x + pstep_x + select(0u, wrap_oj_x, carry_j) + select(0u, wrap_oi_x, carry_i);
            walk_g = walk_g + pstep_g + select(0u, wrap_oj_g, carry_j) + select(0u, wrap_oi_g, carry_i);
        }
        tile_a[0u + a_store + 0u] = pa0;
        tile_a[0u + a_store + 16u] = pa1;
        tile_b[0u + b_store] = pb0;
        tile_b[0u + b_store + 16u] = pb1;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * 528u;
            let b_current = current * 528u;
            let more = step + 1u < steps;
            if (more) {
                let k_next = k_first + (step + 1u) * 16u;
                {
                    let k_ok = walk_k < k_end;
                    let oi = walk_oi;
                    let oj = walk_oj;
                    let corner = walk_x;
                    let g_at = walk_g;
                    let ih = i32(oi * stride_h) - i32(pad_h);
                    let iw = i32(oj * stride_w) - i32(pad_w);
                    let v0 = load_input(corner + off0, k_ok && lok0 && bitcast<u32>(ih + dh0) < height && bitcast<u32>(iw + dw0) < width);
                    let v1 = load_input(corner + off1, k_ok && lok1 && bitcast<u32>(ih + dh1) < height && bitcast<u32>(iw + dw1) < width);
                    let v2 = load_input(corner + off2, k_ok && lok2 && bitcast<u32>(ih + dh2) < height && bitcast<u32>(iw + dw2) < width);
                    let v3 = load_input(corner + off3, k_ok && lok3 && bitcast<u32>(ih + dh3) < height && bitcast<u32>(iw + dw3) < width);
                    let v4 = load_input(corner + off4, k_ok && lok4 && bitcast<u32>(ih + dh4) < height && bitcast<u32>(iw + dw4) < width);
                    let v5 = load_input(corner + off5, k_ok && lok5 && bitcast<u32>(ih + dh5) < height && bitcast<u32>(iw + dw5) < width);
                    let v6 = load_input(corner + off6, k_ok && lok6 && bitcast<u32>(ih + dh6) < height && bitcast<u32>(iw + dw6) < width);
                    let v7 = load_input(corner + off7, k_ok && lok7 && bitcast<u32>(ih + dh7) < height && bitcast<u32>(iw + dw7) < width);
                    pb0 = vec4<f32>(v0, v1, v2, v3);
                    pb1 = vec4<f32>(v4, v5, v6, v7);
                    pa0 = vec4<f32>(
                        load_grad(g_at, a_ok0 && k_ok),
                        load_grad(g_at + g_c, a_ok1 && k_ok),
                        load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
                        load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
                    pa1 = vec4<f32>(
                        load_grad(g_at + 64u * g_c, a_ok4 && k_ok),
                        load_grad(g_at + 65u * g_c, a_ok5 && k_ok),
                        load_grad(g_at + 66u * g_c, a_ok6 && k_ok),
                        load_grad(g_at + 67u * g_c, a_ok7 && k_ok));
                }
                {
                    walk_k = walk_k + 16u;
                    let oj_sum = walk_oj + pstep_oj;
                    let carry_j = oj_sum >= ow;
                    walk_oj = select(oj_sum, oj_sum - ow, carry_j);
                    let oi_sum = walk_oi + pstep_oi + select(0u, 1u, carry_j);
                    let carry_i = oi_sum >= oh;
                    walk_oi = select(oi_sum, oi_sum - oh, carry_i);
                    walk_x = walk_x + pstep_x + select(0u, wrap_oj_x, carry_j) + select(0u, wrap_oi_x, carry_i);
                    walk_g = walk_g + pstep_g + select(0u, wrap_oj_g, carry_j) + select(0u, wrap_oi_g, carry_i);
                }
            }
            {
                let a0 = tile_a[a_current + 0u + ty];
                let a1 = tile_a[a_current + 16u + ty];
                let b_low = tile_b[b_current + 0u + tx];
                let b_high = tile_b[b_current + 0u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 33u + ty];
                let a1 = tile_a[a_current + 49u + ty];
                let b_low = tile_b[b_current + 33u + tx];
                let b_high = tile_b[b_current + 33u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 66u + ty];
                let a1 = tile_a[a_current + 82u + ty];
                let b_low = tile_b[b_current + 66u + tx];
                let b_high = tile_b[b_current + 66u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 99u + ty];
                let a1 = tile_a[a_current + 115u + ty];
                let b_low = tile_b[b_current + 99u + tx];
                let b_high = tile_b[b_current + 99u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 132u + ty];
                let a1 = tile_a[a_current + 148u + ty];
                let b_low = tile_b[b_current + 132u + tx];
                let b_high = tile_b[b_current + 132u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 165u + ty];
                let a1 = tile_a[a_current + 181u + ty];
                let b_low = tile_b[b_current + 165u + tx];
                let b_high = tile_b[b_current + 165u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 198u + ty];
                let a1 = tile_a[a_current + 214u + ty];
                let b_low = tile_b[b_current + 198u + tx];
                let b_high = tile_b[b_current + 198u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 231u + ty];
                let a1 = tile_a[a_current + 247u + ty];
                let b_low = tile_b[b_current + 231u + tx];
                let b_high = tile_b[b_current + 231u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 264u + ty];
                let a1 = tile_a[a_current + 280u + ty];
                let b_low = tile_b[b_current + 264u + tx];
                let b_high = tile_b[b_current + 264u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 297u + ty];
                let a1 = tile_a[a_current + 313u + ty];
                let b_low = tile_b[b_current + 297u + tx];
                let b_high = tile_b[b_current + 297u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 330u + ty];
                let a1 = tile_a[a_current + 346u + ty];
                let b_low = tile_b[b_current + 330u + tx];
                let b_high = tile_b[b_current + 330u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 363u + ty];
                let a1 = tile_a[a_current + 379u + ty];
                let b_low = tile_b[b_current + 363u + tx];
                let b_high = tile_b[b_current + 363u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 396u + ty];
                let a1 = tile_a[a_current + 412u + ty];
                let b_low = tile_b[b_current + 396u + tx];
                let b_high = tile_b[b_current + 396u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 429u + ty];
                let a1 = tile_a[a_current + 445u + ty];
                let b_low = tile_b[b_current + 429u + tx];
                let b_high = tile_b[b_current + 429u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 462u + ty];
                let a1 = tile_a[a_current + 478u + ty];
                let b_low = tile_b[b_current + 462u + tx];
                let b_high = tile_b[b_current + 462u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            {
                let a0 = tile_a[a_current + 495u + ty];
                let a1 = tile_a[a_current + 511u + ty];
                let b_low = tile_b[b_current + 495u + tx];
                let b_high = tile_b[b_current + 495u + 16u + tx];
                c00 = c00 + a0.x * b_low;
                c01 = c01 + a0.x * b_high;
                c10 = c10 + a0.y * b_low;
                c11 = c11 + a0.y * b_high;
                c20 = c20 + a0.z * b_low;
                c21 = c21 + a0.z * b_high;
                c30 = c30 + a0.w * b_low;
                c31 = c31 + a0.w * b_high;
                c40 = c40 + a1.x * b_low;
                c41 = c41 + a1.x * b_high;
                c50 = c50 + a1.y * b_low;
                c51 = c51 + a1.y * b_high;
                c60 = c60 + a1.z * b_low;
                c61 = c61 + a1.z * b_high;
                c70 = c70 + a1.w * b_low;
                c71 = c71 + a1.w * b_high;
            }
            if (more) {
                tile_a[528u - a_current + a_store + 0u] = pa0;
                tile_a[528u - a_current + a_store + 16u] = pa1;
                tile_b[528u - b_current + b_store] = pb0;
                tile_b[528u - b_current + b_store + 16u] = pb1;
            }
            workgroupBarrier();
        }
        } else {
        // Registers of the block in flight.
        var pa0: vec4<f32>;
        var pa1: vec4<f32>;
        var pb0: vec4<f32>;
        var pb1: vec4<f32>;
        {
            let k_ok = walk_k < k_end;
            let oi = walk_oi;
            let oj = walk_oj;
            let corner = walk_x;
            let g_at = walk_g;
            let ih = i32(oi * stride_h) - i32(pad_h);
            let iw = i32(oj * stride_w) - i32(pad_w);
            let v0 = load_input(corner + off0, k_ok && lok0 && bitcast<u32>(ih + dh0) < height && bitcast<u32>(iw + dw0) < width);
            let v1 = load_input(corner + off1, k_ok && lok1 && bitcast<u32>(ih + dh1) < height && bitcast<u32>(iw + dw1) < width);
            let v2 = load_input(corner + off2, k_ok && lok2 && bitcast<u32>(ih + dh2) < height && bitcast<u32>(iw + dw2) < width);
            let v3 = load_input(corner + off3, k_ok && lok3 && bitcast<u32>(ih + dh3) < height && bitcast<u32>(iw + dw3) < width);
            let v4 = load_input(corner + off4, k_ok && lok4 && bitcast<u32>(ih + dh4) < height && bitcast<u32>(iw + dw4) < width);
            let v5 = load_input(corner + off5, k_ok && lok5 && bitcast<u32>(ih + dh5) < height && bitcast<u32>(iw + dw5) < width);
            let v6 = load_input(corner + off6, k_ok && lok6 && bitcast<u32>(ih + dh6) < height && bitcast<u32>(iw + dw6) < width);
            let v7 = load_input(corner + off7, k_ok && lok7 && bitcast<u32>(ih + dh7) < height && bitcast<u32>(iw + dw7) < width);
            pb0 = vec4<f32>(v0, v1, v2, v3);
            pb1 = vec4<f32>(v4, v5, v6, v7);
            pa0 = vec4<f32>(
                load_grad(g_at, a_ok0 && k_ok),
                load_grad(g_at + g_c, a_ok1 && k_ok),
                load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
                load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
            pa1 = vec4<f32>(
                load_grad(g_at + 64u * g_c, a_ok4 && k_ok),
                load_grad(g_at + 65u * g_c, a_ok5 && k_ok),
                load_grad(g_at + 66u * g_c, a_ok6 && k_ok),
                load_grad(g_at + 67u * g_c, a_ok7 && k_ok));
        }
        {
            walk_k = walk_k + 16u;
            let oj_sum = walk_oj + pstep_oj;
            let carry_j = oj_sum >= ow;
            walk_oj = select(oj_sum, oj_sum - ow, carry_j);
            let oi_sum = walk_oi + pstep_oi + select(0u, 1u, carry_j);
            let carry_i = oi_sum >= oh;
            walk_oi = select(oi_sum, oi_sum - oh, carry_i);
            walk_x = walk_x + pstep_x + select(0u, wrap_oj_x, carry_j) + select(0u, wrap_oi_x, carry_i);
            walk_g = walk_g + pstep_g + select(0u, wrap_oj_g, carry_j) + select(0u, wrap_oi_g, carry_i);
        }
        tile_a[0u + a_store + 0u] = pa0;
        tile_a[0u + a_store + 16u] = pa1;
        tile_b[0u + b_store] = pb0;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * 528u;
            let b_current = current * 528u;
            let more = step + 1u < steps;
            if (more) {
                let k_next = k_first + (step + 1u) * 16u;
                {
                    let k_ok = walk_k < k_end;
                    let oi = walk_oi;
                    let oj = walk_oj;
                    let corner = walk_x;
                    let g_at = walk_g;
                    let ih = i32(oi * stride_h) - i32(pad_h);
                    let iw = i32(oj * stride_w) - i32(pad_w);
                    let v0 = load_input(corner + off0, k_ok && lok0 && bitcast<u32>(ih + dh0) < height && bitcast<u32>(iw + dw0) < width);
                    let v1 = load_input(corner + off1, k_ok && lok1 && bitcast<u32>(ih + dh1) < height && bitcast<u32>(iw + dw1) < width);
                    let v2 = load_input(corner + off2, k_ok && lok2 && bitcast<u32>(ih + dh2) < height && bitcast<u32>(iw + dw2) < width);
                    let v3 = load_input(corner + off3, k_ok && lok3 && bitcast<u32>(ih + dh3) < height && bitcast<u32>(iw + dw3) < width);
                    let v4 = load_input(corner + off4, k_ok && lok4 && bitcast<u32>(ih + dh4) < height && bitcast<u32>(iw + dw4) < width);
                    let v5 = load_input(corner + off5, k_ok && lok5 && bitcast<u32>(ih + dh5) < height && bitcast<u32>(iw + dw5) < width);
                    let v6 = load_input(corner + off6, k_ok && lok6 && bitcast<u32>(ih + dh6) < height && bitcast<u32>(iw + dw6) < width);
                    let v7 = load_input(corner + off7, k_ok && lok7 && bitcast<u32>(ih + dh7) < height && bitcast<u32>(iw + dw7) < width);
                    pb0 = vec4<f32>(v0, v1, v2, v3);
                    pb1 = vec4<f32>(v4, v5, v6, v7);
                    pa0 = vec4<f32>(
                        load_grad(g_at, a_ok0 && k_ok),
                        load_grad(g_at + g_c, a_ok1 && k_ok),
                        load_grad(g_at + 2u * g_c, a_ok2 && k_ok),
                        load_grad(g_at + 3u * g_c, a_ok3 && k_ok));
                    pa1 = vec4<f32>(
                        load_grad(g_at + 64u * g_c, a_ok4 && k_ok),
                        load_grad(g_at + 65u * g_c, a_ok5 && k_ok),
                        load_grad(g_at + 66u * g_c, a_ok6 && k_ok),
                        load_grad(g_at + 67u * g_c, a_ok7 && k_ok));
                }
                {
                    walk_k = walk_k + 16u;
                    let oj_sum = walk_oj + pstep_oj;
                    let carry_j = oj_sum >= ow;
                    walk_oj = select(oj_sum, oj_sum - ow, carry_j);
                    let oi_sum = walk_oi + pstep_oi + select(0u, 1u, carry_j);
                    let carry_i = oi_sum >= oh;
                    walk_oi = select(oi_sum, oi_sum - oh, carry_i);
                    walk_x = walk_x + pstep_x + select(0u, wrap_oj_x, carry_j) + select(0u, wrap_oi_x, carry_i);
                    walk_g = walk_g + pstep_g + select(0u, wrap_oj_g, carry_j) + select(0u, wrap_oi_g, carry_i);
                }
            }
            {
                let a0 = tile_a[a_current + 0u + ty];
                let a1 = tile_a[a_current + 16u + ty];
                let b_low = tile_b[b_current + 0u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 33u + ty];
                let a1 = tile_a[a_current + 49u + ty];
                let b_low = tile_b[b_current + 33u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 66u + ty];
                let a1 = tile_a[a_current + 82u + ty];
                let b_low = tile_b[b_current + 66u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 99u + ty];
                let a1 = tile_a[a_current + 115u + ty];
                let b_low = tile_b[b_current + 99u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 132u + ty];
                let a1 = tile_a[a_current + 148u + ty];
                let b_low = tile_b[b_current + 132u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 165u + ty];
                let a1 = tile_a[a_current + 181u + ty];
                let b_low = tile_b[b_current + 165u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 198u + ty];
                let a1 = tile_a[a_current + 214u + ty];
                let b_low = tile_b[b_current + 198u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 231u + ty];
                let a1 = tile_a[a_current + 247u + ty];
                let b_low = tile_b[b_current + 231u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 264u + ty];
                let a1 = tile_a[a_current + 280u + ty];
                let b_low = tile_b[b_current + 264u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 297u + ty];
                let a1 = tile_a[a_current + 313u + ty];
                let b_low = tile_b[b_current + 297u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 330u + ty];
                let a1 = tile_a[a_current + 346u + ty];
                let b_low = tile_b[b_current + 330u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 363u + ty];
                let a1 = tile_a[a_current + 379u + ty];
                let b_low = tile_b[b_current + 363u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 396u + ty];
                let a1 = tile_a[a_current + 412u + ty];
                let b_low = tile_b[b_current + 396u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 429u + ty];
                let a1 = tile_a[a_current + 445u + ty];
                let b_low = tile_b[b_current + 429u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 462u + ty];
                let a1 = tile_a[a_current + 478u + ty];
                let b_low = tile_b[b_current + 462u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            {
                let a0 = tile_a[a_current + 495u + ty];
                let a1 = tile_a[a_current + 511u + ty];
                let b_low = tile_b[b_current + 495u + tx];
                c00 = c00 + a0.x * b_low;
                c10 = c10 + a0.y * b_low;
                c20 = c20 + a0.z * b_low;
                c30 = c30 + a0.w * b_low;
                c40 = c40 + a1.x * b_low;
                c50 = c50 + a1.y * b_low;
                c60 = c60 + a1.z * b_low;
                c70 = c70 + a1.w * b_low;
            }
            if (more) {
                tile_a[528u - a_current + a_store + 0u] = pa0;
                tile_a[528u - a_current + a_store + 16u] = pa1;
                tile_b[528u - b_current + b_store] = pb0;
            }
            workgroupBarrier();
        }
        }
        let oc0 = column0 + tx * 4u + 0u;
        let inside0 = oc0 < columns;
        let oc1 = column0 + tx * 4u + 1u;
        let inside1 = oc1 < columns;
        let oc2 = column0 + tx * 4u + 2u;
        let inside2 = oc2 < columns;
        let oc3 = column0 + tx * 4u + 3u;
        let inside3 = oc3 < columns;
        let oc4 = column0 + tx * 4u + 64u;
        let inside4 = oc4 < columns;
        let oc5 = column0 + tx * 4u + 65u;
        let inside5 = oc5 < columns;
        let oc6 = column0 + tx * 4u + 66u;
        let inside6 = oc6 < columns;
        let oc7 = column0 + tx * 4u + 67u;
        let inside7 = oc7 < columns;
        {
            let row = row0 + ty * 4u + 0u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c00.x; }
                if (inside1) { conv_output[at + oc1] = c00.y; }
                if (inside2) { conv_output[at + oc2] = c00.z; }
                if (inside3) { conv_output[at + oc3] = c00.w; }
                if (inside4) { conv_output[at + oc4] = c01.x; }
                if (inside5) { conv_output[at + oc5] = c01.y; }
                if (inside6) { conv_output[at + oc6] = c01.z; }
                if (inside7) { conv_output[at + oc7] = c01.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 1u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c10.x; }
                if (inside1) { conv_output[at + oc1] = c10.y; }
                if (inside2) { conv_output[at + oc2] = c10.z; }
                if (inside3) { conv_output[at + oc3] = c10.w; }
                if (inside4) { conv_output[at + oc4] = c11.x; }
                if (inside5) { conv_output[at + oc5] = c11.y; }
                if (inside6) { conv_output[at + oc6] = c11.z; }
                if (inside7) { conv_output[at + oc7] = c11.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 2u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c20.x; }
                if (inside1) { conv_output[at + oc1] = c20.y; }
                if (inside2) { conv_output[at + oc2] = c20.z; }
                if (inside3) { conv_output[at + oc3] = c20.w; }
                if (inside4) { conv_output[at + oc4] = c21.x; }
                if (inside5) { conv_output[at + oc5] = c21.y; }
                if (inside6) { conv_output[at + oc6] = c21.z; }
                if (inside7) { conv_output[at + oc7] = c21.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 3u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c30.x; }
                if (inside1) { conv_output[at + oc1] = c30.y; }
                if (inside2) { conv_output[at + oc2] = c30.z; }
                if (inside3) { conv_output[at + oc3] = c30.w; }
                if (inside4) { conv_output[at + oc4] = c31.x; }
                if (inside5) { conv_output[at + oc5] = c31.y; }
                if (inside6) { conv_output[at + oc6] = c31.z; }
                if (inside7) { conv_output[at + oc7] = c31.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 64u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c40.x; }
                if (inside1) { conv_output[at + oc1] = c40.y; }
                if (inside2) { conv_output[at + oc2] = c40.z; }
                if (inside3) { conv_output[at + oc3] = c40.w; }
                if (inside4) { conv_output[at + oc4] = c41.x; }
                if (inside5) { conv_output[at + oc5] = c41.y; }
                if (inside6) { conv_output[at + oc6] = c41.z; }
                if (inside7) { conv_output[at + oc7] = c41.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 65u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c50.x; }
                if (inside1) { conv_output[at + oc1] = c50.y; }
                if (inside2) { conv_output[at + oc2] = c50.z; }
                if (inside3) { conv_output[at + oc3] = c50.w; }
                if (inside4) { conv_output[at + oc4] = c51.x; }
                if (inside5) { conv_output[at + oc5] = c51.y; }
                if (inside6) { conv_output[at + oc6] = c51.z; }
                if (inside7) { conv_output[at + oc7] = c51.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 66u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c60.x; }
                if (inside1) { conv_output[at + oc1] = c60.y; }
                if (inside2) { conv_output[at + oc2] = c60.z; }
                if (inside3) { conv_output[at + oc3] = c60.w; }
                if (inside4) { conv_output[at + oc4] = c61.x; }
                if (inside5) { conv_output[at + oc5] = c61.y; }
                if (inside6) { conv_output[at + oc6] = c61.z; }
                if (inside7) { conv_output[at + oc7] = c61.w; }
            }
        }
        {
            let row = row0 + ty * 4u + 67u;
            if (row < m) {
                let at = out_base + row * columns;
                if (inside0) { conv_output[at + oc0] = c70.x; }
                if (inside1) { conv_output[at + oc1] = c70.y; }
                if (inside2) { conv_output[at + oc2] = c70.z; }
                if (inside3) { conv_output[at + oc3] = c70.w; }
                if (inside4) { conv_output[at + oc4] = c71.x; }
                if (inside5) { conv_output[at + oc5] = c71.y; }
                if (inside6) { conv_output[at + oc6] = c71.z; }
                if (inside7) { conv_output[at + oc7] = c71.w; }
            }
        }
    }
}
