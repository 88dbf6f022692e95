//! CPU 2-D convolution primitive (one group, no bias): per image, an im2col buffer
//! `[c * kh * kw, oh * ow]` read through the input's strides (padding reads zero), then one
//! `gemm` of the weight `[o, c * kh * kw]` by it, written straight into that image's slice of
//! the `[n, o, oh, ow]` output. Images run in parallel with rayon.
//! The checked geometry (`Conv2dShape`) lives in `geometry.rs`, shared with the GPU.

use crate::backend::cpu::HostBuffer;
use std::borrow::Cow;

use rayon::prelude::*;

use super::CpuStorage;
use crate::backend::checks::check_view;
use crate::backend::contract::{into_format, Convolution, Epilogue};
use crate::error::{Error, Result};
use crate::geometry::{Conv2dParams, Conv2dShape};
use crate::layout::{Layout, MemoryFormat};

/// Multiply-adds above which the convolution uses more than one thread.
const PARALLEL_WORK: usize = 48 * 48 * 48;

/// Write image `image`'s unfolded windows into `columns` (`[c * kh * kw, oh * ow]`).
pub(super) fn im2col<T: Copy>(
    input: &[T],
    layout: &Layout,
    shape: &Conv2dShape,
    image: usize,
    zero: T,
    columns: &mut [T],
) {
    let (h, w) = shape.input;
    let (kh, kw) = shape.kernel;
    let (oh, ow) = shape.output;
    let s = &layout.strides;
    let plane = oh * ow;
    for c in 0..shape.channels {
        let channel_base = layout.offset + image * s[0] + c * s[1];
        for ki in 0..kh {
            for kj in 0..kw {
                let r = (c * kh + ki) * kw + kj;
                let row = &mut columns[r * plane..(r + 1) * plane];
                let column_shift = kj * shape.dilation.1;
                for (oi, out) in row.chunks_exact_mut(ow).enumerate() {
                    let y = (oi * shape.stride.0 + ki * shape.dilation.0)
                        .checked_sub(shape.padding.0)
                        .filter(|&y| y < h);
                    let Some(y) = y else {
                        out.fill(zero);
                        continue;
                    };
                    let line = channel_base + y * s[2];
                    for (oj, value) in out.iter_mut().enumerate() {
                        *value = match (oj * shape.stride.1 + column_shift)
                            .checked_sub(shape.padding.1)
                            .filter(|&x| x < w)
                        {
                            Some(x) => input[line + x * s[3]],
                            None => zero,
                        };
                    }
                }
            }
        }
    }
}

/// The convolution for one element type: im2col + `gemm` per image.
fn conv2d_typed<T: Copy + Default + Send + Sync + 'static>(
    input: &[T],
    layout: &Layout,
    weight: &[T],
    weight_layout: &Layout,
    shape: &Conv2dShape,
    zero: T,
    one: T,
) -> Result<Vec<T>> {
    let (o, patch) = (shape.out_channels, shape.patch());
    let plane = shape.output.0 * shape.output.1;
    let per_image = o * plane;
    let mut out = super::alloc::filled(shape.batch * per_image, zero)?;
    if per_image == 0 || patch == 0 {
        // No output, or an empty sum (no input channels): zeros.
        return Ok(out);
    }
    // The weight as a dense `[o, patch]` matrix (a view of it when it already is one).
    let weight: Cow<'_, [T]> = if weight_layout.is_contiguous() {
        Cow::Borrowed(&weight[weight_layout.offset..weight_layout.offset + o * patch])
    } else {
        Cow::Owned(weight_layout.positions().map(|p| weight[p]).collect())
    };
    let work = shape.batch * per_image * patch;
    let threads = rayon::current_num_threads();
    let parallel_images = shape.batch > 1 && work >= PARALLEL_WORK;
    // Threads left to each image's gemm (all of them for a single image).
    let gemm_threads = if parallel_images {
        (threads / shape.batch).max(1)
    } else {
        threads
    };
    let parallelism = if gemm_threads > 1 && o * plane * patch >= PARALLEL_WORK {
        gemm::Parallelism::Rayon(gemm_threads)
    } else {
        gemm::Parallelism::None
    };
    let one_image = |(image, dst): (usize, &mut [T])| {
        let mut columns = vec![zero; patch * plane];
        im2col(input, layout, shape, image, zero, &mut columns);
        // SAFETY: `dst` holds exactly o * plane elements, written row-major (row stride
        // plane, column stride 1); `weight` holds o * patch elements read row-major (row
        // stride patch); `columns` holds patch * plane elements read row-major (row stride
        // plane). The three buffers are distinct allocations or slices, so they do not alias.
        unsafe {
            gemm::gemm(
                o,
                plane,
                patch,
                dst.as_mut_ptr(),
                1,
                plane as isize,
                false,
                weight.as_ptr(),
                1,
                patch as isize,
                columns.as_ptr(),
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
    };
    if parallel_images {
        out.par_chunks_mut(per_image)
            .enumerate()
            .for_each(one_image);
    } else {
        out.chunks_mut(per_image).enumerate().for_each(one_image);
    }
    Ok(out)
}

impl Convolution for CpuStorage {
    /// 2-D convolution with one group and no bias: `[n, c, h, w]` (any strides) by
    /// `[o, c, kh, kw]` (any strides) into a contiguous `[n, o, oh, ow]`. F32, F64 and F16
    /// (computed by `gemm` in the element type, like `matmul`).
    fn conv2d(
        &self,
        layout: &Layout,
        weight: &CpuStorage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<CpuStorage> {
        use half::f16;
        if self.dtype() != weight.dtype() {
            return Err(Error::DTypeMismatch {
                op: "conv2d",
                lhs: self.dtype(),
                rhs: weight.dtype(),
            });
        }
        let shape = Conv2dShape::new(layout, weight_layout, params)?;
        check_view("conv2d", layout, self.len())?;
        check_view("conv2d", weight_layout, weight.len())?;
        let (l, wl) = (layout, weight_layout);
        Ok(match (self, weight) {
            (CpuStorage::F32(x), CpuStorage::F32(k)) => CpuStorage::F32(HostBuffer::from(
                conv2d_typed(x, l, k, wl, &shape, 0.0, 1.0)?,
            )),
            (CpuStorage::F64(x), CpuStorage::F64(k)) => CpuStorage::F64(HostBuffer::from(
                conv2d_typed(x, l, k, wl, &shape, 0.0, 1.0)?,
            )),
            (CpuStorage::F16(x), CpuStorage::F16(k)) => CpuStorage::F16(HostBuffer::from(
                conv2d_typed(x, l, k, wl, &shape, f16::ZERO, f16::ONE)?,
            )),
            _ => return Err(super::unsupported_dtype("conv2d", self.dtype())),
        })
    }

    fn conv2d_epilogue(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        epilogue: &Epilogue<'_, Self>,
        format: MemoryFormat,
    ) -> Result<Self> {
        let out =
            self.conv2d_epilogue_row_major(layout, weight, weight_layout, params, epilogue)?;
        let shape = Conv2dShape::new(layout, weight_layout, params)?.output_shape();
        into_format(out, &shape, format)
    }

    /// Row-major always: the CPU's kernels write no other order.
    fn conv2d_epilogue_format(
        &self,
        _layout: &Layout,
        _weight_layout: &Layout,
        _params: &Conv2dParams,
    ) -> MemoryFormat {
        MemoryFormat::Contiguous
    }

    fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self> {
        self.conv2d_input_gradient(layout, weight, weight_layout, params, input_shape)
    }

    fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self> {
        self.conv2d_weight_gradient(layout, grad, grad_layout, params, weight_shape)
    }

    fn depthwise_conv2d(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self> {
        self.depthwise_forward(layout, weight, weight_layout, params)
    }

    fn depthwise_conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Self,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Self> {
        self.depthwise_input_gradient(layout, weight, weight_layout, params, input_shape)
    }

    fn depthwise_conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Self> {
        self.depthwise_weight_gradient(layout, grad, grad_layout, params, weight_shape)
    }
}
