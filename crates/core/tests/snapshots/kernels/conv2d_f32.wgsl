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
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;
// Two copies (ping-pong) of [16 k][17 vec4]: A's block transposed (vectors along the
// rows), and of [16 k][33 vec4]: B's block (vectors along the columns); the last
// vec4 of each row is padding.
var<workgroup> tile_a: array<vec4<f32>, 544>;
var<workgroup> tile_b: array<vec4<f32>, 1056>;
fn load_weight(index: u32, inside: bool) -> f32 {
    if (inside) {
        return f32(load_value(conv_weight[index]));
    }
    return 0.0;
}
fn load_input(index: u32, inside: bool) -> f32 {
    if (inside) {
        return f32(load_value(conv_input[index]));
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
    let row0 = workgroup.y * 64u;
    let tiles = (columns + 127u) / 128u;
    // Where this invocation's loaded vectors go in a copy: A's rows at k0 + tx (transposed),
    // B's columns at k0 + ty.
    let a_store = tx * 17u + ty;
    let b_store = ty * 33u + tx;
    let in_offset = params.b_offset;
    let in_n = params.b_stride_n;
    let in_c = params.b_stride_c;
    let in_h = params.b_stride_h;
    let in_w = params.b_stride_w;
    let plane = oh * ow;
    let k_first = 0u;
    let steps = (k + 15u) / 16u;
    let a_start = params.a_offset + (row0 + ty * 4u) * k + tx;
    let a_ok0 = row0 + ty * 4u + 0u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    // The tap walk: this invocation's B row r = ty + 16 * step as (channel, ki, kj).
    let walk_s_c = in_c;
    let walk_s_h = dilation_h * in_h;
    let walk_s_w = dilation_w * in_w;
    let walk_c0 = ty / taps;
    let walk_t0 = ty - walk_c0 * taps;
    let walk_ki0 = walk_t0 / kw;
    let walk_kj0 = walk_t0 - walk_ki0 * kw;
    let walk_shift0 = walk_c0 * walk_s_c + walk_ki0 * walk_s_h + walk_kj0 * walk_s_w;
    // One advance by 16 taps, and the corrections when kj resp. ki wraps around.
    let step_c = 16u / taps;
    let step_t = 16u - step_c * taps;
    let step_ki = step_t / kw;
    let step_kj = step_t - step_ki * kw;
    let step_shift = step_c * walk_s_c + step_ki * walk_s_h + step_kj * walk_s_w;
    let wrap_kj = walk_s_h - kw * walk_s_w;
    let wrap_ki = walk_s_c - kh * walk_s_h;
    // Column tiles in a grid-stride loop (any N fits the grid).
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {
        let column0 = tile * 128u;
        let col0 = column0 + tx * 4u + 0u;
        let image0 = col0 / plane;
        let pixel0 = col0 - image0 * plane;
        let oi0 = pixel0 / ow;
        let oj0 = pixel0 - oi0 * ow;
        let h0 = select(i32(height), i32(oi0 * stride_h) - i32(pad_h), col0 < columns);
        let w0 = i32(oj0 * stride_w) - i32(pad_w);
        let base0 = in_offset + image0 * in_n + bitcast<u32>(h0) * in_h + bitcast<u32>(w0) * in_w;
        let col1 = column0 + tx * 4u + 1u;
        let image1 = col1 / plane;
        let pixel1 = col1 - image1 * plane;
        let oi1 = pixel1 / ow;
        let oj1 = pixel1 - oi1 * ow;
        let h1 = select(i32(height), i32(oi1 * stride_h) - i32(pad_h), col1 < columns);
        let w1 = i32(oj1 * stride_w) - i32(pad_w);
        let base1 = in_offset + image1 * in_n + bitcast<u32>(h1) * in_h + bitcast<u32>(w1) * in_w;
        let col2 = column0 + tx * 4u + 2u;
        let image2 = col2 / plane;
        let pixel2 = col2 - image2 * plane;
        let oi2 = pixel2 / ow;
        let oj2 = pixel2 - oi2 * ow;
        let h2 = select(i32(height), i32(oi2 * stride_h) - i32(pad_h), col2 < columns);
        let w2 = i32(oj2 * stride_w) - i32(pad_w);
        let base2 = in_offset + image2 * in_n + bitcast<u32>(h2) * in_h + bitcast<u32>(w2) * in_w;
        let col3 = column0 + tx * 4u + 3u;
        let image3 = col3 / plane;
        let pixel3 = col3 - image3 * plane;
        let oi3 = pixel3 / ow;
        let oj3 = pixel3 - oi3 * ow;
        let h3 = select(i32(height), i32(oi3 * stride_h) - i32(pad_h), col3 < columns);
        let w3 = i32(oj3 * stride_w) - i32(pad_w);
        let base3 = in_offset + image3 * in_n + bitcast<u32>(h3) * in_h + bitcast<u32>(w3) * in_w;
        let col4 = column0 + tx * 4u + 64u;
        let image4 = col4 / plane;
        let pixel4 = col4 - image4 * plane;
        let oi4 = pixel4 / ow;
        let oj4 = pixel4 - oi4 * ow;
        let h4 = select(i32(height), i32(oi4 * stride_h) - i32(pad_h), col4 < columns);
        let w4 = i32(oj4 * stride_w) - i32(pad_w);
        let base4 = in_offset + image4 * in_n + bitcast<u32>(h4) * in_h + bitcast<u32>(w4) * in_w;
        let col5 = column0 + tx * 4u + 65u;
        let image5 = col5 / plane;
        let pixel5 = col5 - image5 * plane;
        let oi5 = pixel5 / ow;
        let oj5 = pixel5 - oi5 * ow;
        let h5 = select(i32(height), i32(oi5 * stride_h) - i32(pad_h), col5 < columns);
        let w5 = i32(oj5 * stride_w) - i32(pad_w);
        let base5 = in_offset + image5 * in_n + bitcast<u32>(h5) * in_h + bitcast<u32>(w5) * in_w;
        let col6 = column0 + tx * 4u + 66u;
        let image6 = col6 / plane;
        let pixel6 = col6 - image6 * plane;
        let oi6 = pixel6 / ow;
        let oj6 = pixel6 - oi6 * ow;
        let h6 = select(i32(height), i32(oi6 * stride_h) - i32(pad_h), col6 < columns);
        let w6 = i32(oj6 * stride_w) - i32(pad_w);
        let base6 = in_offset + image6 * in_n + bitcast<u32>(h6) * in_h + bitcast<u32>(w6) * in_w;
        let col7 = column0 + tx * 4u + 67u;
        let image7 = col7 / plane;
        let pixel7 = col7 - image7 * plane;
        let oi7 = pixel7 / ow;
        let oj7 = pixel7 - oi7 * ow;
        let h7 = select(i32(height), i32(oi7 * stride_h) - i32(pad_h), col7 < columns);
        let w7 = i32(oj7 * stride_w) - i32(pad_w);
        let base7 = in_offset + image7 * in_n + bitcast<u32>(h7) * in_h + bitcast<u32>(w7) * in_w;
        var walk_r = ty;
        var walk_ki = walk_ki0;
        var walk_kj = walk_kj0;
        var walk_shift = walk_shift0;
        var c00 = vec4<f32>(0.0);
        var c01 = vec4<f32>(0.0);
        var c10 = vec4<f32>(0.0);
        var c11 = vec4<f32>(0.0);
        var c20 = vec4<f32>(0.0);
        var c21 = vec4<f32>(0.0);
        var c30 = vec4<f32>(0.0);
        var c31 = vec4<f32>(0.0);
        // Registers of the block in flight.
        var pa0: vec4<f32>;
        var pb0: vec4<f32>;
        var pb1: vec4<f32>;
        {
            let r_ok = walk_r < k;
            let dh = i32(walk_ki * dilation_h);
            let dw = i32(walk_kj * dilation_w);
            let v0 = load_input(base0 + walk_shift, r_ok && bitcast<u32>(h0 + dh) < height && bitcast<u32>(w0 + dw) < width);
            let v1 = load_input(base1 + walk_shift, r_ok && bitcast<u32>(h1 + dh) < height && bitcast<u32>(w1 + dw) < width);
            let v2 = load_input(base2 + walk_shift, r_ok && bitcast<u32>(h2 + dh) < height && bitcast<u32>(w2 + dw) < width);
            let v3 = load_input(base3 + walk_shift, r_ok && bitcast<u32>(h3 + dh) < height && bitcast<u32>(w3 + dw) < width);
            let v4 = load_input(base4 + walk_shift, r_ok && bitcast<u32>(h4 + dh) < height && bitcast<u32>(w4 + dw) < width);
            let v5 = load_input(base5 + walk_shift, r_ok && bitcast<u32>(h5 + dh) < height && bitcast<u32>(w5 + dw) < width);
            let v6 = load_input(base6 + walk_shift, r_ok && bitcast<u32>(h6 + dh) < height && bitcast<u32>(w6 + dw) < width);
            let v7 = load_input(base7 + walk_shift, r_ok && bitcast<u32>(h7 + dh) < height && bitcast<u32>(w7 + dw) < width);
            pb0 = vec4<f32>(v0, v1, v2, v3);
            pb1 = vec4<f32>(v4, v5, v6, v7);
        }
        {
            walk_r = walk_r + 16u;
            let kj_sum = walk_kj + step_kj;
            let carry_j = kj_sum >= kw;
            walk_kj = select(kj_sum, kj_sum - kw, carry_j);
            let ki_sum = walk_ki + step_ki + select(0u, 1u, carry_j);
            let carry_i = ki_sum >= kh;
            walk_ki = select(ki_sum, ki_sum - kh, carry_i);
            walk_shift = walk_shift + step_shift + select(0u, wrap_kj, carry_j) + select(0u, wrap_ki, carry_i);
        }
        {
            let a_k_ok = k_first + tx < k;
            pa0 = vec4<f32>(
                load_weight(a_start + k_first, a_ok0 && a_k_ok),
                load_weight(a_start + 1u * k + k_first, a_ok1 && a_k_ok),
                load_weight(a_start + 2u * k + k_first, a_ok2 && a_k_ok),
                load_weight(a_start + 3u * k + k_first, a_ok3 && a_k_ok));
        }
        tile_a[0u + a_store + 0u] = pa0;
        tile_b[0u + b_store] = pb0;
        tile_b[0u + b_store + 16u] = pb1;
        workgroupBarrier();
        for (var step = 0u; step < steps; step = step + 1u) {
            // Multiply out copy `current` while the next k-block's loads are in flight, then
            // store them into the other copy (read by nobody since the last barrier).
            let current = step % 2u;
            let a_current = current * 272u;
            let b_current = current * 528u;
            let more = step + 1u < steps;
            if (more) {
                let k_next = k_first + (step + 1u) * 16u;
                {
                    let r_ok = walk_r < k;
                    let dh = i32(walk_ki * dilation_h);
                    let dw = i32(walk_kj * dilation_w);
                    let v0 = load_input(base0 + walk_shift, r_ok && bitcast<u32>(h0 + dh) < height && bitcast<u32>(w0 + dw) < width);
                    let v1 = load_input(base1 + walk_shift, r_ok && bitcast<u32>(h1 + dh) < height && bitcast<u32>(w1 + dw) < width);
                    let v2 = load_input(base2 + walk_shift, r_ok && bitcast<u32>(h2 + dh) < height && bitcast<u32>(w2 + dw) < width);
                    let v3 = load_input(base3 + walk_shift, r_ok && bitcast<u32>(h3 + dh) < height && bitcast<u32>(w3 + dw) < width);
                    let v4 = load_input(base4 + walk_shift, r_ok && bitcast<u32>(h4 + dh) < height && bitcast<u32>(w4 + dw) < width);
                    let v5 = load_input(base5 + walk_shift, r_ok && bitcast<u32>(h5 + dh) < height && bitcast<u32>(w5 + dw) < width);
                    let v6 = load_input(base6 + walk_shift, r_ok && bitcast<u32>(h6 + dh) < height && bitcast<u32>(w6 + dw) < width);
                    let v7 = load_input(base7 + walk_shift, r_ok && bitcast<u32>(h7 + dh) < height && bitcast<u32>(w7 + dw) < width);
                    pb0 = vec4<f32>(v0, v1, v2, v3);
                    pb1 = vec4<f32>(v4, v5, v6, v7);
                }
                {
                    walk_r = walk_r + 16u;
                    let kj_sum = walk_kj + step_kj;
                    let carry_j = kj_sum >= kw;
                    walk_kj = select(kj_sum, kj_sum - kw, carry_j);
                    let ki_sum = walk_ki + step_ki + select(0u, 1u, carry_j);
                    let carry_i = ki_sum >= kh;
                    walk_ki = select(ki_sum, ki_sum - kh, carry_i);
                    walk_shift = walk_shift + step_shift + select(0u, wrap_kj, carry_j) + select(0u, wrap_ki, carry_i);
                }
                {
                    let a_k_ok = k_next + tx < k;
                    pa0 = vec4<f32>(
                        load_weight(a_start + k_next, a_ok0 && a_k_ok),
                        load_weight(a_start + 1u * k + k_next, a_ok1 && a_k_ok),
                        load_weight(a_start + 2u * k + k_next, a_ok2 && a_k_ok),
                        load_weight(a_start + 3u * k + k_next, a_ok3 && a_k_ok));
                }
            }
            {
                let a0 = tile_a[a_current + 0u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 17u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 34u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 51u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 68u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 85u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 102u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 119u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 136u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 153u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 170u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 187u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 204u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 221u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 238u + ty];
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
            }
            {
                let a0 = tile_a[a_current + 255u + ty];
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
            }
            if (more) {
                tile_a[272u - a_current + a_store + 0u] = pa0;
                tile_b[528u - b_current + b_store] = pb0;
                tile_b[528u - b_current + b_store + 16u] = pb1;
            }
            workgroupBarrier();
        }
        // out[image, row, pixel] = output[(image * m + row) * plane + pixel].
        let out0 = image0 * m * plane + pixel0;
        let inside0 = col0 < columns;
        let out1 = image1 * m * plane + pixel1;
        let inside1 = col1 < columns;
        let out2 = image2 * m * plane + pixel2;
        let inside2 = col2 < columns;
        let out3 = image3 * m * plane + pixel3;
        let inside3 = col3 < columns;
        let out4 = image4 * m * plane + pixel4;
        let inside4 = col4 < columns;
        let out5 = image5 * m * plane + pixel5;
        let inside5 = col5 < columns;
        let out6 = image6 * m * plane + pixel6;
        let inside6 = col6 < columns;
        let out7 = image7 * m * plane + pixel7;
        let inside7 = col7 < columns;
        {
            let row = row0 + ty * 4u + 0u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c00.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c00.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c00.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c00.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c01.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c01.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c01.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c01.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 1u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c10.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c10.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c10.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c10.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c11.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c11.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c11.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c11.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 2u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c20.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c20.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c20.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c20.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c21.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c21.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c21.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c21.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 3u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c30.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c30.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c30.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c30.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c31.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c31.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c31.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c31.w)); }
            }
        }
    }
}
