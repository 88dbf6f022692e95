//! CPU max pooling primitives, the reference for the GPU's (`gpu/pool.rs`): the forward reads
//! each window through the input's strides (padding reads `-inf`, a NaN wins), the gradient
//! routes each output's gradient to the first tap of its window equal to the output (NaN
//! matching NaN). Planes (`[image, channel]` pairs) run in parallel with rayon; within a plane
//! the work is sequential, so results do not depend on the thread count. f16 computes in f32.
//! The checked geometry (`PoolShape`) lives in `geometry.rs`, shared with the GPU.

use crate::backend::cpu::HostBuffer;
use num_traits::Float;
use rayon::prelude::*;

use super::{CpuStorage, FloatElement, PARALLEL_THRESHOLD};
use crate::backend::checks::check_view;
use crate::backend::contract::{into_format, Pooling};
use crate::error::{Error, Result};
use crate::geometry::{PoolShape, Window};
use crate::layout::{Layout, MemoryFormat};

/// A view of one `[n, c, rows, columns]` operand: its data and strides.
struct Plane<'a, T> {
    data: &'a [T],
    layout: &'a Layout,
}

impl<T: FloatElement> Plane<'_, T> {
    /// The element at `(image, channel, row, column)`, computed type.
    fn at(&self, image: usize, channel: usize, row: usize, column: usize) -> T::Compute {
        let s = &self.layout.strides;
        self.data[self.layout.offset + image * s[0] + channel * s[1] + row * s[2] + column * s[3]]
            .up()
    }
}

/// Whether `value` counts as equal to the window's maximum `output` (NaN matches NaN).
fn matches<F: Float>(value: F, output: F) -> bool {
    value == output || (value.is_nan() && output.is_nan())
}

/// Run `one_plane(plane index, that plane's output)` over every plane of `out`, in parallel
/// when the work is large.
fn for_each_plane<T: Send>(
    out: &mut [T],
    plane: usize,
    one_plane: impl Fn((usize, &mut [T])) + Send + Sync,
) {
    if plane == 0 {
        return;
    }
    if out.len() >= PARALLEL_THRESHOLD {
        out.par_chunks_mut(plane).enumerate().for_each(one_plane);
    } else {
        out.chunks_mut(plane).enumerate().for_each(one_plane);
    }
}

/// The forward for one element type.
fn max_pool_typed<T: FloatElement>(
    input: &[T],
    layout: &Layout,
    shape: &PoolShape,
) -> Result<Vec<T>> {
    let (h, w) = shape.input;
    let (oh, ow) = shape.output;
    let window = &shape.window;
    let (kh, kw) = window.kernel;
    let lowest = <T::Compute as Float>::neg_infinity();
    let numel = shape.output_shape().iter().product();
    let mut out = super::alloc::filled(numel, T::down(lowest))?;
    let source = Plane {
        data: input,
        layout,
    };
    for_each_plane(&mut out, oh * ow, |(index, dst)| {
        let (image, channel) = (index / shape.channels, index % shape.channels);
        for oi in 0..oh {
            for oj in 0..ow {
                let mut best = lowest;
                for ki in 0..kh {
                    let Some(row) = window.input_position(0, oi, ki, h) else {
                        continue;
                    };
                    for kj in 0..kw {
                        let Some(column) = window.input_position(1, oj, kj, w) else {
                            continue;
                        };
                        let value = source.at(image, channel, row, column);
                        if value.is_nan() || value > best {
                            best = value;
                        }
                    }
                }
                dst[oi * ow + oj] = T::down(best);
            }
        }
    });
    Ok(out)
}

/// The input position `(row, column)` of the first tap of window `(oi, oj)` whose input
/// matches `output`, if any.
fn first_match<T: FloatElement>(
    source: &Plane<'_, T>,
    (image, channel): (usize, usize),
    shape: &PoolShape,
    (oi, oj): (usize, usize),
    output: T::Compute,
) -> Option<(usize, usize)> {
    let window = &shape.window;
    let (h, w) = shape.input;
    for ki in 0..window.kernel.0 {
        let Some(row) = window.input_position(0, oi, ki, h) else {
            continue;
        };
        for kj in 0..window.kernel.1 {
            let Some(column) = window.input_position(1, oj, kj, w) else {
                continue;
            };
            if matches(source.at(image, channel, row, column), output) {
                return Some((row, column));
            }
        }
    }
    None
}

/// The gradient for one element type: per plane, every output's gradient is added (in
/// row-major output order, in the computed type) at its window's first matching input.
fn max_pool_backward_typed<T: FloatElement>(
    source: Plane<'_, T>,
    output: Plane<'_, T>,
    grad: Plane<'_, T>,
    shape: &PoolShape,
) -> Result<Vec<T>> {
    let (h, w) = shape.input;
    let (oh, ow) = shape.output;
    let zero = <T::Compute as num_traits::Zero>::zero();
    let numel = shape.input_shape().iter().product();
    let mut out = super::alloc::filled(numel, T::down(zero))?;
    for_each_plane(&mut out, h * w, |(index, dst)| {
        let plane = (index / shape.channels, index % shape.channels);
        let mut sums = vec![zero; h * w];
        for oi in 0..oh {
            for oj in 0..ow {
                let maximum = output.at(plane.0, plane.1, oi, oj);
                if let Some((row, column)) = first_match(&source, plane, shape, (oi, oj), maximum) {
                    sums[row * w + column] =
                        sums[row * w + column] + grad.at(plane.0, plane.1, oi, oj);
                }
            }
        }
        for (slot, sum) in dst.iter_mut().zip(sums) {
            *slot = T::down(sum);
        }
    });
    Ok(out)
}

impl CpuStorage {
    /// 2-D max pooling of `[n, c, h, w]` (any strides) into a contiguous `[n, c, oh, ow]`
    /// (`Pooling::max_pool2d` lays it out). F32, F64 and F16 (computed in f32).
    fn max_pool2d_row_major(&self, layout: &Layout, window: &Window) -> Result<CpuStorage> {
        const OP: &str = "max_pool2d";
        let shape = PoolShape::new(OP, layout, window)?;
        check_view(OP, layout, self.len())?;
        Ok(match self {
            CpuStorage::F32(x) => {
                CpuStorage::F32(HostBuffer::from(max_pool_typed(x, layout, &shape)?))
            }
            CpuStorage::F64(x) => {
                CpuStorage::F64(HostBuffer::from(max_pool_typed(x, layout, &shape)?))
            }
            CpuStorage::F16(x) => {
                CpuStorage::F16(HostBuffer::from(max_pool_typed(x, layout, &shape)?))
            }
            CpuStorage::BF16(_)
            | CpuStorage::I32(_)
            | CpuStorage::U32(_)
            | CpuStorage::U8(_)
            | CpuStorage::Bool(_) => return Err(super::unsupported_dtype(OP, self.dtype())),
        })
    }

    /// Max pooling's input gradient (`Pooling::max_pool2d_backward`): `self` is the
    /// forward's input, `output` its output, `grad` the output gradient; contiguous
    /// `[n, c, h, w]`.
    fn max_pool2d_backward_row_major(
        &self,
        layout: &Layout,
        output: &CpuStorage,
        output_layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<CpuStorage> {
        const OP: &str = "max_pool2d_backward";
        let shape = PoolShape::new(OP, layout, window)?;
        shape.expect_output(OP, "output", output_layout)?;
        shape.expect_output(OP, "output gradient", grad_layout)?;
        check_view(OP, layout, self.len())?;
        check_view(OP, output_layout, output.len())?;
        check_view(OP, grad_layout, grad.len())?;
        Ok(match (self, output, grad) {
            (CpuStorage::F32(x), CpuStorage::F32(y), CpuStorage::F32(g)) => {
                CpuStorage::F32(HostBuffer::from(max_pool_backward_typed(
                    Plane { data: x, layout },
                    Plane {
                        data: y,
                        layout: output_layout,
                    },
                    Plane {
                        data: g,
                        layout: grad_layout,
                    },
                    &shape,
                )?))
            }
            (CpuStorage::F64(x), CpuStorage::F64(y), CpuStorage::F64(g)) => {
                CpuStorage::F64(HostBuffer::from(max_pool_backward_typed(
                    Plane { data: x, layout },
                    Plane {
                        data: y,
                        layout: output_layout,
                    },
                    Plane {
                        data: g,
                        layout: grad_layout,
                    },
                    &shape,
                )?))
            }
            (CpuStorage::F16(x), CpuStorage::F16(y), CpuStorage::F16(g)) => {
                CpuStorage::F16(HostBuffer::from(max_pool_backward_typed(
                    Plane { data: x, layout },
                    Plane {
                        data: y,
                        layout: output_layout,
                    },
                    Plane {
                        data: g,
                        layout: grad_layout,
                    },
                    &shape,
                )?))
            }
            _ if self.dtype() != output.dtype() || self.dtype() != grad.dtype() => {
                return Err(Error::DTypeMismatch {
                    op: OP,
                    lhs: self.dtype(),
                    rhs: if self.dtype() != output.dtype() {
                        output.dtype()
                    } else {
                        grad.dtype()
                    },
                })
            }
            _ => return Err(super::unsupported_dtype(OP, self.dtype())),
        })
    }
}

impl Pooling for CpuStorage {
    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self> {
        let out = self.max_pool2d_row_major(layout, window)?;
        let shape = PoolShape::new("max_pool2d", layout, window)?.output_shape();
        into_format(out, &shape, format)
    }

    fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Self,
        output_layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Self> {
        let out = self.max_pool2d_backward_row_major(
            layout,
            output,
            output_layout,
            grad,
            grad_layout,
            window,
        )?;
        into_format(out, &layout.shape, MemoryFormat::of(layout))
    }
}
