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
// Max pooling gradient (pool/halving_backward.rs): a 3x3 window, stride 2, padding
// 1x1; one invocation per 2x2 block of the input gradient.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<S>;

const NO_TAP: u32 = 0xffffffffu;

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: T, maximum: T) -> bool {
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let block_columns = (params.width + 1u) / 2u;
    let block_rows = (params.height + 1u) / 2u;
    let block_column = i % block_columns;
    let rest = i / block_columns;
    let block_row = rest % block_rows;
    let plane = rest / block_rows;
    let input_base = plane_base(plane, params.input_offset, params.input_stride_n, params.input_stride_c);
    let pooled_base = plane_base(plane, params.output_offset, params.output_stride_n, params.output_stride_c);
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n, params.grad_stride_c);
    let rowm1 = i32(block_row * 2u) + (-1);
    let row_insidem1 = rowm1 >= 0 && rowm1 < i32(params.height);
    let row0 = i32(block_row * 2u) + (0);
    let row_inside0 = row0 >= 0 && row0 < i32(params.height);
    let row1 = i32(block_row * 2u) + (1);
    let row_inside1 = row1 >= 0 && row1 < i32(params.height);
    let row2 = i32(block_row * 2u) + (2);
    let row_inside2 = row2 >= 0 && row2 < i32(params.height);
    let row3 = i32(block_row * 2u) + (3);
    let row_inside3 = row3 >= 0 && row3 < i32(params.height);
    let columnm1 = i32(block_column * 2u) + (-1);
    let column_insidem1 = columnm1 >= 0 && columnm1 < i32(params.width);
    let column0 = i32(block_column * 2u) + (0);
    let column_inside0 = column0 >= 0 && column0 < i32(params.width);
    let column1 = i32(block_column * 2u) + (1);
    let column_inside1 = column1 >= 0 && column1 < i32(params.width);
    let column2 = i32(block_column * 2u) + (2);
    let column_inside2 = column2 >= 0 && column2 < i32(params.width);
    let column3 = i32(block_column * 2u) + (3);
    let column_inside3 = column3 >= 0 && column3 < i32(params.width);
    let insidem1_m1 = row_insidem1 && column_insidem1;
    var valuem1_m1 = T(0.0);
    if (insidem1_m1) {
        valuem1_m1 = load_value(input[input_base + u32(rowm1) * params.input_stride_h + u32(columnm1) * params.input_stride_w]);
    }
    let insidem1_0 = row_insidem1 && column_inside0;
    var valuem1_0 = T(0.0);
    if (insidem1_0) {
        valuem1_0 = load_value(input[input_base + u32(rowm1) * params.input_stride_h + u32(column0) * params.input_stride_w]);
    }
    let insidem1_1 = row_insidem1 && column_inside1;
    var valuem1_1 = T(0.0);
    if (insidem1_1) {
        valuem1_1 = load_value(input[input_base + u32(rowm1) * params.input_stride_h + u32(column1) * params.input_stride_w]);
    }
    let insidem1_2 = row_insidem1 && column_inside2;
    var valuem1_2 = T(0.0);
    if (insidem1_2) {
        valuem1_2 = load_value(input[input_base + u32(rowm1) * params.input_stride_h + u32(column2) * params.input_stride_w]);
    }
    let insidem1_3 = row_insidem1 && column_inside3;
    var valuem1_3 = T(0.0);
    if (insidem1_3) {
        valuem1_3 = load_value(input[input_base + u32(rowm1) * params.input_stride_h + u32(column3) * params.input_stride_w]);
    }
    let inside0_m1 = row_inside0 && column_insidem1;
    var value0_m1 = T(0.0);
    if (inside0_m1) {
        value0_m1 = load_value(input[input_base + u32(row0) * params.input_stride_h + u32(columnm1) * params.input_stride_w]);
    }
    let inside0_0 = row_inside0 && column_inside0;
    var value0_0 = T(0.0);
    if (inside0_0) {
        value0_0 = load_value(input[input_base + u32(row0) * params.input_stride_h + u32(column0) * params.input_stride_w]);
    }
    let inside0_1 = row_inside0 && column_inside1;
    var value0_1 = T(0.0);
    if (inside0_1) {
        value0_1 = load_value(input[input_base + u32(row0) * params.input_stride_h + u32(column1) * params.input_stride_w]);
    }
    let inside0_2 = row_inside0 && column_inside2;
    var value0_2 = T(0.0);
    if (inside0_2) {
        value0_2 = load_value(input[input_base + u32(row0) * params.input_stride_h + u32(column2) * params.input_stride_w]);
    }
    let inside0_3 = row_inside0 && column_inside3;
    var value0_3 = T(0.0);
    if (inside0_3) {
        value0_3 = load_value(input[input_base + u32(row0) * params.input_stride_h + u32(column3) * params.input_stride_w]);
    }
    let inside1_m1 = row_inside1 && column_insidem1;
    var value1_m1 = T(0.0);
    if (inside1_m1) {
        value1_m1 = load_value(input[input_base + u32(row1) * params.input_stride_h + u32(columnm1) * params.input_stride_w]);
    }
    let inside1_0 = row_inside1 && column_inside0;
    var value1_0 = T(0.0);
    if (inside1_0) {
        value1_0 = load_value(input[input_base + u32(row1) * params.input_stride_h + u32(column0) * params.input_stride_w]);
    }
    let inside1_1 = row_inside1 && column_inside1;
    var value1_1 = T(0.0);
    if (inside1_1) {
        value1_1 = load_value(input[input_base + u32(row1) * params.input_stride_h + u32(column1) * params.input_stride_w]);
    }
    let inside1_2 = row_inside1 && column_inside2;
    var value1_2 = T(0.0);
    if (inside1_2) {
        value1_2 = load_value(input[input_base + u32(row1) * params.input_stride_h + u32(column2) * params.input_stride_w]);
    }
    let inside1_3 = row_inside1 && column_inside3;
    var value1_3 = T(0.0);
    if (inside1_3) {
        value1_3 = load_value(input[input_base + u32(row1) * params.input_stride_h + u32(column3) * params.input_stride_w]);
    }
    let inside2_m1 = row_inside2 && column_insidem1;
    var value2_m1 = T(0.0);
    if (inside2_m1) {
        value2_m1 = load_value(input[input_base + u32(row2) * params.input_stride_h + u32(columnm1) * params.input_stride_w]);
    }
    let inside2_0 = row_inside2 && column_inside0;
    var value2_0 = T(0.0);
    if (inside2_0) {
        value2_0 = load_value(input[input_base + u32(row2) * params.input_stride_h + u32(column0) * params.input_stride_w]);
    }
    let inside2_1 = row_inside2 && column_inside1;
    var value2_1 = T(0.0);
    if (inside2_1) {
        value2_1 = load_value(input[input_base + u32(row2) * params.input_stride_h + u32(column1) * params.input_stride_w]);
    }
    let inside2_2 = row_inside2 && column_inside2;
    var value2_2 = T(0.0);
    if (inside2_2) {
        value2_2 = load_value(input[input_base + u32(row2) * params.input_stride_h + u32(column2) * params.input_stride_w]);
    }
    let inside2_3 = row_inside2 && column_inside3;
    var value2_3 = T(0.0);
    if (inside2_3) {
        value2_3 = load_value(input[input_base + u32(row2) * params.input_stride_h + u32(column3) * params.input_stride_w]);
    }
    let inside3_m1 = row_inside3 && column_insidem1;
    var value3_m1 = T(0.0);
    if (inside3_m1) {
        value3_m1 = load_value(input[input_base + u32(row3) * params.input_stride_h + u32(columnm1) * params.input_stride_w]);
    }
    let inside3_0 = row_inside3 && column_inside0;
    var value3_0 = T(0.0);
    if (inside3_0) {
        value3_0 = load_value(input[input_base + u32(row3) * params.input_stride_h + u32(column0) * params.input_stride_w]);
    }
    let inside3_1 = row_inside3 && column_inside1;
    var value3_1 = T(0.0);
    if (inside3_1) {
        value3_1 = load_value(input[input_base + u32(row3) * params.input_stride_h + u32(column1) * params.input_stride_w]);
    }
    let inside3_2 = row_inside3 && column_inside2;
    var value3_2 = T(0.0);
    if (inside3_2) {
        value3_2 = load_value(input[input_base + u32(row3) * params.input_stride_h + u32(column2) * params.input_stride_w]);
    }
    let inside3_3 = row_inside3 && column_inside3;
    var value3_3 = T(0.0);
    if (inside3_3) {
        value3_3 = load_value(input[input_base + u32(row3) * params.input_stride_h + u32(column3) * params.input_stride_w]);
    }
    let window_row0_0 = block_row + 0u;
    let window_column0_0 = block_column + 0u;
    var route0_0 = NO_TAP;
    var gradient0_0 = T(0.0);
    if (window_row0_0 < params.out_height && window_column0_0 < params.out_width) {
        let maximum = load_value(pooled[pooled_base + window_row0_0 * params.output_stride_h + window_column0_0 * params.output_stride_w]);
        gradient0_0 = load_value(grad[grad_base + window_row0_0 * params.grad_stride_h + window_column0_0 * params.grad_stride_w]);
        if (inside1_1 && matches(value1_1, maximum)) { route0_0 = 8u; }
        if (inside1_0 && matches(value1_0, maximum)) { route0_0 = 7u; }
        if (inside1_m1 && matches(value1_m1, maximum)) { route0_0 = 6u; }
        if (inside0_1 && matches(value0_1, maximum)) { route0_0 = 5u; }
        if (inside0_0 && matches(value0_0, maximum)) { route0_0 = 4u; }
        if (inside0_m1 && matches(value0_m1, maximum)) { route0_0 = 3u; }
        if (insidem1_1 && matches(valuem1_1, maximum)) { route0_0 = 2u; }
        if (insidem1_0 && matches(valuem1_0, maximum)) { route0_0 = 1u; }
        if (insidem1_m1 && matches(valuem1_m1, maximum)) { route0_0 = 0u; }
    }
    let window_row0_1 = block_row + 0u;
    let window_column0_1 = block_column + 1u;
    var route0_1 = NO_TAP;
    var gradient0_1 = T(0.0);
    if (window_row0_1 < params.out_height && window_column0_1 < params.out_width) {
        let maximum = load_value(pooled[pooled_base + window_row0_1 * params.output_stride_h + window_column0_1 * params.output_stride_w]);
        gradient0_1 = load_value(grad[grad_base + window_row0_1 * params.grad_stride_h + window_column0_1 * params.grad_stride_w]);
        if (inside1_3 && matches(value1_3, maximum)) { route0_1 = 8u; }
        if (inside1_2 && matches(value1_2, maximum)) { route0_1 = 7u; }
        if (inside1_1 && matches(value1_1, maximum)) { route0_1 = 6u; }
        if (inside0_3 && matches(value0_3, maximum)) { route0_1 = 5u; }
        if (inside0_2 && matches(value0_2, maximum)) { route0_1 = 4u; }
        if (inside0_1 && matches(value0_1, maximum)) { route0_1 = 3u; }
        if (insidem1_3 && matches(valuem1_3, maximum)) { route0_1 = 2u; }
        if (insidem1_2 && matches(valuem1_2, maximum)) { route0_1 = 1u; }
        if (insidem1_1 && matches(valuem1_1, maximum)) { route0_1 = 0u; }
    }
    let window_row1_0 = block_row + 1u;
    let window_column1_0 = block_column + 0u;
    var route1_0 = NO_TAP;
    var gradient1_0 = T(0.0);
    if (window_row1_0 < params.out_height && window_column1_0 < params.out_width) {
        let maximum = load_value(pooled[pooled_base + window_row1_0 * params.output_stride_h + window_column1_0 * params.output_stride_w]);
        gradient1_0 = load_value(grad[grad_base + window_row1_0 * params.grad_stride_h + window_column1_0 * params.grad_stride_w]);
        if (inside3_1 && matches(value3_1, maximum)) { route1_0 = 8u; }
        if (inside3_0 && matches(value3_0, maximum)) { route1_0 = 7u; }
        if (inside3_m1 && matches(value3_m1, maximum)) { route1_0 = 6u; }
        if (inside2_1 && matches(value2_1, maximum)) { route1_0 = 5u; }
        if (inside2_0 && matches(value2_0, maximum)) { route1_0 = 4u; }
        if (inside2_m1 && matches(value2_m1, maximum)) { route1_0 = 3u; }
        if (inside1_1 && matches(value1_1, maximum)) { route1_0 = 2u; }
        if (inside1_0 && matches(value1_0, maximum)) { route1_0 = 1u; }
        if (inside1_m1 && matches(value1_m1, maximum)) { route1_0 = 0u; }
    }
    let window_row1_1 = block_row + 1u;
    let window_column1_1 = block_column + 1u;
    var route1_1 = NO_TAP;
    var gradient1_1 = T(0.0);
    if (window_row1_1 < params.out_height && window_column1_1 < params.out_width) {
        let maximum = load_value(pooled[pooled_base + window_row1_1 * params.output_stride_h + window_column1_1 * params.output_stride_w]);
        gradient1_1 = load_value(grad[grad_base + window_row1_1 * params.grad_stride_h + window_column1_1 * params.grad_stride_w]);
        if (inside3_3 && matches(value3_3, maximum)) { route1_1 = 8u; }
        if (inside3_2 && matches(value3_2, maximum)) { route1_1 = 7u; }
        if (inside3_1 && matches(value3_1, maximum)) { route1_1 = 6u; }
        if (inside2_3 && matches(value2_3, maximum)) { route1_1 = 5u; }
        if (inside2_2 && matches(value2_2, maximum)) { route1_1 = 4u; }
        if (inside2_1 && matches(value2_1, maximum)) { route1_1 = 3u; }
        if (inside1_3 && matches(value1_3, maximum)) { route1_1 = 2u; }
        if (inside1_2 && matches(value1_2, maximum)) { route1_1 = 1u; }
        if (inside1_1 && matches(value1_1, maximum)) { route1_1 = 0u; }
    }
    if (block_row * 2u + 0u < params.height && block_column * 2u + 0u < params.width) {
        var sum = T(0.0);
        if (route0_0 == 4u) { sum = sum + gradient0_0; }
        grad_input[(plane * params.height + block_row * 2u + 0u) * params.width + block_column * 2u + 0u] = store_value(sum);
    }
    if (block_row * 2u + 0u < params.height && block_column * 2u + 1u < params.width) {
        var sum = T(0.0);
        if (route0_0 == 5u) { sum = sum + gradient0_0; }
        if (route0_1 == 3u) { sum = sum + gradient0_1; }
        grad_input[(plane * params.height + block_row * 2u + 0u) * params.width + block_column * 2u + 1u] = store_value(sum);
    }
    if (block_row * 2u + 1u < params.height && block_column * 2u + 0u < params.width) {
        var sum = T(0.0);
        if (route0_0 == 7u) { sum = sum + gradient0_0; }
        if (route1_0 == 1u) { sum = sum + gradient1_0; }
        grad_input[(plane * params.height + block_row * 2u + 1u) * params.width + block_column * 2u + 0u] = store_value(sum);
    }
    if (block_row * 2u + 1u < params.height && block_column * 2u + 1u < params.width) {
        var sum = T(0.0);
        if (route0_0 == 8u) { sum = sum + gradient0_0; }
        if (route0_1 == 6u) { sum = sum + gradient0_1; }
        if (route1_0 == 2u) { sum = sum + gradient1_0; }
        if (route1_1 == 0u) { sum = sum + gradient1_1; }
        grad_input[(plane * params.height + block_row * 2u + 1u) * params.width + block_column * 2u + 1u] = store_value(sum);
    }
}
