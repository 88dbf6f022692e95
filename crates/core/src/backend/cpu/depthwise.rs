//! CPU depthwise 2-D convolution (groups == channels, weight `[c * multiplier, 1, kh, kw]`)
//! and both of its gradients, as direct loops over `(image, channel)` planes spread over
//! threads with rayon; no unfolded copy and no matrix product:
//! - forward: each output plane adds, for every tap, the tap's weight times the input row the
//!   tap reads onto each output row (a contiguous multiply-add along the row at stride 1);
//! - input gradient: each input plane (one task) adds back the gradients of its
//!   `multiplier` output planes at the pixels their taps read (no two tasks write one plane);
//! - weight gradient: each output channel (one task) sums, over the images, the products of
//!   its output gradient plane with the input plane its taps read.
//!
//! Operands are read as dense planes (borrowed when the view already is dense). F32 and F64
//! accumulate in their own type; F16 is widened to f32 and rounded once at the end.

use std::ops::{Add, Mul};

use half::f16;
use rayon::prelude::*;

use super::conv_backward::{dense, widen};
use super::{CpuStorage, HostBuffer};
use crate::backend::checks::check_view;
use crate::error::{Error, Result};
use crate::geometry::{depthwise_backward_shape, Conv2dParams, Conv2dShape};
use crate::layout::Layout;

/// Multiply-adds above which the planes are spread over threads.
const PARALLEL_WORK: usize = 1 << 15;

/// The accumulation types (f32, f64): zero is `Default`.
trait Accumulator: Copy + Default + Add<Output = Self> + Mul<Output = Self> + Send + Sync {}

impl Accumulator for f32 {}
impl Accumulator for f64 {}

/// For each column tap `kj`: the output columns `first..end` whose tap reads inside the
/// image, and the input column the first of them reads.
#[derive(Debug, Clone, Copy)]
struct ColumnSpan {
    first: usize,
    end: usize,
    start: usize,
}

/// The [`ColumnSpan`] of every column tap of `shape`.
fn column_spans(shape: &Conv2dShape) -> Vec<ColumnSpan> {
    let (width, out_width) = (shape.input.1, shape.output.1);
    let (stride, padding, dilation) = (shape.stride.1, shape.padding.1, shape.dilation.1);
    (0..shape.kernel.1)
        .map(|kj| {
            let shift = kj * dilation;
            // Output column oj reads input column oj * stride + shift - padding, which must
            // lie in 0..width.
            let first = padding.saturating_sub(shift).div_ceil(stride);
            let end = (width + padding)
                .checked_sub(shift)
                .map_or(0, |reach| reach.div_ceil(stride))
                .min(out_width);
            let first = first.min(end);
            // An empty span reads nothing: column 0 keeps its slice in range.
            let start = if first < end {
                first * stride + shift - padding
            } else {
                0
            };
            ColumnSpan { first, end, start }
        })
        .collect()
}

/// The input row that output row `oi` reads at row tap `ki`, if inside the image.
fn input_row(shape: &Conv2dShape, oi: usize, ki: usize) -> Option<usize> {
    (oi * shape.stride.0 + ki * shape.dilation.0)
        .checked_sub(shape.padding.0)
        .filter(|&y| y < shape.input.0)
}

/// `outputs[j] += tap * inputs[j * stride]` for every `j` of `outputs` (`inputs` holds them).
fn add_scaled<A: Accumulator>(outputs: &mut [A], tap: A, inputs: &[A], stride: usize) {
    if stride == 1 {
        // Two slices of one length: the loop vectorizes.
        let inputs = &inputs[..outputs.len()];
        for (value, &x) in outputs.iter_mut().zip(inputs) {
            *value = *value + tap * x;
        }
    } else {
        for (value, &x) in outputs.iter_mut().zip(inputs.iter().step_by(stride)) {
            *value = *value + tap * x;
        }
    }
}

/// `outputs[j * stride] += tap * inputs[j]` for every `j` of `inputs` (`outputs` holds them).
fn add_scaled_strided<A: Accumulator>(outputs: &mut [A], tap: A, inputs: &[A], stride: usize) {
    if stride == 1 {
        let outputs = &mut outputs[..inputs.len()];
        for (value, &g) in outputs.iter_mut().zip(inputs) {
            *value = *value + tap * g;
        }
    } else {
        for (value, &g) in outputs.iter_mut().step_by(stride).zip(inputs) {
            *value = *value + tap * g;
        }
    }
}

/// Lanes of the dot product's independent partial sums.
const LANES: usize = 8;

/// `Σ_j gradients[j] * inputs[j * stride]` over every `j` of `gradients`, in [`LANES`]
/// interleaved partial sums (a single running sum would wait on each addition in turn).
fn dot<A: Accumulator>(gradients: &[A], inputs: &[A], stride: usize) -> A {
    let mut lanes = [A::default(); LANES];
    let mut tail = A::default();
    if stride == 1 {
        let inputs = &inputs[..gradients.len()];
        let (g_chunks, x_chunks) = (gradients.chunks_exact(LANES), inputs.chunks_exact(LANES));
        let (g_rest, x_rest) = (g_chunks.remainder(), x_chunks.remainder());
        for (g, x) in g_chunks.zip(x_chunks) {
            for lane in 0..LANES {
                lanes[lane] = lanes[lane] + g[lane] * x[lane];
            }
        }
        for (&g, &x) in g_rest.iter().zip(x_rest) {
            tail = tail + g * x;
        }
    } else {
        let mut inputs = inputs.iter().step_by(stride);
        let g_chunks = gradients.chunks_exact(LANES);
        let g_rest = g_chunks.remainder();
        for g in g_chunks {
            for (lane, &g) in lanes.iter_mut().zip(g) {
                if let Some(&x) = inputs.next() {
                    *lane = *lane + g * x;
                }
            }
        }
        for (&g, &x) in g_rest.iter().zip(inputs) {
            tail = tail + g * x;
        }
    }
    lanes.iter().fold(tail, |sum, &lane| sum + lane)
}

/// Run `task` over the `chunk`-sized pieces of `out`, on threads when `work` is large.
fn for_each_plane<A: Send>(
    out: &mut [A],
    chunk: usize,
    work: usize,
    task: impl Fn(usize, &mut [A]) + Send + Sync,
) {
    if chunk == 0 {
        return;
    }
    if work >= PARALLEL_WORK && rayon::current_num_threads() > 1 {
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(index, plane)| task(index, plane));
    } else {
        out.chunks_mut(chunk)
            .enumerate()
            .for_each(|(index, plane)| task(index, plane));
    }
}

/// The forward over dense `input [n, c, h, w]` and `weight [o, kh * kw]`.
fn forward<A: Accumulator>(input: &[A], weight: &[A], shape: &Conv2dShape) -> Result<Vec<A>> {
    let (h, w) = shape.input;
    let (kh, kw) = shape.kernel;
    let (oh, ow) = shape.output;
    let (o, multiplier) = (shape.out_channels, shape.multiplier());
    let stride = shape.stride.1;
    let mut out = super::alloc::filled(shape.batch * o * oh * ow, A::default())?;
    let spans = column_spans(shape);
    let work = out.len() * kh * kw;
    for_each_plane(&mut out, oh * ow, work, |plane, out| {
        let (image, channel) = (plane / o, plane % o);
        let source = (image * shape.channels + channel / multiplier) * h * w;
        let source = &input[source..source + h * w];
        let taps = &weight[channel * kh * kw..(channel + 1) * kh * kw];
        for (oi, row) in out.chunks_exact_mut(ow).enumerate() {
            for ki in 0..kh {
                let Some(y) = input_row(shape, oi, ki) else {
                    continue;
                };
                let line = &source[y * w..(y + 1) * w];
                for (span, &tap) in spans.iter().zip(&taps[ki * kw..(ki + 1) * kw]) {
                    let outputs = &mut row[span.first..span.end];
                    add_scaled(outputs, tap, &line[span.start..], stride);
                }
            }
        }
    });
    Ok(out)
}

/// The input gradient from dense `grad [n, o, oh, ow]` and `weight [o, kh * kw]`.
fn input_gradient<A: Accumulator>(grad: &[A], weight: &[A], shape: &Conv2dShape) -> Result<Vec<A>> {
    let (h, w) = shape.input;
    let (kh, kw) = shape.kernel;
    let (oh, ow) = shape.output;
    let (c, multiplier) = (shape.channels, shape.multiplier());
    let o = shape.out_channels;
    let stride = shape.stride.1;
    let mut out = super::alloc::filled(shape.batch * c * h * w, A::default())?;
    if oh * ow == 0 {
        return Ok(out);
    }
    let spans = column_spans(shape);
    let work = shape.batch * o * oh * ow * kh * kw;
    for_each_plane(&mut out, h * w, work, |plane, out| {
        let (image, channel) = (plane / c, plane % c);
        for output_channel in channel * multiplier..(channel + 1) * multiplier {
            let source = (image * o + output_channel) * oh * ow;
            let source = &grad[source..source + oh * ow];
            let taps = &weight[output_channel * kh * kw..(output_channel + 1) * kh * kw];
            for (oi, row) in source.chunks_exact(ow).enumerate() {
                for ki in 0..kh {
                    let Some(y) = input_row(shape, oi, ki) else {
                        continue;
                    };
                    let line = &mut out[y * w..(y + 1) * w];
                    for (span, &tap) in spans.iter().zip(&taps[ki * kw..(ki + 1) * kw]) {
                        let gradients = &row[span.first..span.end];
                        add_scaled_strided(&mut line[span.start..], tap, gradients, stride);
                    }
                }
            }
        }
    });
    Ok(out)
}

/// The weight gradient `[o, kh * kw]` from dense `input [n, c, h, w]` and
/// `grad [n, o, oh, ow]`.
fn weight_gradient<A: Accumulator>(input: &[A], grad: &[A], shape: &Conv2dShape) -> Result<Vec<A>> {
    let (h, w) = shape.input;
    let (kh, kw) = shape.kernel;
    let (oh, ow) = shape.output;
    let (o, multiplier) = (shape.out_channels, shape.multiplier());
    let stride = shape.stride.1;
    let mut out = super::alloc::filled(o * kh * kw, A::default())?;
    if oh * ow == 0 {
        return Ok(out);
    }
    let spans = column_spans(shape);
    let work = shape.batch * o * oh * ow * kh * kw;
    for_each_plane(&mut out, kh * kw, work, |channel, sums| {
        for image in 0..shape.batch {
            let source = (image * shape.channels + channel / multiplier) * h * w;
            let source = &input[source..source + h * w];
            let gradient = (image * o + channel) * oh * ow;
            let gradient = &grad[gradient..gradient + oh * ow];
            for (oi, row) in gradient.chunks_exact(ow).enumerate() {
                for ki in 0..kh {
                    let Some(y) = input_row(shape, oi, ki) else {
                        continue;
                    };
                    let line = &source[y * w..(y + 1) * w];
                    for (span, sum) in spans.iter().zip(&mut sums[ki * kw..(ki + 1) * kw]) {
                        let gradients = &row[span.first..span.end];
                        *sum = *sum + dot(gradients, &line[span.start..], stride);
                    }
                }
            }
        }
    });
    Ok(out)
}

/// Check that `lhs` and `rhs` have one dtype.
fn same_dtype(op: &'static str, lhs: &CpuStorage, rhs: &CpuStorage) -> Result<()> {
    if lhs.dtype() != rhs.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: lhs.dtype(),
            rhs: rhs.dtype(),
        });
    }
    Ok(())
}

/// Run `function` on the two operands read as dense f32 or f64 (F16 widened to f32), and
/// store its result in the operands' dtype.
fn run_dense(
    op: &'static str,
    (a, a_layout): (&CpuStorage, &Layout),
    (b, b_layout): (&CpuStorage, &Layout),
    f32_function: impl Fn(&[f32], &[f32]) -> Result<Vec<f32>>,
    f64_function: impl Fn(&[f64], &[f64]) -> Result<Vec<f64>>,
) -> Result<CpuStorage> {
    Ok(match (a, b) {
        (CpuStorage::F32(x), CpuStorage::F32(y)) => CpuStorage::F32(HostBuffer::from(
            f32_function(&dense(x, a_layout), &dense(y, b_layout))?,
        )),
        (CpuStorage::F64(x), CpuStorage::F64(y)) => CpuStorage::F64(HostBuffer::from(
            f64_function(&dense(x, a_layout), &dense(y, b_layout))?,
        )),
        (CpuStorage::F16(x), CpuStorage::F16(y)) => {
            let wide = f32_function(&widen(x, a_layout), &widen(y, b_layout))?;
            CpuStorage::F16(wide.into_iter().map(f16::from_f32).collect())
        }
        _ => return Err(super::unsupported_dtype(op, a.dtype())),
    })
}

impl CpuStorage {
    /// The depthwise convolution: `self` is the input `[n, c, h, w]` (any strides), `weight`
    /// `[c * multiplier, 1, kh, kw]` (any strides); returns a contiguous
    /// `[n, c * multiplier, oh, ow]`. F32, F64 and F16.
    pub(super) fn depthwise_forward(
        &self,
        layout: &Layout,
        weight: &CpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<CpuStorage> {
        const OP: &str = "depthwise_conv2d";
        same_dtype(OP, self, weight)?;
        let shape = Conv2dShape::depthwise(OP, layout, weight_layout, params)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, weight_layout, weight.len())?;
        run_dense(
            OP,
            (self, layout),
            (weight, weight_layout),
            |x, k| forward(x, k, &shape),
            |x, k| forward(x, k, &shape),
        )
    }

    /// The depthwise convolution's input gradient: `self` is the output gradient (any
    /// strides), `weight` the forward's; returns a contiguous `[n, c, h, w]` of
    /// `input_shape`. F32, F64 and F16.
    pub(super) fn depthwise_input_gradient(
        &self,
        layout: &Layout,
        weight: &CpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<CpuStorage> {
        const OP: &str = "depthwise_conv2d_backward_input";
        same_dtype(OP, self, weight)?;
        let shape =
            depthwise_backward_shape(OP, layout, input_shape, &weight_layout.shape, params)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, weight_layout, weight.len())?;
        run_dense(
            OP,
            (self, layout),
            (weight, weight_layout),
            |g, k| input_gradient(g, k, &shape),
            |g, k| input_gradient(g, k, &shape),
        )
    }

    /// The depthwise convolution's weight gradient: `self` is the forward's input (any
    /// strides), `grad` the output gradient (any strides); returns a contiguous
    /// `[c * multiplier, 1, kh, kw]` of `weight_shape`. F32, F64 and F16.
    pub(super) fn depthwise_weight_gradient(
        &self,
        layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<CpuStorage> {
        const OP: &str = "depthwise_conv2d_backward_weight";
        same_dtype(OP, self, grad)?;
        let shape = depthwise_backward_shape(OP, grad_layout, &layout.shape, weight_shape, params)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, grad_layout, grad.len())?;
        run_dense(
            OP,
            (self, layout),
            (grad, grad_layout),
            |x, g| weight_gradient(x, g, &shape),
            |x, g| weight_gradient(x, g, &shape),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spans agree with the tap arithmetic written out per column: every output column
    /// inside a span reads inside the image, every one outside it reads in the padding.
    #[test]
    fn column_spans_cover_exactly_the_inside_taps() {
        for (width, kernel, stride, padding, dilation) in [
            (7, 3, 1, 1, 1),
            (8, 5, 2, 2, 1),
            (9, 3, 2, 2, 2),
            (5, 7, 1, 3, 1),
            (4, 1, 3, 0, 1),
            (3, 3, 1, 4, 2),
        ] {
            let params = Conv2dParams {
                stride: (1, stride),
                padding: (0, padding),
                dilation: (1, dilation),
                groups: 1,
            };
            let shape = Conv2dShape::depthwise(
                "test",
                &Layout::contiguous(&[1, 1, 1, width]),
                &Layout::contiguous(&[1, 1, 1, kernel]),
                &params,
            )
            .unwrap();
            for (kj, span) in column_spans(&shape).iter().enumerate() {
                for oj in 0..shape.output.1 {
                    let x = (oj * stride + kj * dilation) as isize - padding as isize;
                    let inside = x >= 0 && (x as usize) < width;
                    assert_eq!(inside, (span.first..span.end).contains(&oj));
                    if oj == span.first && inside {
                        assert_eq!(span.start as isize, x);
                    }
                }
            }
        }
    }
}
