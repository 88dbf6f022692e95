//! The vectorized max pooling forward (`PoolKernel::MaxPool2dVectorized`) for the windows that
//! halve an image ([`HalvingWindow`]: 1 to 3 taps along each axis, stride 2, padding
//! `(k - 1) / 2`, dilation 1 — ResNet's 3 x 3 / 2 / 1 and the plain 2 x 2 / 2 among them) over
//! a contiguous NCHW input whose rows split into 16-byte vectors.
//!
//! Why: max pooling moves each input byte once and does almost no arithmetic, so its speed is
//! the speed at which it reads memory. The tiled kernel (`pool/tiled.rs`) reads one element
//! per invocation into workgroup memory and waits at barriers; here every global read is a
//! whole 16-byte vector and nothing is staged.
//!
//! Design: a vector holds `lanes` input columns (8 for f16, 4 for f32), and the stride-2
//! outputs over them are `lanes / 2` consecutive outputs of one row. One invocation takes one
//! output row's group of them: for each of the window's input rows it loads the vector under
//! the group (rows outside the image read -inf, and are never loaded), plus, for a 3-wide
//! window, the last column of the vector before it (-inf at the left border: that tap is the
//! padding), then writes its `lanes / 2` maxima as one 8-byte store. Neighbouring invocations
//! take neighbouring vectors of the same rows, so their loads and stores are coalesced; the
//! extra left-column read hits the vector the neighbour loads. Values are compared in their
//! stored type (f16 natively: the output is one of the inputs, bit for bit), in the window's
//! row-major order with the generic kernel's test (`shaders/max_pool2d.wgsl`): a NaN in the
//! window gives that first NaN, padding never wins over a real value, -inf inputs pool to -inf.
//!
//! The grid is flat — planes x output rows x vectors per row, 256 invocations a workgroup —
//! and `GpuStorage::launch` splits it over y past the device's workgroup limit. [`plan`]
//! decides where the kernel applies; `GpuStorage::max_pool2d` (`pool/`) falls back to the
//! tiled and generic kernels everywhere else.

use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, vector_lanes, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{PoolShape, Window};
use crate::layout::Layout;
use std::fmt::Write;

#[cfg(test)]
mod tests;

kernel_params! {
    /// Parameters of the vectorized max pooling forward (`pool/vectorized.rs`).
    struct HalvingParams {
        /// Invocations that write: planes x output rows x vectors per input row.
        count: u32,
        /// Input rows `h`.
        height: u32,
        /// Output rows `oh`.
        out_height: u32,
        /// 16-byte vectors per input row (`w / lanes`), as many as output groups per row.
        row_vectors: u32,
        /// The input view's offset, in vectors.
        input_offset: u32,
    }
}

/// A window that halves the image: `kernel_h x kernel_w` taps, each 1, 2 or 3, stride 2 along
/// both axes, padding `(k - 1) / 2` (1 for 3 taps, else 0), dilation 1. On an even width `w`
/// its output is `w / 2` wide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HalvingWindow {
    kernel_h: u8,
    kernel_w: u8,
}

impl HalvingWindow {
    /// ResNet's max pooling: 3 x 3, stride 2, padding 1 (the tests' and snapshots' instance).
    #[cfg(test)]
    pub(crate) const RESNET: HalvingWindow = HalvingWindow {
        kernel_h: 3,
        kernel_w: 3,
    };

    /// `window` as a halving window, or `None` when it is not one.
    pub(crate) fn of(window: &Window) -> Option<HalvingWindow> {
        let (kernel_h, kernel_w) = window.kernel;
        let halving = (1..=3).contains(&kernel_h)
            && (1..=3).contains(&kernel_w)
            && window.stride == (2, 2)
            && window.padding == ((kernel_h - 1) / 2, (kernel_w - 1) / 2)
            && window.dilation == (1, 1);
        if !halving {
            return None;
        }
        Some(HalvingWindow {
            kernel_h: u8::try_from(kernel_h).ok()?,
            kernel_w: u8::try_from(kernel_w).ok()?,
        })
    }

    /// Every halving window (the catalogue's instances).
    pub(crate) fn all() -> Vec<HalvingWindow> {
        (1..=3)
            .flat_map(|kernel_h| (1..=3).map(move |kernel_w| HalvingWindow { kernel_h, kernel_w }))
            .collect()
    }

    /// `(kernel_h, kernel_w)`.
    pub(super) fn kernel(self) -> (usize, usize) {
        (usize::from(self.kernel_h), usize::from(self.kernel_w))
    }

    /// `(padding_h, padding_w)`: 1 for a 3-tap axis, else 0.
    pub(super) fn padding(self) -> (usize, usize) {
        let (kernel_h, kernel_w) = self.kernel();
        ((kernel_h - 1) / 2, (kernel_w - 1) / 2)
    }
}

/// The window the vectorized kernel runs for pooling the view `layout` of `dtype` data
/// (`shape` its checked geometry), or `None` where it does not apply. It applies when the
/// window halves (`HalvingWindow::of`), the dtype is F16 or F32, the view is contiguous, its
/// offset and width are multiples of the lanes (8 for f16, 4 for f32: every row is whole
/// aligned vectors), and the output width is half the input width (true for every even width
/// with these windows).
pub(super) fn plan(dtype: DType, layout: &Layout, shape: &PoolShape) -> Option<HalvingWindow> {
    let window = HalvingWindow::of(&shape.window)?;
    let lanes = vector_lanes(dtype)?;
    let width = shape.input.1;
    let applies = layout.is_contiguous()
        && layout.offset.is_multiple_of(lanes)
        && width > 0
        && width.is_multiple_of(lanes)
        && shape.output.1 * 2 == width;
    applies.then_some(window)
}

#[cfg(test)]
thread_local! {
    /// Tests: vectorized forwards recorded by this thread.
    pub(crate) static RUNS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Record the vectorized forward of `input` (the view `layout`, which [`plan`] accepted for
/// `window`) into the contiguous `output`.
pub(super) fn dispatch(
    input: &GpuStorage,
    layout: &Layout,
    shape: &PoolShape,
    window: HalvingWindow,
    output: &GpuStorage,
) -> Result<()> {
    // `plan` accepted only dtypes with lanes; 4 keeps this total without a panic.
    let lanes = vector_lanes(input.dtype).unwrap_or(4);
    let row_vectors = shape.input.1 / lanes;
    let count = shape.batch * shape.channels * shape.output.0 * row_vectors;
    let header = HalvingParams {
        count: word(count)?,
        height: word(shape.input.0)?,
        out_height: word(shape.output.0)?,
        row_vectors: word(row_vectors)?,
        input_offset: word(layout.offset / lanes)?,
    };
    GpuStorage::launch(
        &input.device,
        &PoolKernel::MaxPool2dVectorized {
            dtype: input.dtype,
            window,
        },
        &Params::with_header(&header, 0),
        &[input.raw()?, output.raw()?],
        count,
    )?;
    #[cfg(test)]
    RUNS.with(|runs| runs.set(runs.get() + 1));
    Ok(())
}

/// How the kernel reads and writes `dtype`: the WGSL type of one 16-byte input vector, of one
/// invocation's output, and the expression of lane `lane` of a vector named `vector`. F16 reads
/// `mat2x4<f16>` (two columns of four halves); every other dtype four elements of its storage
/// type (only F32 is planned).
pub(super) fn vector_types(
    dtype: DType,
) -> (&'static str, &'static str, fn(&str, usize) -> String) {
    match dtype {
        DType::F16 => ("mat2x4<S>", "vec4<S>", |vector, lane| {
            format!("{vector}[{}][{}]", lane / 4, lane % 4)
        }),
        DType::F32
        | DType::BF16
        | DType::F64
        | DType::I32
        | DType::U32
        | DType::U8
        | DType::Bool => ("vec4<S>", "vec2<S>", |vector, lane| {
            format!("{vector}[{lane}]")
        }),
    }
}

/// WGSL of `PoolKernel::MaxPool2dVectorized` for `dtype` and `window`.
pub(crate) fn source(dtype: DType, window: HalvingWindow) -> String {
    let lanes = vector_lanes(dtype).unwrap_or(4);
    let (input_type, output_type, lane) = vector_types(dtype);
    let (kernel_h, kernel_w) = window.kernel();
    let (padding_h, padding_w) = window.padding();
    // A row's values: index `column + padding_w` holds input column `column` of the vector
    // (`-padding_w..lanes`; column -1 is the previous vector's last).
    let row_length = lanes + padding_w;
    let mut text = value_header(dtype);
    text.push_str(HalvingParams::WGSL);
    text.push_str(COMMON);
    let _ = write!(
        text,
        r#"// Vectorized max pooling forward (pool/vectorized.rs): a {kernel_h}x{kernel_w} window, stride 2,
// padding {padding_h}x{padding_w}; {lanes} input columns and {outputs} outputs per invocation.
@group(0) @binding(1) var<storage, read> input: array<{input_type}>;
@group(0) @binding(2) var<storage, read_write> output: array<{output_type}>;

fn negative_infinity() -> S {{
    return S(bitcast<f32>(0xff800000u));
}}

// The columns of input row `row` (of the plane whose first row is `plane_row`) under vector
// `column_vector`, from the column before it when the window is 3 wide; -inf outside the image.
fn load_row(plane_row: u32, row: i32, column_vector: u32) -> array<S, {row_length}> {{
    var values: array<S, {row_length}>;
    for (var column = 0u; column < {row_length}u; column = column + 1u) {{
        values[column] = negative_infinity();
    }}
    if (row < 0 || row >= i32(params.height)) {{
        return values;
    }}
    let at = params.input_offset + (plane_row + u32(row)) * params.row_vectors + column_vector;
    let vector = input[at];
"#,
        outputs = lanes / 2,
    );
    for column in 0..lanes {
        let _ = writeln!(
            text,
            "    values[{}] = {};",
            column + padding_w,
            lane("vector", column)
        );
    }
    if padding_w == 1 {
        let _ = writeln!(
            text,
            "    if (column_vector > 0u) {{\n        values[0] = {};\n    }}",
            lane("input[at - 1u]", lanes - 1)
        );
    }
    let _ = write!(
        text,
        r#"    return values;
}}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let column_vector = i % params.row_vectors;
    let rest = i / params.row_vectors;
    let plane_row = (rest / params.out_height) * params.height;
    let top = i32((rest % params.out_height) * 2u) - {padding_h};
"#
    );
    for row in 0..kernel_h {
        let _ = writeln!(
            text,
            "    let row{row} = load_row(plane_row, top + {row}, column_vector);"
        );
    }
    let mut maxima = Vec::new();
    for out in 0..lanes / 2 {
        let _ = writeln!(text, "    var best{out} = negative_infinity();");
        // Output `out` reads columns `2 * out - padding_w + tap` of the vector: row-major
        // taps, as the generic kernel visits them.
        for row in 0..kernel_h {
            for tap in 0..kernel_w {
                let value = format!("row{row}[{}]", 2 * out + tap);
                let _ = writeln!(
                    text,
                    "    if (is_nan_value(T({value})) || {value} > best{out}) {{ best{out} = {value}; }}"
                );
            }
        }
        maxima.push(format!("best{out}"));
    }
    // Output vector `i` is this invocation's: output row `rest` holds `row_vectors` of them.
    let _ = write!(
        text,
        "    output[i] = {output_type}({});\n}}\n",
        maxima.join(", ")
    );
    text
}
