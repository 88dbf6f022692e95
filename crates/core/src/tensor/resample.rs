//! Spatial resampling and channel-wise layer maths on `[n, c, h, w]`, written as composites of
//! existing primitives so they run on every backend (and on tensors larger than one GPU
//! buffer) and take their gradients from the primitives' rules:
//!
//! - `interpolate` (nearest, bilinear with or without `align_corners`), one axis at a time:
//!   nearest is one `index_select` per axis, bilinear (separable) two `index_select`s
//!   weighted by the fractional positions. Source positions follow PyTorch's formulas
//!   (computed in f32, as PyTorch does for f32 input).
//! - `adaptive_max_pool2d` over PyTorch's windows (`start = floor(i * in / out)`, `end =
//!   ceil((i + 1) * in / out)`): columns first, then rows, each as an `index_select` of the
//!   windows (padded to the widest by repeating the last index) and an `argmax` + `gather`;
//!   reducing columns first makes the winner the first maximum in row-major order, where the
//!   gradient goes (as in PyTorch).
//! - `group_norm` (biased variance per sample and group, optional affine per channel) and
//!   `dropout2d` (whole channels zeroed, the rest scaled by `1 / (1 - p)`).

use super::Tensor;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// How [`Tensor::interpolate`] picks the output's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterpolateMode {
    /// The nearest input pixel at or before the source position (PyTorch's `'nearest'`).
    Nearest,
    /// Bilinear weights of the four neighbours. With `align_corners` the corner pixels of
    /// input and output coincide; without it pixel centres are aligned (PyTorch's default).
    Bilinear {
        /// PyTorch's `align_corners`.
        align_corners: bool,
    },
}

/// The output size of [`Tensor::interpolate`]: given directly, or as scale factors (the
/// output is `floor(in * scale)`, and the source positions use `1 / scale`, as PyTorch does
/// when `recompute_scale_factor` is not set).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InterpolateSize {
    /// Output `(height, width)`.
    Size(usize, usize),
    /// Scale factors `(height, width)`.
    Scale(f64, f64),
}

/// One axis of a resampling: for each output position, the first source index, and for
/// bilinear the second index with the weights of both.
struct AxisPlan {
    first: Vec<i32>,
    second: Vec<i32>,
    first_weight: Vec<f32>,
    second_weight: Vec<f32>,
}

impl AxisPlan {
    /// PyTorch's source positions for one axis (`scale_factor` when given as a scale).
    fn new(
        input: usize,
        output: usize,
        scale_factor: Option<f64>,
        mode: InterpolateMode,
    ) -> AxisPlan {
        // PyTorch's `compute_scales_value`: 1 / scale when a scale was given, else in / out.
        let ratio = match scale_factor {
            Some(scale) => (1.0 / scale) as f32,
            None => input as f32 / output as f32,
        };
        let last = input as i32 - 1;
        let mut plan = AxisPlan {
            first: Vec::with_capacity(output),
            second: Vec::with_capacity(output),
            first_weight: Vec::with_capacity(output),
            second_weight: Vec::with_capacity(output),
        };
        for i in 0..output {
            match mode {
                InterpolateMode::Nearest => {
                    let source = ((i as f32 * ratio).floor() as i32).min(last);
                    plan.first.push(source);
                }
                InterpolateMode::Bilinear { align_corners } => {
                    let source = if align_corners {
                        let step = if output > 1 {
                            (input as f32 - 1.0) / (output as f32 - 1.0)
                        } else {
                            0.0
                        };
                        step * i as f32
                    } else {
                        (ratio * (i as f32 + 0.5) - 0.5).max(0.0)
                    };
                    let low = (source as i32).min(last);
                    let lambda = (source - low as f32).clamp(0.0, 1.0);
                    let high = if low < last { low + 1 } else { low };
                    plan.first.push(low);
                    plan.second.push(high);
                    plan.first_weight.push(1.0 - lambda);
                    plan.second_weight.push(lambda);
                }
            }
        }
        plan
    }

    /// Whether the plan maps every output to the same input index with weight one.
    fn is_identity(&self, input: usize) -> bool {
        self.first.len() == input
            && self.first.iter().enumerate().all(|(i, &s)| s == i as i32)
            && self.second_weight.iter().all(|&w| w == 0.0)
    }

    /// Apply the plan along `dim` of the rank-4 `x`.
    fn apply(&self, x: &Tensor, dim: usize) -> Result<Tensor> {
        let device = x.device();
        let first = Tensor::from_vec(self.first.clone(), &[self.first.len()], device)?;
        let picked = x.index_select(dim as isize, &first)?;
        if self.second.is_empty() {
            return Ok(picked);
        }
        let mut weight_shape = [1usize; 4];
        weight_shape[dim] = self.first.len();
        let weight = |values: &[f32]| -> Result<Tensor> {
            Tensor::from_vec(values.to_vec(), &weight_shape, device)?.to_dtype(x.dtype())
        };
        let second = Tensor::from_vec(self.second.clone(), &[self.second.len()], device)?;
        picked.mul(&weight(&self.first_weight)?)?.add(
            &x.index_select(dim as isize, &second)?
                .mul(&weight(&self.second_weight)?)?,
        )
    }
}

/// PyTorch's adaptive windows along one axis, padded to the widest window by repeating each
/// window's last index: `(flat index table [out * widest], window starts, widest)`.
fn adaptive_windows(input: usize, output: usize) -> (Vec<i32>, Vec<i32>, usize) {
    let bounds: Vec<(usize, usize)> = (0..output)
        .map(|i| (i * input / output, ((i + 1) * input).div_ceil(output)))
        .collect();
    let widest = bounds.iter().map(|(s, e)| e - s).max().unwrap_or(1).max(1);
    let mut table = Vec::with_capacity(output * widest);
    for &(start, end) in &bounds {
        for k in 0..widest {
            table.push((start + k).min(end - 1) as i32);
        }
    }
    let starts = bounds.iter().map(|&(s, _)| s as i32).collect();
    (table, starts, widest)
}

impl Tensor {
    /// Resize the last two dims of `[n, c, h, w]`, like `torch.nn.functional.interpolate`
    /// with mode `'nearest'` or `'bilinear'`. Differentiable in the input.
    pub fn interpolate(&self, size: InterpolateSize, mode: InterpolateMode) -> Result<Tensor> {
        const OP: &str = "interpolate";
        if self.rank() != 4 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: "expects a [n, c, h, w] tensor".into(),
            });
        }
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("needs a float tensor, got {}", self.dtype()),
            ));
        }
        let (h, w) = (self.shape()[2], self.shape()[3]);
        let (out_h, out_w, scales) = match size {
            InterpolateSize::Size(out_h, out_w) => (out_h, out_w, None),
            InterpolateSize::Scale(scale_h, scale_w) => {
                if !(scale_h.is_finite() && scale_w.is_finite() && scale_h > 0.0 && scale_w > 0.0) {
                    return Err(Error::invalid(
                        OP,
                        format!("scale factors must be positive, got ({scale_h}, {scale_w})"),
                    ));
                }
                (
                    (h as f64 * scale_h).floor() as usize,
                    (w as f64 * scale_w).floor() as usize,
                    Some((scale_h, scale_w)),
                )
            }
        };
        if out_h == 0 || out_w == 0 || h == 0 || w == 0 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: format!(
                    "input and output sizes must be non-zero, output ({out_h}, {out_w})"
                ),
            });
        }
        let rows = AxisPlan::new(h, out_h, scales.map(|s| s.0), mode);
        let columns = AxisPlan::new(w, out_w, scales.map(|s| s.1), mode);
        let mut out = self.clone();
        if !columns.is_identity(w) {
            out = columns.apply(&out, 3)?;
        }
        if !rows.is_identity(h) {
            out = rows.apply(&out, 2)?;
        }
        Ok(out)
    }

    /// Max pooling of `[n, c, h, w]` to `output_size` over PyTorch's adaptive windows, like
    /// `torch.nn.functional.adaptive_max_pool2d(..., return_indices=True)`: the maxima and
    /// their `I32` flat indices into `h * w`. The gradient goes to the first maximum of each
    /// window (row-major).
    pub fn adaptive_max_pool2d(&self, output_size: (usize, usize)) -> Result<(Tensor, Tensor)> {
        const OP: &str = "adaptive_max_pool2d";
        let (out_h, out_w) = output_size;
        if self.rank() != 4
            || out_h == 0
            || out_w == 0
            || self.shape()[2] == 0
            || self.shape()[3] == 0
        {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: format!(
                    "expects a non-empty [n, c, h, w] input and a non-zero output size, got {output_size:?}"
                ),
            });
        }
        let (batch, channels, h, w) = (
            self.shape()[0],
            self.shape()[1],
            self.shape()[2],
            self.shape()[3],
        );
        let device = self.device();
        // Columns: [n, c, h, w] -> [n, c, h, out_w] with the column of each maximum.
        let (table, starts, widest) = adaptive_windows(w, out_w);
        let table_w = Tensor::from_vec(table, &[out_w * widest], device)?;
        let windows = self
            .index_select(3, &table_w)?
            .reshape([batch, channels, h, out_w, widest])?;
        let pick = windows.argmax(4, true)?;
        let column_max = windows.gather(4, &pick)?.squeeze(4)?;
        let column_starts = Tensor::from_vec(starts, &[1, 1, 1, out_w], device)?;
        let columns = pick.squeeze(4)?.add(&column_starts)?;
        // Rows: [n, c, h, out_w] -> [n, c, out_h, out_w], carrying the columns along.
        let (table, starts, widest) = adaptive_windows(h, out_h);
        let table_h = Tensor::from_vec(table, &[out_h * widest], device)?;
        let windows = column_max
            .index_select(2, &table_h)?
            .reshape([batch, channels, out_h, widest, out_w])?;
        let pick = windows.argmax(3, true)?;
        let values = windows.gather(3, &pick)?.squeeze(3)?;
        let row_starts = Tensor::from_vec(starts, &[1, 1, out_h, 1], device)?;
        let rows = pick.squeeze(3)?.add(&row_starts)?;
        let picked_columns = columns
            .index_select(2, &table_h)?
            .reshape([batch, channels, out_h, widest, out_w])?
            .gather(3, &pick)?
            .squeeze(3)?;
        let indices = rows.mul_scalar(w as f64)?.add(&picked_columns)?;
        Ok((values, indices))
    }

    /// Group normalization of `[n, c, ...]`, like `torch.nn.functional.group_norm`: each
    /// sample's channels split into `num_groups` groups, each normalized by its mean and
    /// biased variance (`eps` added), then scaled by `weight [c]` and shifted by `bias [c]`
    /// when given.
    pub fn group_norm(
        &self,
        num_groups: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        const OP: &str = "group_norm";
        if self.rank() < 2 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: "expects a [n, c, ...] tensor".into(),
            });
        }
        let (batch, channels) = (self.shape()[0], self.shape()[1]);
        if num_groups == 0 || !channels.is_multiple_of(num_groups) {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: format!("{channels} channels are not divisible into {num_groups} groups"),
            });
        }
        let mut affine_shape = vec![1usize; self.rank()];
        affine_shape[1] = channels;
        for (name, affine) in [("weight", weight), ("bias", bias)] {
            if let Some(t) = affine {
                if t.shape() != [channels] {
                    return Err(Error::ShapeMismatch {
                        op: OP,
                        lhs: self.shape().to_vec(),
                        rhs: t.shape().to_vec(),
                        reason: format!("{name} must have one value per channel ({channels})"),
                    });
                }
            }
        }
        let grouped = self.reshape([
            batch,
            num_groups,
            self.numel() / (batch * num_groups).max(1),
        ])?;
        let mean = grouped.mean(&[2], true)?;
        let centered = grouped.sub(&mean)?;
        let var = centered.square()?.mean(&[2], true)?;
        let mut out = centered
            .mul(&var.add_scalar(eps)?.rsqrt()?)?
            .reshape(self.shape().to_vec())?;
        if let Some(weight) = weight {
            out = out.mul(&weight.reshape(affine_shape.clone())?)?;
        }
        if let Some(bias) = bias {
            out = out.add(&bias.reshape(affine_shape)?)?;
        }
        Ok(out)
    }

    /// Channel dropout of `[n, c, h, w]` (or unbatched `[c, h, w]`), like
    /// `torch.nn.functional.dropout2d`: in training each whole channel is zeroed with
    /// probability `p` and the kept ones scaled by `1 / (1 - p)`; the identity otherwise.
    /// The mask comes from `Tensor::rand` (seeded by `manual_seed`).
    pub fn dropout2d(&self, p: f64, training: bool) -> Result<Tensor> {
        const OP: &str = "dropout2d";
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                OP,
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        if self.rank() != 4 && self.rank() != 3 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: "expects [n, c, h, w] or [c, h, w]".into(),
            });
        }
        if !training || p == 0.0 {
            return Ok(self.clone());
        }
        if p >= 1.0 {
            return self.mul_scalar(0.0);
        }
        let kept = self.rank() - 2;
        let mut mask_shape = self.shape()[..kept].to_vec();
        mask_shape.extend([1, 1]);
        let dtype = if self.dtype().is_float() {
            self.dtype()
        } else {
            DType::F32
        };
        let keep = Tensor::rand(&mask_shape, dtype, self.device())?.ge_scalar(p)?;
        let mask = keep.to_dtype(self.dtype())?.mul_scalar(1.0 / (1.0 - p))?;
        self.mul(&mask)
    }
}
