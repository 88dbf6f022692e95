//! Training batch norm's per-channel numbers as two custom ops (`anygrad_core::custom_op`),
//! each one small kernel over `[rows, c]`: written as tensor ops they were a handful of kernels
//! of `c` elements per batch norm and direction (rsqrt, products, the shift, a `cat` of four
//! rows), each costing the GPU a few microseconds whatever its size — about twenty per batch
//! norm in a ResNet training step. The formulas are the tensor ops' own, in the same order, in
//! f32 (`batch_norm_training.rs` keeps those ops for parameters that are not f32).

use anygrad_core::custom_op::CustomOp;
use anygrad_core::{Error, Result, Tensor};

/// The forward's coefficients from the batch statistics: inputs `stats` F32 `[2, c]` (mean,
/// biased variance), with `affine` the weight and bias F32 `[c]`, with `running` the running
/// mean and variance F32 `[c]`; output F32 `[3, c]` (`[5, c]` with `running`): row 0
/// `inv_std = 1/√(var + eps)`, row 1 `scale = weight·inv_std`, row 2
/// `shift = bias − mean·scale` (weight 1 and bias 0 without `affine`), rows 3 and 4 the new
/// running mean and variance `running·(1 − factor) + stat·factor`, the variance's stat
/// unbiased (`var·correction`).
pub(crate) struct ForwardCoefficients {
    pub eps: f64,
    pub affine: bool,
    /// `(factor, correction)` of the running statistics' update.
    pub running: Option<(f64, f64)>,
}

impl ForwardCoefficients {
    /// Output rows.
    fn rows(&self) -> usize {
        if self.running.is_some() {
            5
        } else {
            3
        }
    }

    /// The input numbers of the running mean and variance.
    fn running_inputs(&self) -> (usize, usize) {
        if self.affine {
            (3, 4)
        } else {
            (1, 2)
        }
    }
}

/// The backward's coefficients from the backward sums: inputs `sums` F32 `[2, c]` (`Σ g`,
/// `Σ g·(x − μ)`), the mean and `inv_std` F32 `[c]` and, with `affine`, the weight F32 `[c]`;
/// `count` values per channel. Output F32 `[6, c]`: rows 0–3 the `[4, c]` coefficients of
/// `Tensor::batch_norm_backward_input` (mean, scale `k = inv_std·weight`, mean gradient
/// `ḡ = Σ g / count`, slope `s = inv_std·(Σ g·(x − μ)·inv_std / count)`), row 4 the weight
/// gradient `Σ g·(x − μ)·inv_std`, row 5 the bias gradient `Σ g`.
pub(crate) struct BackwardCoefficients {
    pub count: usize,
    pub affine: bool,
}

/// The channel count of a `[2, c]` first input.
fn channels(shapes: &[&[usize]], op: &'static str) -> Result<usize> {
    match shapes.first() {
        Some(&[2, c]) => Ok(*c),
        other => Err(Error::invalid(
            op,
            format!("expected a [2, c] first input, got {other:?}"),
        )),
    }
}

/// A WGSL f32 literal of `value` (shortest round-trip form).
fn literal(value: f32) -> String {
    format!("{value:?}")
}

impl CustomOp for ForwardCoefficients {
    fn name(&self) -> &str {
        "batch_norm_coefficients"
    }

    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(vec![
            self.rows(),
            channels(shapes, "batch_norm_coefficients")?,
        ])
    }

    fn cpu_forward(&self, inputs: &[&[f32]], shapes: &[&[usize]]) -> Result<Vec<f32>> {
        let c = channels(shapes, "batch_norm_coefficients")?;
        let (mean, var) = inputs[0].split_at(c);
        let mut out = vec![0.0; self.rows() * c];
        if let Some((factor, correction)) = self.running {
            let (running_mean, running_var) = self.running_inputs();
            let (keep, factor, correction) =
                ((1.0 - factor) as f32, factor as f32, correction as f32);
            for ch in 0..c {
                out[3 * c + ch] = inputs[running_mean][ch] * keep + mean[ch] * factor;
                out[4 * c + ch] = inputs[running_var][ch] * keep + var[ch] * correction * factor;
            }
        }
        for ch in 0..c {
            let inv_std = 1.0 / (var[ch] + self.eps as f32).sqrt();
            let (weight, bias) = match self.affine {
                true => (inputs[1][ch], inputs[2][ch]),
                false => (1.0, 0.0),
            };
            let scale = inv_std * weight;
            out[ch] = inv_std;
            out[c + ch] = scale;
            out[2 * c + ch] = bias - mean[ch] * scale;
        }
        Ok(out)
    }

    fn backward(&self, inputs: &[Tensor], _grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None; inputs.len()])
    }

    fn wgsl(&self) -> Option<String> {
        let (weight, bias) = match self.affine {
            true => ("input1[ch]", "input2[ch]"),
            false => ("1.0", "0.0"),
        };
        let running = match self.running {
            Some((factor, correction)) => {
                let (mean, var) = self.running_inputs();
                format!(
                    "    if (row == 3u) {{
        return input{mean}[ch] * {keep} + input0[ch] * {factor};
    }}
    if (row == 4u) {{
        return input{var}[ch] * {keep} + input0[c + ch] * {correction} * {factor};
    }}
",
                    keep = literal((1.0 - factor) as f32),
                    factor = literal(factor as f32),
                    correction = literal(correction as f32),
                )
            }
            None => String::new(),
        };
        Some(format!(
            "fn compute(i: u32) -> f32 {{
    let c = params[0] / {rows}u;
    let row = i / c;
    let ch = i % c;
{running}    let inv_std = 1.0 / sqrt(input0[c + ch] + {eps});
    if (row == 0u) {{
        return inv_std;
    }}
    let scale = inv_std * {weight};
    if (row == 1u) {{
        return scale;
    }}
    return {bias} - input0[ch] * scale;
}}
",
            eps = literal(self.eps as f32),
            rows = self.rows(),
        ))
    }
}

impl CustomOp for BackwardCoefficients {
    fn name(&self) -> &str {
        "batch_norm_backward_coefficients"
    }

    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(vec![
            6,
            channels(shapes, "batch_norm_backward_coefficients")?,
        ])
    }

    fn cpu_forward(&self, inputs: &[&[f32]], shapes: &[&[usize]]) -> Result<Vec<f32>> {
        let c = channels(shapes, "batch_norm_backward_coefficients")?;
        let per = (1.0 / self.count as f64) as f32;
        let (sum, centered) = inputs[0].split_at(c);
        let (mean, inv_std) = (inputs[1], inputs[2]);
        let mut out = vec![0.0; 6 * c];
        for ch in 0..c {
            let weight = if self.affine { inputs[3][ch] } else { 1.0 };
            let grad_weight = centered[ch] * inv_std[ch];
            out[ch] = mean[ch];
            out[c + ch] = inv_std[ch] * weight;
            out[2 * c + ch] = sum[ch] * per;
            out[3 * c + ch] = inv_std[ch] * (grad_weight * per);
            out[4 * c + ch] = grad_weight;
            out[5 * c + ch] = sum[ch];
        }
        Ok(out)
    }

    fn backward(&self, inputs: &[Tensor], _grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None; inputs.len()])
    }

    fn wgsl(&self) -> Option<String> {
        let weight = if self.affine { "input3[ch]" } else { "1.0" };
        Some(format!(
            "fn compute(i: u32) -> f32 {{
    let c = params[0] / 6u;
    let row = i / c;
    let ch = i % c;
    let inv_std = input2[ch];
    let grad_weight = input0[c + ch] * inv_std;
    switch row {{
        case 0u: {{ return input1[ch]; }}
        case 1u: {{ return inv_std * {weight}; }}
        case 2u: {{ return input0[ch] * {per}; }}
        case 3u: {{ return inv_std * (grad_weight * {per}); }}
        case 4u: {{ return grad_weight; }}
        default: {{ return input0[ch]; }}
    }}
}}
",
            per = literal((1.0 / self.count as f64) as f32),
        ))
    }
}
