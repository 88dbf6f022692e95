//! Max pooling kernels generated for one window ([`FixedWindow`]: its sizes, strides,
//! paddings and dilations as WGSL constants, the taps unrolled), tiled through workgroup
//! memory so that every global read is coalesced and each input element is read about once:
//!
//! - **forward** (`PoolKernel::MaxPool2d { window: Some(..) }`): a workgroup takes an 8 x 32
//!   tile of one plane's output; it stages the input rows and columns those windows read
//!   (padding as -inf), then each invocation takes the maximum of its window from there.
//! - **gradient** (`PoolPass::Tiled`): the routing and gathering passes of `pool/` in one
//!   kernel. A workgroup takes a 16 x 64 tile of one plane's input gradient; it stages the
//!   input under every window that reaches the tile, finds each window's routed tap (the
//!   first tap, row-major, equal to the pooled output; NaN matches NaN) and its output
//!   gradient into workgroup memory, then each invocation sums, in ascending window order,
//!   the gradients routed to its pixels — the same sums in the same order as the two-pass
//!   kernels, so the results are identical.
//!
//! Tiles go over `workgroup.x`; each workgroup takes its tile of every `workgroups.y`-th
//! plane in turn (one workgroup per tile and plane measured slower: launches dominated). Windows too large
//! for the kernels' workgroup memory budget take the generic kernels of `pool/`.

use super::GpuDevice;
use super::PoolParams;
use crate::backend::gpu::pool::kernel::PoolKernel;
use crate::backend::gpu::runtime::params::{word, KernelParams};
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::geometry::{PoolShape, Window};
use std::fmt::Write;

/// Output rows and columns of a forward tile (one per invocation).
const OUT_ROWS: usize = 8;
const OUT_COLUMNS: usize = 32;

/// Input-gradient rows and columns of a gradient tile (four per invocation).
const GRAD_ROWS: usize = 16;
const GRAD_COLUMNS: usize = 64;

/// Workgroup memory the tiled kernels may use (bytes).
const WORKGROUP_BUDGET: usize = 16 * 1024;

/// The most taps a window may have to be unrolled.
const MAX_TAPS: usize = 64;

/// The window a tiled kernel is generated for: `[kernel_h, kernel_w, stride_h, stride_w,
/// padding_h, padding_w, dilation_h, dilation_w]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedWindow([u8; 8]);

impl FixedWindow {
    /// ResNet's max pooling: 3 x 3, stride 2, padding 1 (the catalogue's instance).
    pub(crate) const RESNET: FixedWindow = FixedWindow([3, 3, 2, 2, 1, 1, 1, 1]);

    /// `window`'s numbers, or `None` when one is over 255 or a size or stride is 0.
    pub(crate) fn of(window: &Window) -> Option<FixedWindow> {
        let numbers = [
            window.kernel.0,
            window.kernel.1,
            window.stride.0,
            window.stride.1,
            window.padding.0,
            window.padding.1,
            window.dilation.0,
            window.dilation.1,
        ];
        let mut fixed = [0u8; 8];
        for (slot, number) in fixed.iter_mut().zip(numbers) {
            *slot = u8::try_from(number).ok()?;
        }
        let [kh, kw, sh, sw, _, _, dh, dw] = fixed;
        if [kh, kw, sh, sw, dh, dw].contains(&0) {
            return None;
        }
        Some(FixedWindow(fixed))
    }

    fn kernel(self) -> (usize, usize) {
        (usize::from(self.0[0]), usize::from(self.0[1]))
    }

    fn stride(self) -> (usize, usize) {
        (usize::from(self.0[2]), usize::from(self.0[3]))
    }

    fn padding(self) -> (usize, usize) {
        (usize::from(self.0[4]), usize::from(self.0[5]))
    }

    fn dilation(self) -> (usize, usize) {
        (usize::from(self.0[6]), usize::from(self.0[7]))
    }

    /// `(rows, columns)` the taps of one window span, minus one: `(k - 1) * dilation`.
    fn span(self) -> (usize, usize) {
        let ((kh, kw), (dh, dw)) = (self.kernel(), self.dilation());
        ((kh - 1) * dh, (kw - 1) * dw)
    }

    /// The input rows and columns a forward tile stages.
    fn forward_region(self) -> (usize, usize) {
        let ((sh, sw), (span_h, span_w)) = (self.stride(), self.span());
        (
            (OUT_ROWS - 1) * sh + span_h + 1,
            (OUT_COLUMNS - 1) * sw + span_w + 1,
        )
    }

    /// The windows (rows, columns) that reach a gradient tile: at most
    /// `floor((tile - 1 + span) / stride) + 1` along each axis.
    fn gradient_windows(self) -> (usize, usize) {
        let ((sh, sw), (span_h, span_w)) = (self.stride(), self.span());
        (
            (GRAD_ROWS - 1 + span_h) / sh + 1,
            (GRAD_COLUMNS - 1 + span_w) / sw + 1,
        )
    }

    /// The input rows and columns under those windows.
    fn gradient_region(self) -> (usize, usize) {
        let ((sh, sw), (span_h, span_w)) = (self.stride(), self.span());
        let (rows, columns) = self.gradient_windows();
        (
            (rows - 1) * sh + span_h + 1,
            (columns - 1) * sw + span_w + 1,
        )
    }

    fn taps(self) -> usize {
        let (kh, kw) = self.kernel();
        kh * kw
    }

    fn forward_fits(self) -> bool {
        let (rows, columns) = self.forward_region();
        self.taps() <= MAX_TAPS && rows * columns * 4 <= WORKGROUP_BUDGET
    }

    fn gradient_fits(self) -> bool {
        let (rows, columns) = self.gradient_region();
        let (window_rows, window_columns) = self.gradient_windows();
        let bytes = (rows * columns + 2 * window_rows * window_columns) * 4;
        self.taps() <= MAX_TAPS && bytes <= WORKGROUP_BUDGET
    }

    /// WGSL constants of the window.
    fn constants(self) -> String {
        let ((kh, kw), (sh, sw), (ph, pw), (dh, dw)) = (
            self.kernel(),
            self.stride(),
            self.padding(),
            self.dilation(),
        );
        format!(
            "const KERNEL_W: u32 = {kw}u;\nconst STRIDE_H: u32 = {sh}u;\n\
             const STRIDE_W: u32 = {sw}u;\nconst PADDING_H: u32 = {ph}u;\n\
             const PADDING_W: u32 = {pw}u;\nconst DILATION_H: u32 = {dh}u;\n\
             const DILATION_W: u32 = {dw}u;\nconst SPAN_H: u32 = {}u;\nconst SPAN_W: u32 = {}u;\n\
             // kernel {kh}x{kw}\n",
            (kh - 1) * dh,
            (kw - 1) * dw
        )
    }
}

/// Workgroups a tiled call aims for: each takes its tile of every `y`-th plane in turn.
const TARGET_WORKGROUPS: usize = 4096;

/// The grid of a call's tiled kernel: `tile` rows x columns over `(rows, columns)` along x,
/// plane groups along y; `None` beyond the device's limits.
fn grid(
    device: &GpuDevice,
    shape: &PoolShape,
    (rows, columns): (usize, usize),
    (tile_rows, tile_columns): (usize, usize),
) -> Option<(u32, u32, u32)> {
    let max = device.context().limits.max_compute_workgroups_per_dimension as usize;
    let tiles = rows.div_ceil(tile_rows) * columns.div_ceil(tile_columns);
    let planes = shape.batch * shape.channels;
    let y = TARGET_WORKGROUPS
        .div_ceil(tiles.max(1))
        .min(planes)
        .min(max)
        .max(1);
    if tiles == 0 || tiles > max {
        return None;
    }
    Some((tiles as u32, y as u32, 1))
}

/// Record the tiled kernel `key` over `grid` for `shape`, with `header` (its `count`
/// becomes the number of planes the workgroups walk).
pub(super) fn dispatch(
    device: &GpuDevice,
    (key, shape): (&PoolKernel, &PoolShape),
    header: PoolParams,
    buffers: &[&wgpu::Buffer],
    grid: (u32, u32, u32),
) -> Result<()> {
    let header = PoolParams {
        count: word(shape.batch * shape.channels)?,
        ..header
    };
    let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&header));
    device.context().dispatch(key, words, buffers, grid)
}

/// The forward's tiled kernel for `shape`, and its grid; `None` where the generic kernel runs.
pub(super) fn forward_plan(
    device: &GpuDevice,
    shape: &PoolShape,
) -> Option<(FixedWindow, (u32, u32, u32))> {
    let window = FixedWindow::of(&shape.window).filter(|w| w.forward_fits())?;
    let grid = grid(device, shape, shape.output, (OUT_ROWS, OUT_COLUMNS))?;
    Some((window, grid))
}

/// The gradient's tiled kernel for `shape`, and its grid; `None` where the two passes run.
pub(super) fn backward_plan(
    device: &GpuDevice,
    shape: &PoolShape,
) -> Option<(FixedWindow, (u32, u32, u32))> {
    let window = FixedWindow::of(&shape.window).filter(|w| w.gradient_fits())?;
    let grid = grid(device, shape, shape.input, (GRAD_ROWS, GRAD_COLUMNS))?;
    Some((window, grid))
}

/// The shared start of both kernels: value header, parameters, the plane helper, constants.
fn header(dtype: DType, window: FixedWindow) -> String {
    let mut text = value_header(dtype);
    text.push_str(PoolParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/pool_planes.wgsl"));
    text.push_str(&window.constants());
    text.push_str(
        r#"fn negative_infinity() -> T {
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
"#,
    );
    text
}

/// Staging of a `size`-element region, unrolled: every invocation issues all its loads
/// before its first workgroup store, so the loads' latencies overlap (a loop would wait for
/// each load in turn).
fn staging(size: usize) -> String {
    let mut text = String::new();
    let rounds = size.div_ceil(256);
    for round in 0..rounds {
        let _ = writeln!(
            text,
            "    let staged{round} = staged_value(local + {}u, top, left, base, live);",
            round * 256
        );
    }
    for round in 0..rounds {
        let _ = writeln!(
            text,
            "    if (local + {at}u < REGION_SIZE) {{\n        region[local + {at}u] = staged{round};\n    }}",
            at = round * 256
        );
    }
    text
}

/// The gradient's window pass, unrolled like [`staging`]: each invocation loads the pooled
/// output and the output gradient of its windows first, then routes them.
fn windows_code(windows: usize) -> String {
    let mut text = String::new();
    let rounds = windows.div_ceil(256);
    for round in 0..rounds {
        let _ = write!(
            text,
            r#"    let window{round} = local + {at}u;
    let oi{round} = window_row0 + window{round} / WINDOW_COLUMNS;
    let oj{round} = window_column0 + window{round} % WINDOW_COLUMNS;
    let live{round} = live && window{round} < WINDOWS && oi{round} < params.out_height && oj{round} < params.out_width;
    var maximum{round} = T(0.0);
    var gradient{round} = T(0.0);
    if (live{round}) {{
        maximum{round} = load_value(pooled[pooled_base + oi{round} * params.output_stride_h + oj{round} * params.output_stride_w]);
        gradient{round} = load_value(grad[grad_base + oi{round} * params.grad_stride_h + oj{round} * params.grad_stride_w]);
    }}
"#,
            at = round * 256
        );
    }
    for round in 0..rounds {
        let _ = write!(
            text,
            r#"    if (window{round} < WINDOWS) {{
        routes[window{round}] = select(NO_TAP, route(window{round}, maximum{round}, top, left), live{round});
        gradients[window{round}] = gradient{round};
    }}
"#
        );
    }
    text
}

/// The gather of one pixel's routed gradients, unrolled over the windows that can reach it
/// (`span / stride + 1` along each axis), in ascending window order.
fn gather_code(window: FixedWindow) -> String {
    let ((sh, sw), (span_h, span_w)) = (window.stride(), window.span());
    let mut text = String::new();
    for t in (0..=span_h / sh).rev() {
        for u in (0..=span_w / sw).rev() {
            let _ = write!(
                text,
                r#"        {{
            let row_offset = row_rest + {row_step}u;
            let column_offset = column_rest + {column_step}u;
            if (row_base >= {t}u && row_base - {t}u < params.out_height && row_offset <= SPAN_H
                && row_offset % DILATION_H == 0u && column_base >= {u}u
                && column_base - {u}u < params.out_width && column_offset <= SPAN_W
                && column_offset % DILATION_W == 0u) {{
                let window = (row_base - {t}u - window_row0) * WINDOW_COLUMNS + column_base - {u}u - window_column0;
                if (routes[window] == (row_offset / DILATION_H) * KERNEL_W + column_offset / DILATION_W) {{
                    sum = sum + gradients[window];
                }}
            }}
        }}
"#,
                row_step = t * sh,
                column_step = u * sw,
            );
        }
    }
    text
}

/// `fn route(window, maximum, top, left) -> u32`: the first tap (row-major) of the staged
/// window whose input equals `maximum`, or NO_TAP. Padding never matches (checked by
/// position, so that an input of -inf is still routed to its own tap).
fn route_function(window: FixedWindow, columns: usize) -> String {
    let ((kh, kw), (dh, dw)) = (window.kernel(), window.dilation());
    let mut text = String::from(
        r#"fn route(window: u32, maximum: T, top: i32, left: i32) -> u32 {
    let window_row = window / WINDOW_COLUMNS;
    let window_column = window % WINDOW_COLUMNS;
    let row = top + i32(window_row * STRIDE_H);
    let column = left + i32(window_column * STRIDE_W);
    let corner = window_row * STRIDE_H * REGION_COLUMNS + window_column * STRIDE_W;
"#,
    );
    for ki in 0..kh {
        let _ = writeln!(
            text,
            "    let inside_row{ki} = row + {at} >= 0 && row + {at} < i32(params.height);",
            at = ki * dh
        );
    }
    for ki in 0..kh {
        for kj in 0..kw {
            let _ = writeln!(
                text,
                "    if (inside_row{ki} && column + {col} >= 0 && column + {col} < i32(params.width)\n        \
                 && matches(region[corner + {offset}u], maximum)) {{\n        return {number}u;\n    }}",
                col = kj * dw,
                offset = ki * dh * columns + kj * dw,
                number = ki * kw + kj,
            );
        }
    }
    text.push_str("    return NO_TAP;\n}\n");
    text
}

/// WGSL of the tiled forward for `window`.
pub(crate) fn forward_source(dtype: DType, window: FixedWindow) -> String {
    let (rows, columns) = window.forward_region();
    let ((kh, kw), (dh, dw)) = (window.kernel(), window.dilation());
    let mut text = header(dtype, window);
    let _ = write!(
        text,
        r#"// Tiled max pooling forward (pool/tiled.rs): an {OUT_ROWS}x{OUT_COLUMNS} output tile per workgroup.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read_write> output: array<S>;

const REGION_COLUMNS: u32 = {columns}u;
const REGION_SIZE: u32 = {size}u;
var<workgroup> region: array<T, {size}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    // Planes in turn (a workgroup per tile and plane left the GPU waiting on launches).
    for (var plane = workgroup.y; plane < params.count; plane = plane + workgroups.y) {{
    let live = true;
    let column_tiles = (params.out_width + {OUT_COLUMNS}u - 1u) / {OUT_COLUMNS}u;
    let first_row = (workgroup.x / column_tiles) * {OUT_ROWS}u;
    let first_column = (workgroup.x % column_tiles) * {OUT_COLUMNS}u;
    let base = plane_base(plane, params.input_offset, params.input_stride_n, params.input_stride_c);
    let top = i32(first_row * STRIDE_H) - i32(PADDING_H);
    let left = i32(first_column * STRIDE_W) - i32(PADDING_W);
{staging}    workgroupBarrier();
    let row = first_row + local / {OUT_COLUMNS}u;
    let column = first_column + local % {OUT_COLUMNS}u;
    if (row < params.out_height && column < params.out_width) {{
    let corner = (local / {OUT_COLUMNS}u) * STRIDE_H * REGION_COLUMNS + (local % {OUT_COLUMNS}u) * STRIDE_W;
    var best = negative_infinity();
    var value = best;
"#,
        size = rows * columns,
        staging = staging(rows * columns),
    );
    for ki in 0..kh {
        for kj in 0..kw {
            let _ = writeln!(
                text,
                "    value = region[corner + {}u];\n    \
                 if (is_nan_value(value) || value > best) {{ best = value; }}",
                ki * dh * columns + kj * dw
            );
        }
    }
    text.push_str(
        "    output[(plane * params.out_height + row) * params.out_width + column] = store_value(best);\n    }\n    \
         // Every read of this plane's region is done before the next plane's staging.\n    \
         workgroupBarrier();\n    }\n}\n",
    );
    text
}

/// WGSL of the tiled gradient (routing and gathering) for `window`.
pub(crate) fn backward_source(dtype: DType, window: FixedWindow) -> String {
    let (rows, columns) = window.gradient_region();
    let (window_rows, window_columns) = window.gradient_windows();
    let mut text = header(dtype, window);
    let _ = write!(
        text,
        r#"// Tiled max pooling gradient (pool/tiled.rs): a {GRAD_ROWS}x{GRAD_COLUMNS} input-gradient tile per workgroup.
@group(0) @binding(1) var<storage, read> input: array<S>;
@group(0) @binding(2) var<storage, read> pooled: array<S>;
@group(0) @binding(3) var<storage, read> grad: array<S>;
@group(0) @binding(4) var<storage, read_write> grad_input: array<S>;

const REGION_COLUMNS: u32 = {columns}u;
const REGION_SIZE: u32 = {size}u;
const WINDOW_COLUMNS: u32 = {window_columns}u;
const WINDOWS: u32 = {windows}u;
const NO_TAP: u32 = 0xffffffffu;
var<workgroup> region: array<T, {size}>;
var<workgroup> routes: array<u32, {windows}>;
var<workgroup> gradients: array<T, {windows}>;

// The first window whose taps reach `position` along an axis: the least o with
// o * stride + span >= position + padding.
fn first_window(position: u32, padding: u32, span: u32, stride: u32) -> u32 {{
    let shifted = position + padding;
    if (shifted <= span) {{
        return 0u;
    }}
    return (shifted - span + stride - 1u) / stride;
}}

// Whether `value` counts as equal to a window's maximum (NaN matches NaN).
fn matches(value: T, maximum: T) -> bool {{
    return value == maximum || (is_nan_value(value) && is_nan_value(maximum));
}}
{route}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    // Planes in turn (a workgroup per tile and plane left the GPU waiting on launches).
    for (var plane = workgroup.y; plane < params.count; plane = plane + workgroups.y) {{
    let live = true;
    let column_tiles = (params.width + {GRAD_COLUMNS}u - 1u) / {GRAD_COLUMNS}u;
    let first_row = (workgroup.x / column_tiles) * {GRAD_ROWS}u;
    let first_column = (workgroup.x % column_tiles) * {GRAD_COLUMNS}u;
    let window_row0 = first_window(first_row, PADDING_H, SPAN_H, STRIDE_H);
    let window_column0 = first_window(first_column, PADDING_W, SPAN_W, STRIDE_W);
    let top = i32(window_row0 * STRIDE_H) - i32(PADDING_H);
    let left = i32(window_column0 * STRIDE_W) - i32(PADDING_W);
    let base = plane_base(plane, params.input_offset, params.input_stride_n, params.input_stride_c);
{staging}    workgroupBarrier();
    let pooled_base = plane_base(plane, params.output_offset, params.output_stride_n, params.output_stride_c);
    let grad_base = plane_base(plane, params.grad_offset, params.grad_stride_n, params.grad_stride_c);
{windows_code}    workgroupBarrier();
"#,
        size = rows * columns,
        windows = window_rows * window_columns,
        staging = staging(rows * columns),
        windows_code = windows_code(window_rows * window_columns),
        route = route_function(window, columns),
    );
    let _ = write!(
        text,
        r#"    for (var index = local; index < {pixels}u; index = index + 256u) {{
        let y = first_row + index / {GRAD_COLUMNS}u;
        let x = first_column + index % {GRAD_COLUMNS}u;
        if (y >= params.height || x >= params.width) {{
            continue;
        }}
        var sum = T(0.0);
        // Window oi reads row y at tap offset y + PADDING_H - oi * STRIDE_H (a multiple of
        // DILATION_H up to SPAN_H): oi = row_base - t for the unrolled t below; likewise
        // columns. Ascending windows (descending t), as the two-pass kernels add them.
        let row_base = (y + PADDING_H) / STRIDE_H;
        let row_rest = (y + PADDING_H) % STRIDE_H;
        let column_base = (x + PADDING_W) / STRIDE_W;
        let column_rest = (x + PADDING_W) % STRIDE_W;
{gather}        grad_input[(plane * params.height + y) * params.width + x] = store_value(sum);
    }}
    // Every read of this plane's routes is done before the next plane's staging.
    workgroupBarrier();
    }}
}}
"#,
        pixels = GRAD_ROWS * GRAD_COLUMNS,
        gather = gather_code(window),
    );
    text
}

#[cfg(test)]
mod tests {
    use super::FixedWindow;
    use crate::geometry::Window;

    #[test]
    fn windows_fit_and_bound_their_tiles() {
        let resnet = FixedWindow::RESNET;
        assert!(resnet.forward_fits() && resnet.gradient_fits());
        // 16 rows of stride 2 under a 3-tap window: 9 windows reach them at most.
        assert_eq!(resnet.gradient_windows(), (9, 33));
        assert_eq!(resnet.forward_region(), (17, 65));
        let huge = Window {
            kernel: (300, 2),
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
        };
        assert!(FixedWindow::of(&huge).is_none());
        let wide = Window {
            kernel: (9, 9),
            stride: (1, 1),
            padding: (0, 0),
            dilation: (9, 9),
        };
        let wide = FixedWindow::of(&wide).unwrap();
        assert!(!wide.forward_fits() && !wide.gradient_fits());
    }
}
