//! The max pooling gradient for the windows that halve an image ([`HalvingWindow`]: 1 to 3
//! taps along each axis, stride 2, padding `(k - 1) / 2`, dilation 1 — ResNet's 3 x 3 / 2 / 1
//! among them), `PoolPass::Halving`: one invocation per 2 x 2 block of the input gradient,
//! nothing staged, no barriers.
//!
//! Why: the tiled gradient (`pool/tiled.rs`) walks planes in turn through three barrier-
//! separated phases whose loads wait on each other, and took 581 µs on an H200 for ResNet-18's
//! `[64, 64, 112, 112]` in f32 and f16 alike: latency, not bandwidth. Here every invocation is
//! independent and issues all its loads at once.
//!
//! With stride 2, input row `2k + r` (`r` 0 or 1) is read by window row `k + d` at tap
//! `r + padding - 2d`, for the `d` that put that tap inside the kernel: for a 3-tap axis the
//! block's rows are read by windows `k` and `k + 1` only. So the block at `(2k, 2l)` needs the
//! routes of at most 2 x 2 windows. The invocation loads those windows' pooled maxima and
//! output gradients and the input under them (5 x 5 values for ResNet's window), routes each
//! window to its first tap (row-major) equal to its maximum — NaN matching NaN, padding never
//! — exactly as the generic two-pass kernels and the CPU do, then sums for each of its pixels
//! the gradients of the windows routed to it, in ascending window order (the two-pass
//! kernels' order, so the sums are the same). Neighbouring invocations take neighbouring
//! blocks of one row, so their loads share cache lines.

use super::{HalvingWindow, PoolParams};
use crate::backend::gpu::params::KernelParams;
use crate::backend::gpu::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use std::fmt::Write;

/// The window offsets `d` along one axis whose window reads some row `r` (0 or 1) of a block,
/// with the tap it reads: `(r, d, tap)` for every `tap = r + padding - 2d` inside `0..kernel`.
fn reads(kernel: usize, padding: usize) -> Vec<(usize, usize, usize)> {
    let mut found = Vec::new();
    for r in 0..2 {
        for d in 0..2 {
            let tap = (r + padding).checked_sub(2 * d);
            if let Some(tap) = tap.filter(|&tap| tap < kernel) {
                found.push((r, d, tap));
            }
        }
    }
    found
}

/// The distinct window offsets among `reads`, ascending.
fn offsets(reads: &[(usize, usize, usize)]) -> Vec<usize> {
    let mut offsets: Vec<usize> = reads.iter().map(|&(_, d, _)| d).collect();
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// WGSL of `KernelKey::MaxPool2dBackward { pass: PoolPass::Halving(window) }` for `dtype`.
/// Parameters: [`PoolParams`] with `count` the number of 2 x 2 blocks over every plane.
pub(crate) fn source(dtype: DType, window: HalvingWindow) -> String {
    let (kernel_h, kernel_w) = window.kernel();
    let (padding_h, padding_w) = window.padding();
    let (rows_read, columns_read) = (reads(kernel_h, padding_h), reads(kernel_w, padding_w));
    let (row_offsets, column_offsets) = (offsets(&rows_read), offsets(&columns_read));
    let mut text = value_header(dtype);
    text.push_str(PoolParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/pool_planes.wgsl"));
    let _ = write!(
        text,
        r#"// Max pooling gradient (pool/halving_backward.rs): a {kernel_h}x{kernel_w} window, stride 2, padding
// {padding_h}x{padding_w}; one invocation per 2x2 block of the input gradient.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<S>;

const NO_TAP: u32 = 0xffffffffu;

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: T, maximum: T) -> bool {{
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let block_columns = (params.width + 1u) / 2u;
    let block_rows = (params.height + 1u) / 2u;
    let block_column = i % block_columns;
    let rest = i / block_columns;
    let block_row = rest % block_rows;
    let plane = rest / block_rows;
    let input_base = plane_base(plane, params.input_offset, params.input_stride_n, params.input_stride_c);
    let pooled_base = plane_base(plane, params.output_offset, params.output_stride_n, params.output_stride_c);
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n, params.grad_stride_c);
"#
    );
    // The input rows and columns under the block's windows, relative to the block's corner:
    // `2d - padding + tap` for every window offset and tap.
    let span = |offsets: &[usize], kernel: usize, padding: usize| -> Vec<isize> {
        let mut positions: Vec<isize> = offsets
            .iter()
            .flat_map(|&d| (0..kernel).map(move |tap| (2 * d + tap) as isize - padding as isize))
            .collect();
        positions.sort_unstable();
        positions.dedup();
        positions
    };
    let input_rows = span(&row_offsets, kernel_h, padding_h);
    let input_columns = span(&column_offsets, kernel_w, padding_w);
    let name = |position: isize| {
        if position < 0 {
            format!("m{}", -position)
        } else {
            position.to_string()
        }
    };
    for &row in &input_rows {
        let _ = writeln!(
            text,
            "    let row{n} = i32(block_row * 2u) + ({row});\n    \
             let row_inside{n} = row{n} >= 0 && row{n} < i32(params.height);",
            n = name(row)
        );
    }
    for &column in &input_columns {
        let _ = writeln!(
            text,
            "    let column{n} = i32(block_column * 2u) + ({column});\n    \
             let column_inside{n} = column{n} >= 0 && column{n} < i32(params.width);",
            n = name(column)
        );
    }
    // Every input value once (0 outside the image: such taps never match, by position).
    for &row in &input_rows {
        for &column in &input_columns {
            let (r, c) = (name(row), name(column));
            let _ = writeln!(
                text,
                "    let inside{r}_{c} = row_inside{r} && column_inside{c};\n    \
                 var value{r}_{c} = T(0.0);\n    \
                 if (inside{r}_{c}) {{\n        \
                 value{r}_{c} = load_value(input[input_base + u32(row{r}) * params.input_stride_h \
                 + u32(column{c}) * params.input_stride_w]);\n    }}"
            );
        }
    }
    // Each window's maximum, gradient and route (NO_TAP outside the output).
    for &dh in &row_offsets {
        for &dw in &column_offsets {
            let _ = write!(
                text,
                r#"    let window_row{dh}_{dw} = block_row + {dh}u;
    let window_column{dh}_{dw} = block_column + {dw}u;
    var route{dh}_{dw} = NO_TAP;
    var gradient{dh}_{dw} = T(0.0);
    if (window_row{dh}_{dw} < params.out_height && window_column{dh}_{dw} < params.out_width) {{
        let maximum = load_value(pooled[pooled_base + window_row{dh}_{dw} * params.output_stride_h + window_column{dh}_{dw} * params.output_stride_w]);
        gradient{dh}_{dw} = load_value(grad[grad_base + window_row{dh}_{dw} * params.grad_stride_h + window_column{dh}_{dw} * params.grad_stride_w]);
"#
            );
            // Taps from last to first, so the first matching tap is the one kept.
            for ki in (0..kernel_h).rev() {
                for kj in (0..kernel_w).rev() {
                    let row = name((2 * dh + ki) as isize - padding_h as isize);
                    let column = name((2 * dw + kj) as isize - padding_w as isize);
                    let _ = writeln!(
                        text,
                        "        if (inside{row}_{column} && matches(value{row}_{column}, maximum)) {{ route{dh}_{dw} = {tap}u; }}",
                        tap = ki * kernel_w + kj
                    );
                }
            }
            text.push_str("    }\n");
        }
    }
    // Each pixel of the block: the gradients routed to it, ascending windows.
    for r in 0..2 {
        for c in 0..2 {
            let _ = write!(
                text,
                "    if (block_row * 2u + {r}u < params.height && block_column * 2u + {c}u < params.width) {{\n        \
                 var sum = T(0.0);\n"
            );
            for &(row_r, dh, tap_h) in rows_read.iter().filter(|read| read.0 == r) {
                debug_assert_eq!(row_r, r);
                for &(_, dw, tap_w) in columns_read.iter().filter(|read| read.0 == c) {
                    let _ = writeln!(
                        text,
                        "        if (route{dh}_{dw} == {tap}u) {{ sum = sum + gradient{dh}_{dw}; }}",
                        tap = tap_h * kernel_w + tap_w
                    );
                }
            }
            let _ = write!(
                text,
                "        grad_input[(plane * params.height + block_row * 2u + {r}u) * params.width + block_column * 2u + {c}u] = store_value(sum);\n    }}\n"
            );
        }
    }
    text.push_str("}\n");
    text
}

#[cfg(test)]
mod tests {
    use super::reads;

    #[test]
    fn block_rows_are_read_by_the_expected_windows() {
        // 3 taps, padding 1: row 2k by window k (tap 1); row 2k + 1 by window k (tap 2)
        // and window k + 1 (tap 0).
        assert_eq!(reads(3, 1), vec![(0, 0, 1), (1, 0, 2), (1, 1, 0)]);
        // 2 taps, no padding: rows 2k and 2k + 1 by window k.
        assert_eq!(reads(2, 0), vec![(0, 0, 0), (1, 0, 1)]);
        // 1 tap: only row 2k.
        assert_eq!(reads(1, 0), vec![(0, 0, 0)]);
    }
}
