//! The vectorized max pooling gradient (`PoolPass::Halving`) for the windows that halve an
//! image ([`HalvingWindow`], the forward's family in `pool/vectorized.rs`: ResNet's 3 x 3 / 2 /
//! 1 among them) over contiguous NCHW operands whose rows split into 16-byte vectors.
//!
//! Why: the tiled gradient (`pool/tiled.rs`) stages one element per invocation through
//! workgroup memory and waits at three barriers per plane; on an H200 it took 584 µs for
//! ResNet-18's `[64, 64, 112, 112]` at batch 64 (about 0.5 TB/s). Here nothing is staged and
//! every input read and gradient write is a whole vector.
//!
//! Design: a stride-2 window reaches input rows `2r` and `2r + 1` only from window rows `r`
//! and `r + 1`, and the `lanes` input columns of one vector only from the `lanes / 2 + 1`
//! window columns starting at the vector's first output. One invocation takes one block of
//! [`PAIRS`] such row pairs times a vector of columns, and:
//!
//! 1. loads the input rows its windows cover (each the vector, the previous vector's last
//!    column for a 3-wide window, the next vector's first columns), never reading outside the
//!    image, and tests each value for NaN once;
//! 2. routes each of its windows as the generic kernels do (`shaders/max_pool2d_route.wgsl`):
//!    the first tap in row-major order whose input equals the pooled output, NaN matching NaN,
//!    taps outside the image never matching (by position, so an input of -inf still routes)
//!    — without branches, by selects over the taps in reverse;
//! 3. sums for each of its pixels, in ascending window order and in f32, the output gradient
//!    of every window routed to that pixel — which windows and taps can reach a pixel is fixed
//!    by its place in the block, so the generator unrolls exactly those terms;
//! 4. writes the block's rows as vector stores.
//!
//! Neighbouring blocks route their shared windows again instead of
//! passing routes through memory. The same routes and the same sums in the same order as the
//! CPU reference (`cpu/pool.rs`), so the results are identical. [`plan`] says where it
//! applies; `GpuStorage::max_pool2d_backward` (`pool/`) takes the tiled and generic
//! kernels elsewhere.

use super::vectorized::HalvingWindow;
use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::PoolShape;
use crate::layout::Layout;
use std::fmt::Write;

/// Input row pairs per invocation. On an H200 (ResNet-18's gradient at batch 64) one pair took
/// 323 µs, two 287 (fewer rows loaded twice); one pair with branching routes 283.
const PAIRS: usize = 2;

kernel_params! {
    /// Parameters of the vectorized max pooling gradient (`pool/halving_backward.rs`).
    struct HalvingBackwardParams {
        /// Invocations that write: planes x row blocks x vectors per input row.
        count: u32,
        /// Input rows `h`.
        height: u32,
        /// Blocks of `PAIRS` row pairs: `ceil(ceil(h / 2) / PAIRS)`.
        row_blocks: u32,
        /// 16-byte vectors per input row (`w / lanes`).
        row_vectors: u32,
        /// Output rows `oh`.
        out_height: u32,
        /// Output columns `ow` (`w / 2`).
        out_width: u32,
        /// The input view's offset, in vectors.
        input_offset: u32,
        /// The pooled output's offset, in elements.
        output_offset: u32,
        /// The output gradient's offset, in elements.
        grad_offset: u32,
    }
}

/// The window the vectorized gradient runs for pooling the view `layout` of `dtype` data
/// into `output_layout`, with the output gradient `grad_layout` (`shape` the checked
/// geometry), or `None` where it does not apply: the forward's conditions
/// (`vectorized::plan`: a halving window, F16 or F32, a contiguous input from an offset of
/// whole vectors, rows of whole vectors, an output half as wide), and contiguous output and
/// output gradient views.
pub(super) fn plan(
    dtype: DType,
    (layout, output_layout, grad_layout): (&Layout, &Layout, &Layout),
    shape: &PoolShape,
) -> Option<HalvingWindow> {
    let window = super::vectorized::plan(dtype, layout, shape)?;
    (output_layout.is_contiguous() && grad_layout.is_contiguous()).then_some(window)
}

#[cfg(test)]
thread_local! {
    /// Tests: vectorized gradients recorded by this thread.
    pub(crate) static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Record the vectorized gradient into the contiguous `grad_input`: `input`, `output` and
/// `grad` with their views, which [`plan`] accepted for `window`.
pub(super) fn dispatch(
    [(input, layout), (output, output_layout), (grad, grad_layout)]: [(&GpuStorage, &Layout); 3],
    shape: &PoolShape,
    window: HalvingWindow,
    grad_input: &GpuStorage,
) -> Result<()> {
    // `plan` accepted only dtypes with lanes; 4 keeps this total without a panic.
    let lanes = vector_lanes(input.dtype).unwrap_or(4);
    let row_vectors = shape.input.1 / lanes;
    let row_blocks = shape.input.0.div_ceil(2).div_ceil(PAIRS);
    let count = shape.batch * shape.channels * row_blocks * row_vectors;
    let header = HalvingBackwardParams {
        count: word(count)?,
        height: word(shape.input.0)?,
        row_blocks: word(row_blocks)?,
        row_vectors: word(row_vectors)?,
        out_height: word(shape.output.0)?,
        out_width: word(shape.output.1)?,
        input_offset: word(layout.offset / lanes)?,
        output_offset: word(output_layout.offset)?,
        grad_offset: word(grad_layout.offset)?,
    };
    GpuStorage::launch(
        &input.device,
        &PoolKernel::MaxPool2dBackward {
            dtype: input.dtype,
            pass: super::PoolPass::Halving(window),
        },
        &Params::with_header(&header, 0),
        &[input.raw()?, output.raw()?, grad.raw()?, grad_input.raw()?],
        count,
    )?;
    #[cfg(test)]
    RUNS.with(|runs| runs.set(runs.get() + 1));
    Ok(())
}

/// The vector expression of `values` (`lanes` of them) for a store.
fn vector_of(dtype: DType, values: &[String]) -> String {
    match dtype {
        DType::F16 => format!(
            "mat2x4<S>(vec4<S>({}), vec4<S>({}))",
            values[..4].join(", "),
            values[4..].join(", ")
        ),
        DType::F32
        | DType::BF16
        | DType::F64
        | DType::I32
        | DType::U32
        | DType::U8
        | DType::Bool => {
            format!("vec4<S>({})", values.join(", "))
        }
    }
}

/// WGSL of `PoolKernel::MaxPool2dBackward { pass: PoolPass::Halving(window) }` for `dtype`.
pub(crate) fn source(dtype: DType, window: HalvingWindow) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    // The 16-byte vector's type and its lanes, as the forward reads them.
    let (vector, _, lane) = super::vectorized::vector_types(dtype);
    let (kernel_h, kernel_w) = window.kernel();
    let (padding_h, padding_w) = window.padding();
    // Loaded input rows `top + t` for t < rows, each as values `x{t}_{u}`: input column
    // `lanes * column_vector - padding_w + u` for u < columns.
    let rows = 2 * PAIRS + kernel_h;
    let columns = lanes + kernel_w;
    // Columns past the vector: from the next one.
    let after = columns - padding_w - lanes;
    let window_rows = PAIRS + 1;
    let window_columns = lanes / 2 + 1;
    let mut text = value_header(dtype);
    text.push_str(HalvingBackwardParams::WGSL);
    text.push_str(COMMON);
    let _ = write!(
        text,
        r#"// Vectorized max pooling gradient (pool/halving_backward.rs): a {kernel_h}x{kernel_w} window, stride 2,
// padding {padding_h}x{padding_w}; {out_rows} input rows x {lanes} columns per invocation.
@group(0) @binding(1) var<storage, read> input: array<{vector}>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<{vector}>;

const NO_TAP: u32 = 0xffffffffu;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let column_vector = i % params.row_vectors;
    let rest = i / params.row_vectors;
    let pair = (rest % params.row_blocks) * {PAIRS}u;
    let plane = rest / params.row_blocks;
    let plane_row = plane * params.height;
    let top = i32(pair * 2u) - {padding_h};
    let first_window_column = column_vector * {half}u;
    let has_left = column_vector > 0u;
    let has_right = column_vector + 1u < params.row_vectors;
"#,
        out_rows = 2 * PAIRS,
        half = lanes / 2
    );
    // 1. The input rows, never read outside the image (zeros there, never routed to), with
    // each value's NaN test done once.
    for t in 0..rows {
        let _ = writeln!(
            text,
            "    let inside_row{t} = top + {t} >= 0 && top + {t} < i32(params.height);"
        );
        for u in 0..columns {
            let _ = writeln!(text, "    var x{t}_{u} = S(0.0);");
        }
        let _ = writeln!(
            text,
            "    if (inside_row{t}) {{\n        \
             let at = params.input_offset + (plane_row + u32(top + {t})) * params.row_vectors + column_vector;\n        \
             let middle = input[at];"
        );
        for column in 0..lanes {
            let _ = writeln!(
                text,
                "        x{t}_{} = {};",
                column + padding_w,
                lane("middle", column)
            );
        }
        if padding_w == 1 {
            let _ = writeln!(
                text,
                "        if (has_left) {{ x{t}_0 = {}; }}",
                lane("input[at - 1u]", lanes - 1)
            );
        }
        if after > 0 {
            let _ = writeln!(
                text,
                "        if (has_right) {{\n            let next = input[at + 1u];"
            );
            for column in 0..after {
                let _ = writeln!(
                    text,
                    "            x{t}_{} = {};",
                    padding_w + lanes + column,
                    lane("next", column)
                );
            }
            text.push_str("        }\n");
        }
        text.push_str("    }\n");
        for u in 0..columns {
            let _ = writeln!(text, "    let nan{t}_{u} = is_nan_value(T(x{t}_{u}));");
        }
    }
    // 2. Each window (wr, wc) — window row pair + wr, column first_window_column + wc — routed
    // without branches: taps in reverse, so that the first matching tap is the one kept.
    for wr in 0..window_rows {
        for wc in 0..window_columns {
            let _ = write!(
                text,
                r#"    let exists{wr}_{wc} = pair + {wr}u < params.out_height && first_window_column + {wc}u < params.out_width;
    var maximum{wr}_{wc} = S(0.0);
    var gradient{wr}_{wc} = T(0.0);
    if (exists{wr}_{wc}) {{
        let at = (plane * params.out_height + pair + {wr}u) * params.out_width + first_window_column + {wc}u;
        maximum{wr}_{wc} = pooled[params.output_offset + at];
        gradient{wr}_{wc} = T(grad[params.grad_offset + at]);
    }}
    let nan_maximum{wr}_{wc} = is_nan_value(T(maximum{wr}_{wc}));
    var route{wr}_{wc} = NO_TAP;
"#
            );
            for a in (0..kernel_h).rev() {
                for b in (0..kernel_w).rev() {
                    let (t, u) = (2 * wr + a, 2 * wc + b);
                    let mut condition = format!("exists{wr}_{wc} && inside_row{t}");
                    if padding_w == 1 && u == 0 {
                        condition.push_str(" && has_left");
                    }
                    let _ = writeln!(
                        text,
                        "    route{wr}_{wc} = select(route{wr}_{wc}, {}u, {condition} && (x{t}_{u} == maximum{wr}_{wc} || (nan{t}_{u} && nan_maximum{wr}_{wc})));",
                        a * kernel_w + b
                    );
                }
            }
        }
    }
    // 3. Gather: pixel (dy, dx) of the block is input (2 pair + dy, lanes v + dx); window
    // (wr, wc) reads it at tap (dy - 2 wr + padding_h, dx - 2 wc + padding_w) when that is a
    // tap. Ascending windows, as the CPU adds them. 4. The block's rows inside the image.
    for dy in 0..2 * PAIRS {
        let mut sums = Vec::new();
        for dx in 0..lanes {
            let name = format!("sum{dy}_{dx}");
            let _ = writeln!(text, "    var {name} = T(0.0);");
            for wr in 0..window_rows {
                for wc in 0..window_columns {
                    let a = (dy + padding_h).checked_sub(2 * wr);
                    let b = (dx + padding_w).checked_sub(2 * wc);
                    if let (Some(a), Some(b)) = (a, b) {
                        if a < kernel_h && b < kernel_w {
                            let _ = writeln!(
                                text,
                                "    {name} = {name} + select(T(0.0), gradient{wr}_{wc}, route{wr}_{wc} == {}u);",
                                a * kernel_w + b
                            );
                        }
                    }
                }
            }
            sums.push(format!("store_value({name})"));
        }
        let _ = writeln!(
            text,
            "    if (pair * 2u + {dy}u < params.height) {{\n        \
             grad_input[(plane_row + pair * 2u + {dy}u) * params.row_vectors + column_vector] = {};\n    }}",
            vector_of(dtype, &sums)
        );
    }
    text.push_str("}\n");
    text
}
