//! CPU backward primitives of the direct 2-D convolution (one group, no bias), the
//! derivatives that `GradFn::Conv2d` records:
//! - `conv2d_backward_input`: the transposed convolution of the output gradient by the
//!   weight. Per image, one `gemm` `columns [c * kh * kw, oh * ow] = Wᵀ · g`, then "col2im":
//!   every column entry is added back to the input pixel its window read (overlapping
//!   windows accumulate; padding taps are dropped);
//! - `conv2d_backward_weight`: `dW [o, c * kh * kw] = Σ_images g · columnsᵀ`, the columns being
//!   the forward's im2col of each image. Images are split over threads, each summing into its
//!   own `dW`, and the partial sums are added at the end.
//!
//! F32 and F64 are computed in their own type; F16 is widened to f32 (the weight gradient sums
//! over every pixel of the batch, too many terms for f16 accumulation) and rounded once.

use crate::backend::cpu::HostBuffer;
use std::borrow::Cow;
use std::ops::Add;

use half::f16;
use rayon::prelude::*;

use super::conv::im2col;
use super::CpuStorage;
use crate::backend::checks::check_view;
use crate::error::{Error, Result};
use crate::geometry::{backward_shape, Conv2dParams, Conv2dShape};
use crate::layout::Layout;

/// Multiply-adds above which the work is spread over threads.
const PARALLEL_WORK: usize = 48 * 48 * 48;

/// The view's elements in row-major order (borrowed when it already is dense).
pub(super) fn dense<'a, T: Copy>(data: &'a [T], layout: &Layout) -> Cow<'a, [T]> {
    if layout.is_contiguous() {
        Cow::Borrowed(&data[layout.offset..layout.offset + layout.numel()])
    } else {
        Cow::Owned(layout.positions().map(|p| data[p]).collect())
    }
}

/// An f16 view widened to a dense f32 vector.
pub(super) fn widen(data: &[f16], layout: &Layout) -> Vec<f32> {
    layout.positions().map(|p| data[p].to_f32()).collect()
}

/// Add image `columns` (`[c * kh * kw, oh * ow]`) back onto the pixels their windows read
/// (`image` is one dense `[c, h, w]` image); taps in the padding are dropped.
fn col2im<T: Copy + Add<Output = T>>(columns: &[T], shape: &Conv2dShape, image: &mut [T]) {
    let (h, w) = shape.input;
    let (kh, kw) = shape.kernel;
    let (oh, ow) = shape.output;
    let plane = oh * ow;
    for (c, channel) in image.chunks_exact_mut(h * w).enumerate() {
        for ki in 0..kh {
            for kj in 0..kw {
                let r = (c * kh + ki) * kw + kj;
                let row = &columns[r * plane..(r + 1) * plane];
                for (oi, line) in row.chunks_exact(ow).enumerate() {
                    let y = (oi * shape.stride.0 + ki * shape.dilation.0)
                        .checked_sub(shape.padding.0)
                        .filter(|&y| y < h);
                    let Some(y) = y else { continue };
                    let pixels = &mut channel[y * w..(y + 1) * w];
                    for (oj, &value) in line.iter().enumerate() {
                        if let Some(x) = (oj * shape.stride.1 + kj * shape.dilation.1)
                            .checked_sub(shape.padding.1)
                            .filter(|&x| x < w)
                        {
                            pixels[x] = pixels[x] + value;
                        }
                    }
                }
            }
        }
    }
}

/// Threads for `gemm` when `images` images share `threads` threads.
fn gemm_parallelism(images_in_parallel: bool, batch: usize, work: usize) -> gemm::Parallelism {
    let threads = rayon::current_num_threads();
    let per_gemm = if images_in_parallel {
        (threads / batch.max(1)).max(1)
    } else {
        threads
    };
    if per_gemm > 1 && work >= PARALLEL_WORK {
        gemm::Parallelism::Rayon(per_gemm)
    } else {
        gemm::Parallelism::None
    }
}

/// `dx` for one element type (f32 or f64): per image, `gemm` into columns, then col2im.
fn backward_input_typed<T: Copy + Add<Output = T> + Send + Sync + 'static>(
    grad: &[T],
    grad_layout: &Layout,
    weight: &[T],
    weight_layout: &Layout,
    shape: &Conv2dShape,
    zero: T,
    one: T,
) -> Vec<T> {
    let (o, patch) = (shape.out_channels, shape.patch());
    let (h, w) = shape.input;
    let plane = shape.output.0 * shape.output.1;
    let per_image = shape.channels * h * w;
    let mut out = vec![zero; shape.batch * per_image];
    if per_image == 0 || o == 0 {
        // No input, or no output channel to take a gradient from: zeros.
        return out;
    }
    let weight = dense(weight, weight_layout); // [o, patch]
    let grad = dense(grad, grad_layout); // [n, o, plane]
    let work = shape.batch * o * plane * patch;
    let parallel_images = shape.batch > 1 && work >= PARALLEL_WORK;
    let parallelism = gemm_parallelism(parallel_images, shape.batch, o * plane * patch);
    let one_image = |(image, dst): (usize, &mut [T])| {
        let mut columns = vec![zero; patch * plane];
        let g = &grad[image * o * plane..(image + 1) * o * plane];
        // SAFETY: `columns` holds patch * plane elements written row-major (row stride plane,
        // column stride 1); the left operand Wᵀ reads `weight` (o * patch elements) at
        // row i, column j -> j * patch + i; `g` holds o * plane elements read row-major. The
        // destination is a fresh allocation, so nothing aliases it.
        unsafe {
            gemm::gemm(
                patch,
                plane,
                o,
                columns.as_mut_ptr(),
                1,
                plane as isize,
                false,
                weight.as_ptr(),
                patch as isize,
                1,
                g.as_ptr(),
                1,
                plane as isize,
                zero,
                one,
                false,
                false,
                false,
                parallelism,
            );
        }
        col2im(&columns, shape, dst);
    };
    if parallel_images {
        out.par_chunks_mut(per_image)
            .enumerate()
            .for_each(one_image);
    } else {
        out.chunks_mut(per_image).enumerate().for_each(one_image);
    }
    out
}

/// `dW` for one element type (f32 or f64): per image, im2col then `gemm` accumulating
/// `g · columnsᵀ`; groups of images run on separate threads with their own sums.
fn backward_weight_typed<T: Copy + Add<Output = T> + Send + Sync + 'static>(
    input: &[T],
    layout: &Layout,
    grad: &[T],
    grad_layout: &Layout,
    shape: &Conv2dShape,
    zero: T,
    one: T,
) -> Vec<T> {
    let (o, patch) = (shape.out_channels, shape.patch());
    let plane = shape.output.0 * shape.output.1;
    let total = o * patch;
    if total == 0 || shape.batch * plane == 0 {
        // Nothing to differentiate, or an empty sum (no images): zeros.
        return vec![zero; total];
    }
    let grad = dense(grad, grad_layout); // [n, o, plane]
    let work = shape.batch * o * plane * patch;
    let threads = rayon::current_num_threads();
    let groups = if work >= PARALLEL_WORK {
        threads.min(shape.batch)
    } else {
        1
    };
    let parallelism = gemm_parallelism(groups > 1, groups, o * plane * patch);
    // Sum of the images `first..last` into a fresh `[o, patch]`.
    let images = |first: usize, last: usize| -> Vec<T> {
        let mut sum = vec![zero; total];
        let mut columns = vec![zero; patch * plane];
        for image in first..last {
            im2col(input, layout, shape, image, zero, &mut columns);
            let g = &grad[image * o * plane..(image + 1) * o * plane];
            // SAFETY: `sum` holds o * patch elements, read and written row-major (row stride
            // patch); `g` holds o * plane elements read row-major; the right operand columnsᵀ
            // reads `columns` (patch * plane elements) at row i, column j -> j * plane + i.
            // `sum` and `columns` are distinct allocations and `g` is a shared slice.
            unsafe {
                gemm::gemm(
                    o,
                    patch,
                    plane,
                    sum.as_mut_ptr(),
                    1,
                    patch as isize,
                    true,
                    g.as_ptr(),
                    1,
                    plane as isize,
                    columns.as_ptr(),
                    plane as isize,
                    1,
                    one,
                    one,
                    false,
                    false,
                    false,
                    parallelism,
                );
            }
        }
        sum
    };
    if groups <= 1 {
        return images(0, shape.batch);
    }
    let per_group = shape.batch.div_ceil(groups);
    let partials: Vec<Vec<T>> = (0..shape.batch.div_ceil(per_group))
        .into_par_iter()
        .map(|group| {
            images(
                group * per_group,
                ((group + 1) * per_group).min(shape.batch),
            )
        })
        .collect();
    let mut partials = partials.into_iter();
    let mut sum = partials.next().unwrap_or_else(|| vec![zero; total]);
    for partial in partials {
        for (total, value) in sum.iter_mut().zip(partial) {
            *total = *total + value;
        }
    }
    sum
}

impl CpuStorage {
    /// Gradient of the one-group convolution with respect to its input: `self` is the output
    /// gradient `[n, o, oh, ow]` (any strides), `weight` the forward's `[o, c, kh, kw]` (any
    /// strides); returns a contiguous `[n, c, h, w]` for `input_shape`. F32, F64 and F16.
    pub(super) fn conv2d_input_gradient(
        &self,
        layout: &Layout,
        weight: &CpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<CpuStorage> {
        const OP: &str = "conv2d_backward_input";
        if self.dtype() != weight.dtype() {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: self.dtype(),
                rhs: weight.dtype(),
            });
        }
        let shape = backward_shape(OP, layout, input_shape, &weight_layout.shape, params)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, weight_layout, weight.len())?;
        let (l, wl) = (layout, weight_layout);
        Ok(match (self, weight) {
            (CpuStorage::F32(g), CpuStorage::F32(k)) => CpuStorage::F32(HostBuffer::from(
                backward_input_typed(g, l, k, wl, &shape, 0.0, 1.0),
            )),
            (CpuStorage::F64(g), CpuStorage::F64(k)) => CpuStorage::F64(HostBuffer::from(
                backward_input_typed(g, l, k, wl, &shape, 0.0, 1.0),
            )),
            (CpuStorage::F16(g), CpuStorage::F16(k)) => {
                let (g, k) = (widen(g, l), widen(k, wl));
                let (l, wl) = (Layout::contiguous(&l.shape), Layout::contiguous(&wl.shape));
                let wide = backward_input_typed(&g, &l, &k, &wl, &shape, 0.0, 1.0);
                CpuStorage::F16(wide.into_iter().map(f16::from_f32).collect())
            }
            _ => return Err(super::unsupported_dtype(OP, self.dtype())),
        })
    }

    /// Gradient of the one-group convolution with respect to its weight: `self` is the
    /// forward's input `[n, c, h, w]` (any strides), `grad` the output gradient
    /// `[n, o, oh, ow]` (any strides); returns a contiguous `[o, c, kh, kw]` for
    /// `weight_shape`. F32, F64 and F16.
    pub(super) fn conv2d_weight_gradient(
        &self,
        layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<CpuStorage> {
        const OP: &str = "conv2d_backward_weight";
        if self.dtype() != grad.dtype() {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: self.dtype(),
                rhs: grad.dtype(),
            });
        }
        let shape = backward_shape(OP, grad_layout, &layout.shape, weight_shape, params)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, grad_layout, grad.len())?;
        let (l, gl) = (layout, grad_layout);
        Ok(match (self, grad) {
            (CpuStorage::F32(x), CpuStorage::F32(g)) => CpuStorage::F32(HostBuffer::from(
                backward_weight_typed(x, l, g, gl, &shape, 0.0, 1.0),
            )),
            (CpuStorage::F64(x), CpuStorage::F64(g)) => CpuStorage::F64(HostBuffer::from(
                backward_weight_typed(x, l, g, gl, &shape, 0.0, 1.0),
            )),
            (CpuStorage::F16(x), CpuStorage::F16(g)) => {
                let (x, g) = (widen(x, l), widen(g, gl));
                let (l, gl) = (Layout::contiguous(&l.shape), Layout::contiguous(&gl.shape));
                let wide = backward_weight_typed(&x, &l, &g, &gl, &shape, 0.0, 1.0);
                CpuStorage::F16(wide.into_iter().map(f16::from_f32).collect())
            }
            _ => return Err(super::unsupported_dtype(OP, self.dtype())),
        })
    }
}
