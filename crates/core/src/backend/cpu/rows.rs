//! CPU row primitives over the last dim: `softmax_last` (`exp(x - max) / sum`),
//! `log_softmax_last` (`x - max - log(sum)`), their input gradients (`softmax_last_backward`),
//! `layer_norm_last` (`(x - mean) * rsqrt(var + eps) * weight + bias`, biased variance,
//! two passes), `rms_norm_last` (`x * rsqrt(mean(x²) + eps) * weight`) and `rotary_last`
//! (each row rotated by its position's `cos`, `sin`, "rotate half" layout). Each row is computed in the element's compute type (f32 for F16) in the
//! order the composites use (`Tensor::softmax`'s max, sub, exp, sum, div; `LayerNorm`'s
//! mean, centre, mean of squares, rsqrt, scale, affine), rows in parallel with rayon. They are
//! the reference of the GPU's row kernels (`gpu/rows.rs`).

use crate::backend::cpu::HostBuffer;
use num_traits::{Float, NumCast, One, Zero};
use rayon::prelude::*;

use super::{unsupported_dtype, CpuStorage, FloatElement, PARALLEL_THRESHOLD};
use crate::backend::checks::{
    check_rotary, check_row_parameter, check_rows, check_same_rows, check_view,
    softmax_backward_name,
};
use crate::backend::contract::{Affine, RowNormalization};
use crate::error::Result;
use crate::layout::Layout;

/// The view's values in row-major order.
fn gathered<T: Copy>(data: &[T], layout: &Layout) -> Vec<T> {
    layout.positions().map(|at| data[at]).collect()
}

/// Apply `row_op` to every row of `length` values of `values`, in parallel when large.
fn map_rows<T: Copy + Send + Sync>(
    values: &mut [T],
    length: usize,
    row_op: impl Fn(&mut [T]) + Send + Sync,
) {
    if length == 0 {
        return;
    }
    if values.len() >= PARALLEL_THRESHOLD {
        values.par_chunks_mut(length).for_each(row_op);
    } else {
        values.chunks_mut(length).for_each(row_op);
    }
}

/// A row's maximum in its compute type; NaN if any value is NaN.
fn row_max<T: FloatElement>(row: &[T]) -> T::Compute {
    row.iter()
        .map(|v| v.up())
        .fold(T::Compute::neg_infinity(), |m, v| {
            if v > m || v.is_nan() {
                v
            } else {
                m
            }
        })
}

fn softmax_rows<T: FloatElement>(data: &[T], layout: &Layout, length: usize, safe: bool) -> Vec<T> {
    let mut values = gathered(data, layout);
    map_rows(&mut values, length, |row| {
        let max = row_max(row);
        // `safe` (masked attention): the shift is at least the lowest finite value, so a row of
        // only -inf gives exp = 0 everywhere, and the sum at least 0.5 (any other row sums to
        // >= 1 from its maximum): zeros instead of NaN.
        let shift = if safe && !max.is_nan() {
            max.max(T::Compute::min_value())
        } else {
            max
        };
        let exps: Vec<T::Compute> = row.iter().map(|v| (v.up() - shift).exp()).collect();
        // Summed in f64: over a long row (a 6,625-class head) an f32 running sum drops the
        // terms below half a unit in its last place.
        let wide: f64 = exps
            .iter()
            .map(|&e| num_traits::ToPrimitive::to_f64(&e).unwrap_or(f64::NAN))
            .sum();
        let sum = <T::Compute as NumCast>::from(wide).unwrap_or_else(T::Compute::nan);
        let half = <T::Compute as NumCast>::from(0.5).unwrap_or_else(<T::Compute as Zero>::zero);
        let sum = if safe { sum.max(half) } else { sum };
        for (slot, e) in row.iter_mut().zip(exps) {
            *slot = T::down(e / sum);
        }
    });
    values
}

/// `x - shift - log(sum(exp(x - shift)))` per row, `shift` the row's maximum (at least the
/// lowest finite value, so a row of only `-inf` gives NaN rather than failing earlier, as the
/// composite `x - logsumexp(x)` does).
fn log_softmax_rows<T: FloatElement>(data: &[T], layout: &Layout, length: usize) -> Vec<T> {
    let mut values = gathered(data, layout);
    map_rows(&mut values, length, |row| {
        let max = row_max(row);
        let shift = if max.is_nan() {
            max
        } else {
            max.max(T::Compute::min_value())
        };
        // Summed in f64, as `softmax_rows`.
        let wide: f64 = row
            .iter()
            .map(|v| num_traits::ToPrimitive::to_f64(&(v.up() - shift).exp()).unwrap_or(f64::NAN))
            .sum();
        let log_sum = <T::Compute as NumCast>::from(wide.ln()).unwrap_or_else(T::Compute::nan);
        for slot in row.iter_mut() {
            *slot = T::down(slot.up() - shift - log_sum);
        }
    });
    values
}

/// The input gradient of softmax (`log` false: `y * (g - sum(g * y))`) or log-softmax (`log`
/// true: `g - exp(y) * sum(g)`) per row, from the forward's output `y` and the gradient `g`
/// (both gathered in row-major order); the row sums in f64.
fn softmax_backward_rows<T: FloatElement>(
    output: &[T],
    grad: &[T],
    length: usize,
    log: bool,
) -> Vec<T> {
    let mut values: Vec<T> = grad.to_vec();
    if length == 0 {
        return values;
    }
    let row_op = |(row, y): (&mut [T], &[T])| {
        let wide: f64 = if log {
            row.iter().map(|g| g.up_f64()).sum()
        } else {
            row.iter()
                .zip(y)
                .map(|(g, y)| g.up_f64() * y.up_f64())
                .sum()
        };
        let total = <T::Compute as NumCast>::from(wide).unwrap_or_else(T::Compute::nan);
        for (slot, y) in row.iter_mut().zip(y) {
            let (g, y) = (slot.up(), y.up());
            *slot = T::down(if log {
                g - y.exp() * total
            } else {
                y * (g - total)
            });
        }
    };
    if values.len() >= PARALLEL_THRESHOLD {
        values
            .par_chunks_mut(length)
            .zip(output.par_chunks(length))
            .for_each(row_op);
    } else {
        values
            .chunks_mut(length)
            .zip(output.chunks(length))
            .for_each(row_op);
    }
    values
}

fn layer_norm_rows<T: FloatElement>(
    data: &[T],
    layout: &Layout,
    length: usize,
    affine: Option<(Vec<T>, Vec<T>)>,
    eps: f64,
) -> Vec<T> {
    let mut values = gathered(data, layout);
    let count = <T::Compute as NumCast>::from(length).unwrap_or_else(<T::Compute as One>::one);
    let eps = <T::Compute as NumCast>::from(eps).unwrap_or_else(<T::Compute as Zero>::zero);
    map_rows(&mut values, length, |row| {
        let mean = row.iter().map(|v| v.up()).sum::<T::Compute>() / count;
        let var = row
            .iter()
            .map(|v| {
                let centered = v.up() - mean;
                centered * centered
            })
            .sum::<T::Compute>()
            / count;
        let inv_std = <T::Compute as One>::one() / (var + eps).sqrt();
        for (i, slot) in row.iter_mut().enumerate() {
            let normalized = (slot.up() - mean) * inv_std;
            *slot = T::down(match &affine {
                Some((weight, bias)) => normalized * weight[i].up() + bias[i].up(),
                None => normalized,
            });
        }
    });
    values
}

fn rms_norm_rows<T: FloatElement>(
    data: &[T],
    layout: &Layout,
    length: usize,
    weight: Option<Vec<T>>,
    eps: f64,
) -> Vec<T> {
    let mut values = gathered(data, layout);
    let count = <T::Compute as NumCast>::from(length).unwrap_or_else(<T::Compute as One>::one);
    let eps = <T::Compute as NumCast>::from(eps).unwrap_or_else(<T::Compute as Zero>::zero);
    map_rows(&mut values, length, |row| {
        let mean_square = row
            .iter()
            .map(|v| {
                let value = v.up();
                value * value
            })
            .sum::<T::Compute>()
            / count;
        let inverse_rms = <T::Compute as One>::one() / (mean_square + eps).sqrt();
        for (i, slot) in row.iter_mut().enumerate() {
            let normalized = slot.up() * inverse_rms;
            *slot = T::down(match &weight {
                Some(weight) => normalized * weight[i].up(),
                None => normalized,
            });
        }
    });
    values
}

/// The rotary embedding of every `[head_dim]` row of the view (`RowNormalization::rotary_last`):
/// row `r` is at position `r % positions`; `cos` and `sin` are `[positions, rotary_dim]` in
/// row-major order.
fn rotary_rows<T: FloatElement>(
    data: &[T],
    layout: &Layout,
    (positions, head_dim, rotary_dim): (usize, usize, usize),
    cos: &[T],
    sin: &[T],
) -> Vec<T> {
    let mut values = gathered(data, layout);
    let half = rotary_dim / 2;
    let rotate = |(row, values): (usize, &mut [T])| {
        let position = row % positions.max(1);
        let (cos, sin) = (
            &cos[position * rotary_dim..(position + 1) * rotary_dim],
            &sin[position * rotary_dim..(position + 1) * rotary_dim],
        );
        let x: Vec<T::Compute> = values[..rotary_dim].iter().map(|v| v.up()).collect();
        for i in 0..rotary_dim {
            let partner = if i < half { -x[i + half] } else { x[i - half] };
            values[i] = T::down(x[i] * cos[i].up() + partner * sin[i].up());
        }
    };
    if head_dim == 0 {
        return values;
    }
    if values.len() >= PARALLEL_THRESHOLD {
        values.par_chunks_mut(head_dim).enumerate().for_each(rotate);
    } else {
        values.chunks_mut(head_dim).enumerate().for_each(rotate);
    }
    values
}

impl RowNormalization for CpuStorage {
    /// Softmax over the last dim of the view (`RowNormalization::softmax_last`).
    fn softmax_last(&self, layout: &Layout, safe: bool) -> Result<CpuStorage> {
        const OP: &str = "softmax";
        check_view(OP, layout, self.len())?;
        let length = check_rows(OP, layout)?;
        Ok(match self {
            CpuStorage::F32(data) => {
                CpuStorage::F32(HostBuffer::from(softmax_rows(data, layout, length, safe)))
            }
            CpuStorage::F64(data) => {
                CpuStorage::F64(HostBuffer::from(softmax_rows(data, layout, length, safe)))
            }
            CpuStorage::F16(data) => {
                CpuStorage::F16(HostBuffer::from(softmax_rows(data, layout, length, safe)))
            }
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }

    /// Log-softmax over the last dim of the view (`RowNormalization::log_softmax_last`).
    fn log_softmax_last(&self, layout: &Layout) -> Result<CpuStorage> {
        const OP: &str = "log_softmax";
        check_view(OP, layout, self.len())?;
        let length = check_rows(OP, layout)?;
        Ok(match self {
            CpuStorage::F32(data) => {
                CpuStorage::F32(HostBuffer::from(log_softmax_rows(data, layout, length)))
            }
            CpuStorage::F64(data) => {
                CpuStorage::F64(HostBuffer::from(log_softmax_rows(data, layout, length)))
            }
            CpuStorage::F16(data) => {
                CpuStorage::F16(HostBuffer::from(log_softmax_rows(data, layout, length)))
            }
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }

    /// The input gradient of softmax or log-softmax over the last dim, from this storage (the
    /// forward's output) and `grad` (`RowNormalization::softmax_last_backward`).
    fn softmax_last_backward(
        &self,
        layout: &Layout,
        grad: (&CpuStorage, &Layout),
        log: bool,
    ) -> Result<CpuStorage> {
        let op = softmax_backward_name(log);
        let (grad, grad_layout) = grad;
        check_view(op, layout, self.len())?;
        check_view(op, grad_layout, grad.len())?;
        check_same_rows(op, layout, grad_layout)?;
        let length = check_rows(op, layout)?;
        macro_rules! backward {
            ($variant:ident, $y:expr, $g:expr) => {
                CpuStorage::$variant(HostBuffer::from(softmax_backward_rows(
                    &gathered($y, layout),
                    &gathered($g, grad_layout),
                    length,
                    log,
                )))
            };
        }
        Ok(match (self, grad) {
            (CpuStorage::F32(y), CpuStorage::F32(g)) => backward!(F32, y, g),
            (CpuStorage::F64(y), CpuStorage::F64(g)) => backward!(F64, y, g),
            (CpuStorage::F16(y), CpuStorage::F16(g)) => backward!(F16, y, g),
            _ => return Err(unsupported_dtype(op, self.dtype())),
        })
    }

    /// Layer normalization over the last dim of the view, with the affine `(weight, bias)`
    /// views (`[length]` each, this storage's dtype) where given
    /// (`RowNormalization::layer_norm_last`).
    fn layer_norm_last(
        &self,
        layout: &Layout,
        affine: Affine<'_, CpuStorage>,
        eps: f64,
    ) -> Result<CpuStorage> {
        const OP: &str = "layer_norm";
        check_view(OP, layout, self.len())?;
        let length = check_rows(OP, layout)?;
        if let Some(((weight, weight_layout), (bias, bias_layout))) = affine {
            crate::backend::checks::check_affine(
                OP,
                length,
                self.dtype(),
                (weight_layout, weight.dtype(), weight.len()),
                (bias_layout, bias.dtype(), bias.len()),
            )?;
        }
        macro_rules! normalize {
            ($variant:ident, $data:expr) => {{
                let affine = match affine {
                    Some(((CpuStorage::$variant(w), wl), (CpuStorage::$variant(b), bl))) => {
                        Some((gathered(w, wl), gathered(b, bl)))
                    }
                    Some(_) => return Err(unsupported_dtype(OP, self.dtype())),
                    None => None,
                };
                CpuStorage::$variant(HostBuffer::from(layer_norm_rows(
                    $data, layout, length, affine, eps,
                )))
            }};
        }
        Ok(match self {
            CpuStorage::F32(data) => normalize!(F32, data),
            CpuStorage::F64(data) => normalize!(F64, data),
            CpuStorage::F16(data) => normalize!(F16, data),
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }

    /// RMS normalization over the last dim of the view, scaled by the `weight` view (`[length]`,
    /// this storage's dtype) where given (`RowNormalization::rms_norm_last`).
    fn rms_norm_last(
        &self,
        layout: &Layout,
        weight: Option<(&CpuStorage, &Layout)>,
        eps: f64,
    ) -> Result<CpuStorage> {
        const OP: &str = "rms_norm";
        check_view(OP, layout, self.len())?;
        let length = check_rows(OP, layout)?;
        if let Some((weight, weight_layout)) = weight {
            check_row_parameter(
                OP,
                "weight",
                length,
                self.dtype(),
                (weight_layout, weight.dtype(), weight.len()),
            )?;
        }
        macro_rules! normalize {
            ($variant:ident, $data:expr) => {{
                let weight = match weight {
                    Some((CpuStorage::$variant(w), wl)) => Some(gathered(w, wl)),
                    Some(_) => return Err(unsupported_dtype(OP, self.dtype())),
                    None => None,
                };
                CpuStorage::$variant(HostBuffer::from(rms_norm_rows(
                    $data, layout, length, weight, eps,
                )))
            }};
        }
        Ok(match self {
            CpuStorage::F32(data) => normalize!(F32, data),
            CpuStorage::F64(data) => normalize!(F64, data),
            CpuStorage::F16(data) => normalize!(F16, data),
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }

    /// The rotary embedding of the view's rows by the `cos` and `sin` views (`[positions,
    /// rotary_dim]`, this storage's dtype) (`RowNormalization::rotary_last`).
    fn rotary_last(
        &self,
        layout: &Layout,
        (cos, cos_layout): (&CpuStorage, &Layout),
        (sin, sin_layout): (&CpuStorage, &Layout),
    ) -> Result<CpuStorage> {
        const OP: &str = "rotary_embedding";
        check_view(OP, layout, self.len())?;
        let sizes = check_rotary(
            OP,
            layout,
            self.dtype(),
            (cos_layout, cos.dtype(), cos.len()),
            (sin_layout, sin.dtype(), sin.len()),
        )?;
        macro_rules! rotate {
            ($variant:ident, $data:expr) => {{
                let (CpuStorage::$variant(c), CpuStorage::$variant(s)) = (cos, sin) else {
                    return Err(unsupported_dtype(OP, self.dtype()));
                };
                CpuStorage::$variant(HostBuffer::from(rotary_rows(
                    $data,
                    layout,
                    sizes,
                    &gathered(c, cos_layout),
                    &gathered(s, sin_layout),
                )))
            }};
        }
        Ok(match self {
            CpuStorage::F32(data) => rotate!(F32, data),
            CpuStorage::F64(data) => rotate!(F64, data),
            CpuStorage::F16(data) => rotate!(F16, data),
            other => return Err(unsupported_dtype(OP, other.dtype())),
        })
    }
}
