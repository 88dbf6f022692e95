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
@group(0) @binding(1) var<storage, read> conv_grad: array<S>;
@group(0) @binding(2) var<storage, read> conv_weight: array<S>;
@group(0) @binding(3) var<storage, read_write> conv_output: array<S>;
// Two copies (ping-pong) of [16 k][33 vec4]: A's block transposed (vectors along the
// rows), and of [16 k][33 vec4]: B's block (vectors along the columns); the last
// vec4 of each row is padding.
var<workgroup> tile_a: array<vec4<f32>, 1056>;
var<workgroup> tile_b: array<vec4<f32>, 1056>;
fn load_weight(index: u32, inside: bool) -> f32 {
    if (inside) {
        return f32(load_value(conv_weight[index]));
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
    let b_store = ty * 33u + tx;
    let g_offset = params.b_offset;
    let g_n = params.b_stride_n;
    let g_c = params.b_stride_c;
    let g_h = params.b_stride_h;
    let g_w = params.b_stride_w;
    let plane = height * width;
    let k_first = 0u;
    let steps = (k + 15u) / 16u;
    let a_start = params.a_offset + (row0 + ty * 4u) * k + tx;
    let a_ok0 = row0 + ty * 4u + 0u < m;
    let a_ok1 = row0 + ty * 4u + 1u < m;
    let a_ok2 = row0 + ty * 4u + 2u < m;
    let a_ok3 = row0 + ty * 4u + 3u < m;
    let a_ok4 = row0 + ty * 4u + 64u < m;
    let a_ok5 = row0 + ty * 4u + 65u < m;
    let a_ok6 = row0 + ty * 4u + 66u < m;
    let a_ok7 = row0 + ty * 4u + 67u < m;
    // The tap walk: this invocation's B row r = ty + 16 * step as (channel, ki, kj).
    let walk_s_c = g_c;
    let walk_s_h = 0u;
    let walk_s_w = 0u;
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
    for (var tile = workgroup.x; tile < tiles; tile = tile + workgroups.x) {
        let column0 = tile * 128u;
        let col0 = column0 + tx * 4u + 0u;
        let image0 = col0 / plane;
        let pixel0 = col0 - image0 * plane;
        let y0 = pixel0 / width;
        let wx0 = pixel0 - y0 * width + pad_w;
        let hy0 = y0 + pad_h;
        let qy0 = hy0 / stride_h;
        let ey0 = select(0xffffffffu, hy0 - qy0 * stride_h, col0 < columns);
        let qx0 = wx0 / stride_w;
        let ex0 = wx0 - qx0 * stride_w;
        let corner0 = g_offset + image0 * g_n + qy0 * g_h + qx0 * g_w;
        let col1 = column0 + tx * 4u + 1u;
        let image1 = col1 / plane;
        let pixel1 = col1 - image1 * plane;
        let y1 = pixel1 / width;
        let wx1 = pixel1 - y1 * width + pad_w;
        let hy1 = y1 + pad_h;
        let qy1 = hy1 / stride_h;
        let ey1 = select(0xffffffffu, hy1 - qy1 * stride_h, col1 < columns);
        let qx1 = wx1 / stride_w;
        let ex1 = wx1 - qx1 * stride_w;
        let corner1 = g_offset + image1 * g_n + qy1 * g_h + qx1 * g_w;
        let col2 = column0 + tx * 4u + 2u;
        let image2 = col2 / plane;
        let pixel2 = col2 - image2 * plane;
        let y2 = pixel2 / width;
        let wx2 = pixel2 - y2 * width + pad_w;
        let hy2 = y2 + pad_h;
        let qy2 = hy2 / stride_h;
        let ey2 = select(0xffffffffu, hy2 - qy2 * stride_h, col2 < columns);
        let qx2 = wx2 / stride_w;
        let ex2 = wx2 - qx2 * stride_w;
        let corner2 = g_offset + image2 * g_n + qy2 * g_h + qx2 * g_w;
        let col3 = column0 + tx * 4u + 3u;
        let image3 = col3 / plane;
        let pixel3 = col3 - image3 * plane;
        let y3 = pixel3 / width;
        let wx3 = pixel3 - y3 * width + pad_w;
        let hy3 = y3 + pad_h;
        let qy3 = hy3 / stride_h;
        let ey3 = select(0xffffffffu, hy3 - qy3 * stride_h, col3 < columns);
        let qx3 = wx3 / stride_w;
        let ex3 = wx3 - qx3 * stride_w;
        let corner3 = g_offset + image3 * g_n + qy3 * g_h + qx3 * g_w;
        let col4 = column0 + tx * 4u + 64u;
        let image4 = col4 / plane;
        let pixel4 = col4 - image4 * plane;
        let y4 = pixel4 / width;
        let wx4 = pixel4 - y4 * width + pad_w;
        let hy4 = y4 + pad_h;
        let qy4 = hy4 / stride_h;
        let ey4 = select(0xffffffffu, hy4 - qy4 * stride_h, col4 < columns);
        let qx4 = wx4 / stride_w;
        let ex4 = wx4 - qx4 * stride_w;
        let corner4 = g_offset + image4 * g_n + qy4 * g_h + qx4 * g_w;
        let col5 = column0 + tx * 4u + 65u;
        let image5 = col5 / plane;
        let pixel5 = col5 - image5 * plane;
        let y5 = pixel5 / width;
        let wx5 = pixel5 - y5 * width + pad_w;
        let hy5 = y5 + pad_h;
        let qy5 = hy5 / stride_h;
        let ey5 = select(0xffffffffu, hy5 - qy5 * stride_h, col5 < columns);
        let qx5 = wx5 / stride_w;
        let ex5 = wx5 - qx5 * stride_w;
        let corner5 = g_offset + image5 * g_n + qy5 * g_h + qx5 * g_w;
        let col6 = column0 + tx * 4u + 66u;
        let image6 = col6 / plane;
        let pixel6 = col6 - image6 * plane;
        let y6 = pixel6 / width;
        let wx6 = pixel6 - y6 * width + pad_w;
        let hy6 = y6 + pad_h;
        let qy6 = hy6 / stride_h;
        let ey6 = select(0xffffffffu, hy6 - qy6 * stride_h, col6 < columns);
        let qx6 = wx6 / stride_w;
        let ex6 = wx6 - qx6 * stride_w;
        let corner6 = g_offset + image6 * g_n + qy6 * g_h + qx6 * g_w;
        let col7 = column0 + tx * 4u + 67u;
        let image7 = col7 / plane;
        let pixel7 = col7 - image7 * plane;
        let y7 = pixel7 / width;
        let wx7 = pixel7 - y7 * width + pad_w;
        let hy7 = y7 + pad_h;
        let qy7 = hy7 / stride_h;
        let ey7 = select(0xffffffffu, hy7 - qy7 * stride_h, col7 < columns);
        let qx7 = wx7 / stride_w;
        let ex7 = wx7 - qx7 * stride_w;
        let corner7 = g_offset + image7 * g_n + qy7 * g_h + qx7 * g_w;
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
        var c40 = vec4<f32>(0.0);
        var c41 = vec4<f32>(0.0);
        var c50 = vec4<f32>(0.0);
        var c51 = vec4<f32>(0.0);
        var c60 = vec4<f32>(0.0);
        var c61 = vec4<f32>(0.0);
        var c70 = vec4<f32>(0.0);
        var c71 = vec4<f32>(0.0);
        // Registers of the block in flight.
        var pa0: vec4<f32>;
        var pa1: vec4<f32>;
        var pb0: vec4<f32>;
        var pb1: vec4<f32>;
        {
            let r_ok = walk_r < k;
            let dh = walk_ki * dilation_h;
            let dw = walk_kj * dilation_w;
            let qdh = dh / stride_h;
            let edh = dh - qdh * stride_h;
            let qdw = dw / stride_w;
            let edw = dw - qdw * stride_w;
            let shift = walk_shift - qdh * g_h - qdw * g_w;
            let v0 = load_grad(corner0 + shift, r_ok && ey0 == edh && ex0 == edw && qy0 - qdh < oh && qx0 - qdw < ow);
            let v1 = load_grad(corner1 + shift, r_ok && ey1 == edh && ex1 == edw && qy1 - qdh < oh && qx1 - qdw < ow);
            let v2 = load_grad(corner2 + shift, r_ok && ey2 == edh && ex2 == edw && qy2 - qdh < oh && qx2 - qdw < ow);
            let v3 = load_grad(corner3 + shift, r_ok && ey3 == edh && ex3 == edw && qy3 - qdh < oh && qx3 - qdw < ow);
            let v4 = load_grad(corner4 + shift, r_ok && ey4 == edh && ex4 == edw && qy4 - qdh < oh && qx4 - qdw < ow);
            let v5 = load_grad(corner5 + shift, r_ok && ey5 == edh && ex5 == edw && qy5 - qdh < oh && qx5 - qdw < ow);
            let v6 = load_grad(corner6 + shift, r_ok && ey6 == edh && ex6 == edw && qy6 - qdh < oh && qx6 - qdw < ow);
            let v7 = load_grad(corner7 + shift, r_ok && ey7 == edh && ex7 == edw && qy7 - qdh < oh && qx7 - qdw < ow);
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
            pa1 = vec4<f32>(
                load_weight(a_start + 64u * k + k_first, a_ok4 && a_k_ok),
                load_weight(a_start + 65u * k + k_first, a_ok5 && a_k_ok),
                load_weight(a_start + 66u * k + k_first, a_ok6 && a_k_ok),
                load_weight(a_start + 67u * k + k_first, a_ok7 && a_k_ok));
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
                    let r_ok = walk_r < k;
                    let dh = walk_ki * dilation_h;
                    let dw = walk_kj * dilation_w;
                    let qdh = dh / stride_h;
                    let edh = dh - qdh * stride_h;
                    let qdw = dw / stride_w;
                    let edw = dw - qdw * stride_w;
                    let shift = walk_shift - qdh * g_h - qdw * g_w;
                    let v0 = load_grad(corner0 + shift, r_ok && ey0 == edh && ex0 == edw && qy0 - qdh < oh && qx0 - qdw < ow);
                    let v1 = load_grad(corner1 + shift, r_ok && ey1 == edh && ex1 == edw && qy1 - qdh < oh && qx1 - qdw < ow);
                    let v2 = load_grad(corner2 + shift, r_ok && ey2 == edh && ex2 == edw && qy2 - qdh < oh && qx2 - qdw < ow);
                    let v3 = load_grad(corner3 + shift, r_ok && ey3 == edh && ex3 == edw && qy3 - qdh < oh && qx3 - qdw < ow);
                    let v4 = load_grad(corner4 + shift, r_ok && ey4 == edh && ex4 == edw && qy4 - qdh < oh && qx4 - qdw < ow);
                    let v5 = load_grad(corner5 + shift, r_ok && ey5 == edh && ex5 == edw && qy5 - qdh < oh && qx5 - qdw < ow);
                    let v6 = load_grad(corner6 + shift, r_ok && ey6 == edh && ex6 == edw && qy6 - qdh < oh && qx6 - qdw < ow);
                    let v7 = load_grad(corner7 + shift, r_ok && ey7 == edh && ex7 == edw && qy7 - qdh < oh && qx7 - qdw < ow);
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
                    pa1 = vec4<f32>(
                        load_weight(a_start + 64u * k + k_next, a_ok4 && a_k_ok),
                        load_weight(a_start + 65u * k + k_next, a_ok5 && a_k_ok),
                        load_weight(a_start + 66u * k + k_next, a_ok6 && a_k_ok),
                        load_weight(a_start + 67u * k + k_next, a_ok7 && a_k_ok));
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
        {
            let row = row0 + ty * 4u + 64u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c40.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c40.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c40.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c40.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c41.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c41.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c41.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c41.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 65u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c50.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c50.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c50.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c50.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c51.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c51.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c51.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c51.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 66u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c60.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c60.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c60.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c60.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c61.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c61.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c61.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c61.w)); }
            }
        }
        {
            let row = row0 + ty * 4u + 67u;
            if (row < m) {
                let at = row * plane;
                if (inside0) { conv_output[out0 + at] = store_value(T(c70.x)); }
                if (inside1) { conv_output[out1 + at] = store_value(T(c70.y)); }
                if (inside2) { conv_output[out2 + at] = store_value(T(c70.z)); }
                if (inside3) { conv_output[out3 + at] = store_value(T(c70.w)); }
                if (inside4) { conv_output[out4 + at] = store_value(T(c71.x)); }
                if (inside5) { conv_output[out5 + at] = store_value(T(c71.y)); }
                if (inside6) { conv_output[out6 + at] = store_value(T(c71.z)); }
                if (inside7) { conv_output[out7 + at] = store_value(T(c71.w)); }
            }
        }
    }
}
