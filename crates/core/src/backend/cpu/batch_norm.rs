//! CPU batch-norm statistics (`batch_norm_stats`) and backward sums
//! (`batch_norm_backward_sums`): per channel of an `[n, c, ...]` view, in f64 (two passes for
//! the variance), channels in parallel. The reference of the GPU's one-pass kernels
//! (`gpu/batch_norm.rs`).

use crate::backend::cpu::HostBuffer;
use rayon::prelude::*;

use super::{unsupported_dtype, CpuStorage};
use crate::backend::checks::{check_channels, check_view};
use crate::backend::contract::BatchNormalization;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// The view's values as f64, read through its strides, and `(n, c, rest)`.
fn channel_values(storage: &CpuStorage, layout: &Layout, op: &'static str) -> Result<Vec<f64>> {
    Ok(match storage {
        CpuStorage::F32(v) => layout.positions().map(|at| f64::from(v[at])).collect(),
        CpuStorage::F16(v) => layout.positions().map(|at| f64::from(v[at])).collect(),
        CpuStorage::F64(v) => layout.positions().map(|at| v[at]).collect(),
        other => return Err(unsupported_dtype(op, other.dtype())),
    })
}

/// Element `(image, channel, i)` of row-major `[n, c, rest]` values.
fn at(values: &[f64], (c, rest): (usize, usize), image: usize, channel: usize, i: usize) -> f64 {
    values[(image * c + channel) * rest + i]
}

impl BatchNormalization for CpuStorage {
    /// `[2, c]` F32: per channel mean and biased variance (`BatchNormalization::batch_norm_stats`).
    fn batch_norm_stats(&self, layout: &Layout) -> Result<CpuStorage> {
        const OP: &str = "batch_norm_stats";
        check_view(OP, layout, self.len())?;
        let (n, c, rest) = check_channels(OP, layout)?;
        let values = channel_values(self, layout, OP)?;
        let count = (n * rest) as f64;
        let stats: Vec<(f64, f64)> = (0..c)
            .into_par_iter()
            .map(|channel| {
                let each = || (0..n).flat_map(move |image| (0..rest).map(move |i| (image, i)));
                let mean = each()
                    .map(|(image, i)| at(&values, (c, rest), image, channel, i))
                    .sum::<f64>()
                    / count;
                let var = each()
                    .map(|(image, i)| {
                        let d = at(&values, (c, rest), image, channel, i) - mean;
                        d * d
                    })
                    .sum::<f64>()
                    / count;
                (mean, var)
            })
            .collect();
        let mut out = Vec::with_capacity(2 * c);
        out.extend(stats.iter().map(|&(mean, _)| mean as f32));
        out.extend(stats.iter().map(|&(_, var)| var as f32));
        Ok(CpuStorage::F32(HostBuffer::from(out)))
    }

    /// `[2, c]` F32: per channel `sum(g)` and `sum(g * (x - mean))`; `self` is `g`
    /// (`BatchNormalization::batch_norm_backward_sums`).
    fn batch_norm_backward_sums(
        &self,
        layout: &Layout,
        input: &CpuStorage,
        input_layout: &Layout,
        mean: &CpuStorage,
        mean_layout: &Layout,
    ) -> Result<CpuStorage> {
        const OP: &str = "batch_norm_backward_sums";
        check_view(OP, layout, self.len())?;
        check_view(OP, input_layout, input.len())?;
        check_view(OP, mean_layout, mean.len())?;
        let (n, c, rest) = check_channels(OP, layout)?;
        if input_layout.shape != layout.shape {
            return Err(Error::ShapeMismatch {
                op: OP,
                lhs: layout.shape.clone(),
                rhs: input_layout.shape.clone(),
                reason: "the gradient and the input must have one shape".into(),
            });
        }
        if mean_layout.shape != [c] || mean.dtype() != crate::dtype::DType::F32 {
            return Err(Error::invalid(
                OP,
                format!(
                    "the mean must be float32 [{c}], got {} {:?}",
                    mean.dtype(),
                    mean_layout.shape
                ),
            ));
        }
        let g = channel_values(self, layout, OP)?;
        let x = channel_values(input, input_layout, OP)?;
        let means = channel_values(mean, mean_layout, OP)?;
        let sums: Vec<(f64, f64)> = (0..c)
            .into_par_iter()
            .map(|channel| {
                let mut sum = 0.0;
                let mut centered = 0.0;
                for image in 0..n {
                    for i in 0..rest {
                        let gradient = at(&g, (c, rest), image, channel, i);
                        sum += gradient;
                        centered +=
                            gradient * (at(&x, (c, rest), image, channel, i) - means[channel]);
                    }
                }
                (sum, centered)
            })
            .collect();
        let mut out = Vec::with_capacity(2 * c);
        out.extend(sums.iter().map(|&(s, _)| s as f32));
        out.extend(sums.iter().map(|&(_, s)| s as f32));
        Ok(CpuStorage::F32(HostBuffer::from(out)))
    }

    /// `k·(g − ḡ − (x − μ)·s)` per channel, in the input's dtype, computed in f64; `self` is
    /// `g` (`BatchNormalization::batch_norm_backward_input`).
    fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &CpuStorage,
        input_layout: &Layout,
        coefficients: &CpuStorage,
        coefficients_layout: &Layout,
    ) -> Result<CpuStorage> {
        const OP: &str = "batch_norm_backward_input";
        check_view(OP, layout, self.len())?;
        check_view(OP, input_layout, input.len())?;
        check_view(OP, coefficients_layout, coefficients.len())?;
        let (n, c, rest) = crate::backend::checks::check_batch_norm_input(
            OP,
            (layout, self.dtype()),
            (input_layout, input.dtype()),
            (coefficients_layout, coefficients.dtype()),
        )?;
        let g = channel_values(self, layout, OP)?;
        let x = channel_values(input, input_layout, OP)?;
        let k = channel_values(coefficients, coefficients_layout, OP)?;
        let mut out = Vec::with_capacity(n * c * rest);
        for image in 0..n {
            for channel in 0..c {
                let (mean, scale) = (k[channel], k[c + channel]);
                let (mean_gradient, slope) = (k[2 * c + channel], k[3 * c + channel]);
                for i in 0..rest {
                    let gradient = at(&g, (c, rest), image, channel, i);
                    let value = at(&x, (c, rest), image, channel, i);
                    out.push(scale * (gradient - mean_gradient - (value - mean) * slope));
                }
            }
        }
        Ok(CpuStorage::from_f64_values(&out, self.dtype()))
    }
}
