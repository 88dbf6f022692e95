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
struct PoolParams {
    count: u32,
    channels: u32,
    height: u32,
    width: u32,
    out_height: u32,
    out_width: u32,
    kernel_h: u32,
    kernel_w: u32,
    stride_h: u32,
    stride_w: u32,
    padding_h: u32,
    padding_w: u32,
    dilation_h: u32,
    dilation_w: u32,
    input_offset: u32,
    input_stride_n: u32,
    input_stride_c: u32,
    input_stride_h: u32,
    input_stride_w: u32,
    output_offset: u32,
    output_stride_n: u32,
    output_stride_c: u32,
    output_stride_h: u32,
    output_stride_w: u32,
    grad_offset: u32,
    grad_stride_n: u32,
    grad_stride_c: u32,
    grad_stride_h: u32,
    grad_stride_w: u32,
}
@group(0) @binding(0) var<storage, read> params: PoolParams;
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
// pool_planes.wgsl — shared by every max pooling kernel (after the value header and
// `PoolParams`, pool.rs): where an `[n, c]` plane of a strided view starts.

// Where plane `plane` (image * channels + channel) of a view starts.
fn plane_base(plane: u32, offset: u32, stride_n: u32, stride_c: u32) -> u32 {
    return offset + (plane / params.channels) * stride_n + (plane % params.channels) * stride_c;
}
const KERNEL_W: u32 = 3u;
const STRIDE_H: u32 = 2u;
const STRIDE_W: u32 = 2u;
const PADDING_H: u32 = 1u;
const PADDING_W: u32 = 1u;
const DILATION_H: u32 = 1u;
const DILATION_W: u32 = 1u;
const SPAN_H: u32 = 2u;
const SPAN_W: u32 = 2u;
// kernel 3x3
fn negative_infinity() -> T {
    return T(bitcast<f32>(0xff800000u));
}

// Element `index` of the staged region (REGION_COLUMNS wide, its corner at input (top,
// left)): -inf outside the input, past the region, or for a plane past the grid.
fn staged_value(index: u32, top: i32, left: i32, base: u32, live: bool) -> T {
    let y = top + i32(index / REGION_COLUMNS);
    let x = left + i32(index % REGION_COLUMNS);
    if (!live || index >= REGION_SIZE || y < 0 || y >= i32(params.height) || x < 0 || x >= i32(params.width)) {
        return negative_infinity();
    }
    return load_value(input[base + u32(y) * params.input_stride_h + u32(x) * params.input_stride_w]);
}
// Tiled max pooling gradient (pool/tiled.rs): a 16x64 input-gradient tile per workgroup.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<S>;

const REGION_COLUMNS: u32 = 67u;
const REGION_SIZE: u32 = 1273u;
const WINDOW_COLUMNS: u32 = 33u;
const WINDOWS: u32 = 297u;
const NO_TAP: u32 = 0xffffffffu;
var<workgroup> region: array<T, 1273>;
var<workgroup> routes: array<u32, 297>;
var<workgroup> gradients: array<T, 297>;

// The first window whose taps reach `position` along an axis: the least o with
// o * stride + span >= position + padding.
fn first_window(position: u32, padding: u32, span: u32, stride: u32) -> u32 {
    let shifted = position + padding;
    if (shifted <= span) {
        return 0u;
    }
    return (shifted - span + stride - 1u) / stride;
}

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: T, maximum: T) -> bool {
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}
fn route(window: u32, maximum: T, top: i32, left: i32) -> u32 {
    let window_row = window / WINDOW_COLUMNS;
    let window_column = window % WINDOW_COLUMNS;
    let row = top + i32(window_row * STRIDE_H);
    let column = left + i32(window_column * STRIDE_W);
    let corner = window_row * STRIDE_H * REGION_COLUMNS + window_column * STRIDE_W;
    let inside_row0 = row + 0 >= 0 && row + 0 < i32(params.height);
    let inside_row1 = row + 1 >= 0 && row + 1 < i32(params.height);
    let inside_row2 = row + 2 >= 0 && row + 2 < i32(params.height);
    if (inside_row0 && column + 0 >= 0 && column + 0 < i32(params.width)
        && matches(region[corner + 0u], maximum)) {
        return 0u;
    }
    if (inside_row0 && column + 1 >= 0 && column + 1 < i32(params.width)
        && matches(region[corner + 1u], maximum)) {
        return 1u;
    }
    if (inside_row0 && column + 2 >= 0 && column + 2 < i32(params.width)
        && matches(region[corner + 2u], maximum)) {
        return 2u;
    }
    if (inside_row1 && column + 0 >= 0 && column + 0 < i32(params.width)
        && matches(region[corner + 67u], maximum)) {
        return 3u;
    }
    if (inside_row1 && column + 1 >= 0 && column + 1 < i32(params.width)
        && matches(region[corner + 68u], maximum)) {
        return 4u;
    }
    if (inside_row1 && column + 2 >= 0 && column + 2 < i32(params.width)
        && matches(region[corner + 69u], maximum)) {
        return 5u;
    }
    if (inside_row2 && column + 0 >= 0 && column + 0 < i32(params.width)
        && matches(region[corner + 134u], maximum)) {
        return 6u;
    }
    if (inside_row2 && column + 1 >= 0 && column + 1 < i32(params.width)
        && matches(region[corner + 135u], maximum)) {
        return 7u;
    }
    if (inside_row2 && column + 2 >= 0 && column + 2 < i32(params.width)
        && matches(region[corner + 136u], maximum)) {
        return 8u;
    }
    return NO_TAP;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    // Planes in turn (a workgroup per tile and plane left the GPU waiting on launches).
    for (var plane = workgroup.y; plane < params.count; plane = plane + workgroups.y) {
    let live = true;
    let column_tiles = (params.width + 64u - 1u) / 64u;
    let first_row = (workgroup.x / column_tiles) * 16u;
    let first_column = (workgroup.x % column_tiles) * 64u;
    let window_row0 = first_window(first_row, PADDING_H, SPAN_H, STRIDE_H);
    let window_column0 = first_window(first_column, PADDING_W, SPAN_W, STRIDE_W);
    let top = i32(window_row0 * STRIDE_H) - i32(PADDING_H);
    let left = i32(window_column0 * STRIDE_W) - i32(PADDING_W);
    let base = plane_base(plane, params.input_offset, params.input_stride_n, params.input_stride_c);
    let staged0 = staged_value(local + 0u, top, left, base, live);
    let staged1 = staged_value(local + 256u, top, left, base, live);
    let staged2 = staged_value(local + 512u, top, left, base, live);
    let staged3 = staged_value(local + 768u, top, left, base, live);
    let staged4 = staged_value(local + 1024u, top, left, base, live);
    if (local + 0u < REGION_SIZE) {
        region[local + 0u] = staged0;
    }
    if (local + 256u < REGION_SIZE) {
        region[local + 256u] = staged1;
    }
    if (local + 512u < REGION_SIZE) {
        region[local + 512u] = staged2;
    }
    if (local + 768u < REGION_SIZE) {
        region[local + 768u] = staged3;
    }
    if (local + 1024u < REGION_SIZE) {
        region[local + 1024u] = staged4;
    }
    workgroupBarrier();
    let pooled_base = plane_base(plane, params.output_offset, params.output_stride_n, params.output_stride_c);
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n, params.grad_stride_c);
    let window0 = local + 0u;
    let oi0 = window_row0 + window0 / WINDOW_COLUMNS;
    let oj0 = window_column0 + window0 % WINDOW_COLUMNS;
    let live0 = live && window0 < WINDOWS && oi0 < params.out_height && oj0 < params.out_width;
    var maximum0 = T(0.0);
    var gradient0 = T(0.0);
    if (live0) {
        maximum0 = load_value(pooled[pooled_base + oi0 * params.output_stride_h + oj0 * params.output_stride_w]);
        gradient0 = load_value(grad[grad_base + oi0 * params.grad_stride_h + oj0 * params.grad_stride_w]);
    }
    let window1 = local + 256u;
    let oi1 = window_row0 + window1 / WINDOW_COLUMNS;
    let oj1 = window_column0 + window1 % WINDOW_COLUMNS;
    let live1 = live && window1 < WINDOWS && oi1 < params.out_height && oj1 < params.out_width;
    var maximum1 = T(0.0);
    var gradient1 = T(0.0);
    if (live1) {
        maximum1 = load_value(pooled[pooled_base + oi1 * params.output_stride_h + oj1 * params.output_stride_w]);
        gradient1 = load_value(grad[grad_base + oi1 * params.grad_stride_h + oj1 * params.grad_stride_w]);
    }
    if (window0 < WINDOWS) {
        routes[window0] = select(NO_TAP, route(window0, maximum0, top, left), live0);
        gradients[window0] = gradient0;
    }
    if (window1 < WINDOWS) {
        routes[window1] = select(NO_TAP, route(window1, maximum1, top, left), live1);
        gradients[window1] = gradient1;
    }
    workgroupBarrier();
    for (var index = local; index < 1024u; index = index + 256u) {
        let y = first_row + index / 64u;
        let x = first_column + index % 64u;
        if (y >= params.height || x >= params.width) {
            continue;
        }
        var sum = T(0.0);
        // Window oi reads row y at tap offset y + PADDING_H - oi * STRIDE_H (a multiple of
        // DILATION_H up to SPAN_H): oi = row_base - t for the unrolled t below; likewise
        // columns. Ascending windows (descending t), as the two-pass kernels add them.
        let row_base = (y + PADDING_H) / STRIDE_H;
        let row_rest = (y + PADDING_H) % STRIDE_H;
        let column_base = (x + PADDING_W) / STRIDE_W;
        let column_rest = (x + PADDING_W) % STRIDE_W;
        {
            let row_offset = row_rest + 2u;
            let column_offset = column_rest + 2u;
            if (row_base >= 1u && row_base - 1u < params.out_height && row_offset <= SPAN_H
                && row_offset % DILATION_H == 0u && column_base >= 1u
                && column_base - 1u < params.out_width && column_offset <= SPAN_W
                && column_offset % DILATION_W == 0u) {
                let window = (row_base - 1u - window_row0) * WINDOW_COLUMNS + column_base - 1u - window_column0;
                if (routes[window] == (row_offset / DILATION_H) * KERNEL_W + column_offset / DILATION_W) {
                    sum = sum + gradients[window];
                }
            }
        }
        {
            let row_offset = row_rest + 2u;
            let column_offset = column_rest + 0u;
            if (row_base >= 1u && row_base - 1u < params.out_height && row_offset <= SPAN_H
                && row_offset % DILATION_H == 0u && column_base >= 0u
                && column_base - 0u < params.out_width && column_offset <= SPAN_W
                && column_offset % DILATION_W == 0u) {
                let window = (row_base - 1u - window_row0) * WINDOW_COLUMNS + column_base - 0u - window_column0;
                if (routes[window] == (row_offset / DILATION_H) * KERNEL_W + column_offset / DILATION_W) {
                    sum = sum + gradients[window];
                }
            }
        }
        {
            let row_offset = row_rest + 0u;
            let column_offset = column_rest + 2u;
            if (row_base >= 0u && row_base - 0u < params.out_height && row_offset <= SPAN_H
                && row_offset % DILATION_H == 0u && column_base >= 1u
                && column_base - 1u < params.out_width && column_offset <= SPAN_W
                && column_offset % DILATION_W == 0u) {
                let window = (row_base - 0u - window_row0) * WINDOW_COLUMNS + column_base - 1u - window_column0;
                if (routes[window] == (row_offset / DILATION_H) * KERNEL_W + column_offset / DILATION_W) {
                    sum = sum + gradients[window];
                }
            }
        }
        {
            let row_offset = row_rest + 0u;
            let column_offset = column_rest + 0u;
            if (row_base >= 0u && row_base - 0u < params.out_height && row_offset <= SPAN_H
                && row_offset % DILATION_H == 0u && column_base >= 0u
                && column_base - 0u < params.out_width && column_offset <= SPAN_W
                && column_offset % DILATION_W == 0u) {
                let window = (row_base - 0u - window_row0) * WINDOW_COLUMNS + column_base - 0u - window_column0;
                if (routes[window] == (row_offset / DILATION_H) * KERNEL_W + column_offset / DILATION_W) {
                    sum = sum + gradients[window];
                }
            }
        }
        grad_input[(plane * params.height + y) * params.width + x] = store_value(sum);
    }
    // Every read of this plane's routes is done before the next plane's staging.
    workgroupBarrier();
    }
}
