//! The row primitives at the tensor level: softmax and log-softmax over the last dim
//! (`softmax_last`, `log_softmax_last`, with their own derivative rule `GradFn::SoftmaxLast`
//! and its one-kernel primitive `softmax_last_backward`), `layer_norm` (like
//! `torch.nn.functional.layer_norm`) and `rms_norm` (like `torch.nn.functional.rms_norm`),
//! each one kernel on the GPU instead of a chain of reductions and elementwise passes; and
//! `rotary_embedding` (rotary position embedding of rows, "rotate half" layout), one kernel
//! instead of slices, a concatenation and elementwise passes.
//!
//! `layer_norm`, `rms_norm` and `rotary_embedding` run their primitive when no gradient is recorded (inference,
//! `no_grad`, or no operand that requires one); otherwise their composite (layer norm: mean,
//! centre, mean of squares, rsqrt, scale, affine; RMS norm: square, sum, divide, rsqrt, scale,
//! weight), which autograd differentiates. Both paths compute the same values in the same
//! order; the composite is the primitive's reference in the tests.

use std::sync::{Arc, RwLock};

use super::elementwise::float_promotion;
use super::Tensor;
use crate::autograd::GradFn;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

impl Tensor {
    /// Softmax over the last dim by the `softmax_last` primitive (float dtypes; the caller
    /// has applied autocast). `safe`: rows of only `-inf` give zeros, not NaN (masked
    /// attention; the same derivative rule then gives them zero gradients).
    pub(crate) fn softmax_last_dim(&self, safe: bool) -> Result<Tensor> {
        let storage = Arc::new(RwLock::new(
            self.storage().softmax_last(self.layout(), safe)?,
        ));
        let layout = Layout::contiguous(self.shape());
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::SoftmaxLast {
            input: self.clone(),
            output: Tensor::from_view(storage.clone(), layout.clone(), None),
            log: false,
        });
        Ok(Tensor::from_view(storage, layout, grad_fn))
    }

    /// Log-softmax over the last dim by the `log_softmax_last` primitive (float dtypes; the
    /// caller has applied autocast): one kernel, and one for its gradient.
    pub(crate) fn log_softmax_last_dim(&self) -> Result<Tensor> {
        let storage = Arc::new(RwLock::new(self.storage().log_softmax_last(self.layout())?));
        let layout = Layout::contiguous(self.shape());
        let grad_fn = Tensor::record(&[self], self.dtype(), || GradFn::SoftmaxLast {
            input: self.clone(),
            output: Tensor::from_view(storage.clone(), layout.clone(), None),
            log: true,
        });
        Ok(Tensor::from_view(storage, layout, grad_fn))
    }

    /// The input gradient of softmax (`log` false: `y * (g - sum(g * y))`) or log-softmax
    /// (`log` true: `g - exp(y) * sum(g)`) over the last dim, from the forward's `output` `y`
    /// and the output gradient `grad`: the `softmax_last_backward` primitive (one kernel)
    /// where nothing records this computation, otherwise the same rule in tensor ops.
    pub(crate) fn softmax_last_backward(
        output: &Tensor,
        grad: &Tensor,
        log: bool,
    ) -> Result<Tensor> {
        let recorded =
            crate::autograd::is_grad_enabled() && (output.is_tracked() || grad.is_tracked());
        if recorded || output.dtype() != grad.dtype() || output.shape() != grad.shape() {
            return if log {
                grad.sub(&output.exp()?.mul(&grad.sum(&[-1], true)?)?)
            } else {
                let along = grad.mul(output)?.sum(&[-1], true)?;
                output.mul(&grad.sub(&along)?)
            };
        }
        let (output, grad) = (output.contiguous()?, grad.contiguous()?);
        let storage = output.storage().softmax_last_backward(
            output.layout(),
            &grad.storage(),
            grad.layout(),
            log,
        )?;
        Ok(Tensor::from_storage(storage, output.shape(), None))
    }

    /// Layer normalization over the trailing `normalized_shape` dims, like
    /// `torch.nn.functional.layer_norm`: `(x - mean) / sqrt(var + eps) * weight + bias` with the
    /// biased variance; `weight` and `bias` (optional, each of `normalized_shape`) as in
    /// `nn::LayerNorm`. Under autocast an F16 input is normalized in f32. One GPU kernel when
    /// no gradient is recorded.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if let Some(wide) = self.upcast_if_autocast()? {
            return wide.layer_norm(normalized_shape, weight, bias, eps);
        }
        let k = normalized_shape.len();
        let parameters = [("weight", weight), ("bias", bias)];
        let Some(dtype) = self.row_primitive_dtype("layer_norm", normalized_shape, &parameters)?
        else {
            return self.layer_norm_composite(k, weight, bias, eps);
        };
        let (x, length) = self.as_rows(normalized_shape, dtype)?;
        // Weight and bias: both, or ones / zeros for the one missing.
        let affine = match (weight, bias) {
            (None, None) => None,
            (weight, bias) => {
                let vector = |p: Option<&Tensor>, fill: f64| -> Result<Tensor> {
                    match p {
                        Some(p) => p.to_dtype(dtype)?.reshape([length]),
                        None => Tensor::full(&[length], fill, dtype, x.device()),
                    }
                };
                Some((vector(weight, 1.0)?, vector(bias, 0.0)?))
            }
        };
        let storage = {
            let input = x.storage();
            match &affine {
                None => input.layer_norm_last(x.layout(), None, eps)?,
                Some((weight, bias)) => {
                    let (w, b) = (weight.storage(), bias.storage());
                    input.layer_norm_last(
                        x.layout(),
                        Some(((&w, weight.layout()), (&b, bias.layout()))),
                        eps,
                    )?
                }
            }
        };
        Tensor::from_storage(storage, x.shape(), None).reshape(self.shape())
    }

    /// RMS normalization over the trailing `normalized_shape` dims, like
    /// `torch.nn.functional.rms_norm`: `x / sqrt(mean(x²) + eps) * weight`, with `weight`
    /// (optional, of `normalized_shape`) as in `nn::RMSNorm`; `eps` `None` is the input dtype's
    /// machine epsilon, as PyTorch's. An F16 input is normalized in f32 and stays F16 (as
    /// PyTorch computes it). One GPU kernel when no gradient is recorded.
    pub fn rms_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Result<Tensor> {
        let eps = eps.unwrap_or(match self.dtype() {
            DType::F16 => 0.0009765625,
            DType::BF16 => 0.0078125,
            DType::F64 => f64::EPSILON,
            DType::F32 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => f32::EPSILON as f64,
        });
        let k = normalized_shape.len();
        let parameters = [("weight", weight)];
        let Some(dtype) = self.row_primitive_dtype("rms_norm", normalized_shape, &parameters)?
        else {
            return self.rms_norm_composite(k, weight, eps);
        };
        let (x, length) = self.as_rows(normalized_shape, dtype)?;
        let weight = weight
            .map(|w| w.to_dtype(dtype)?.reshape([length]))
            .transpose()?;
        let storage = {
            let input = x.storage();
            match &weight {
                None => input.rms_norm_last(x.layout(), None, eps)?,
                Some(weight) => {
                    let w = weight.storage();
                    input.rms_norm_last(x.layout(), Some((&w, weight.layout())), eps)?
                }
            }
        };
        Tensor::from_storage(storage, x.shape(), None).reshape(self.shape())
    }

    /// The dtype a row primitive over the trailing `normalized_shape` dims computes in (the
    /// input's, widened by the parameters' as `mul`/`add` would), after checking the shapes
    /// (`op` names the errors); `None` where the composite must run instead: a gradient is
    /// recorded, or a dtype is not a float.
    fn row_primitive_dtype(
        &self,
        op: &'static str,
        normalized_shape: &[usize],
        parameters: &[(&str, Option<&Tensor>)],
    ) -> Result<Option<DType>> {
        let k = normalized_shape.len();
        if k == 0 || self.rank() < k || self.shape()[self.rank() - k..] != normalized_shape[..] {
            return Err(Error::InvalidShape {
                op,
                shape: self.shape().to_vec(),
                message: format!(
                    "the trailing dims must be the normalized shape {normalized_shape:?}"
                ),
            });
        }
        for (name, parameter) in parameters {
            if let Some(parameter) = parameter {
                if parameter.shape() != normalized_shape {
                    return Err(Error::ShapeMismatch {
                        op,
                        lhs: normalized_shape.to_vec(),
                        rhs: parameter.shape().to_vec(),
                        reason: format!("the {name} must have the normalized shape"),
                    });
                }
            }
        }
        let present = || parameters.iter().filter_map(|(_, parameter)| *parameter);
        let dtype = present().fold(self.dtype(), |dtype, p| {
            float_promotion(dtype, p.dtype()).unwrap_or(dtype)
        });
        let recorded = crate::autograd::is_grad_enabled()
            && (self.is_tracked() || present().any(Tensor::is_tracked));
        if recorded || !dtype.is_float() || !self.dtype().is_float() {
            return Ok(None);
        }
        Ok(Some(dtype))
    }

    /// This tensor in `dtype` as `[rows, length]` rows of the trailing `normalized_shape`
    /// dims, and the row length.
    fn as_rows(&self, normalized_shape: &[usize], dtype: DType) -> Result<(Tensor, usize)> {
        let x = if self.dtype() == dtype {
            self.clone()
        } else {
            self.to_dtype(dtype)?
        };
        let length: usize = normalized_shape.iter().product();
        let rows_shape: Vec<usize> = x.shape()[..x.rank() - normalized_shape.len()]
            .iter()
            .copied()
            .chain([length])
            .collect();
        Ok((x.reshape(rows_shape)?, length))
    }

    /// The composite of [`Tensor::rms_norm`] over the last `k` dims (autograd records it). The
    /// mean square is a sum and then a division: under autocast the sum runs in f32 (a mean
    /// would keep f16, as PyTorch's `mean` does), so the statistic is not rounded to f16.
    fn rms_norm_composite(&self, k: usize, weight: Option<&Tensor>, eps: f64) -> Result<Tensor> {
        let dims: Vec<isize> = (1..=k as isize).map(|d| -d).collect();
        let count: usize = self.shape()[self.rank() - k..].iter().product();
        let mean_square = self
            .square()?
            .sum(&dims, true)?
            .div_scalar(count.max(1) as f64)?;
        let normalized = self.mul(&mean_square.add_scalar(eps)?.rsqrt()?)?;
        match weight {
            Some(weight) => normalized.mul(weight),
            None => Ok(normalized),
        }
    }

    /// The composite of [`Tensor::layer_norm`] over the last `k` dims (autograd records it).
    fn layer_norm_composite(
        &self,
        k: usize,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let dims: Vec<isize> = (1..=k as isize).map(|d| -d).collect();
        let mean = self.mean(&dims, true)?;
        let centered = self.sub(&mean)?;
        let var = centered.square()?.mean(&dims, true)?;
        let normalized = centered.mul(&var.add_scalar(eps)?.rsqrt()?)?;
        let scaled = match weight {
            Some(weight) => normalized.mul(weight)?,
            None => normalized,
        };
        match bias {
            Some(bias) => scaled.add(bias),
            None => Ok(scaled),
        }
    }

    /// Rotary position embedding in Hugging Face's "rotate half" layout: `self` is `[..,
    /// positions, head_dim]`, `cos` and `sin` are `[positions, rotary_dim]` (`rotary_dim` even,
    /// nonzero, at most `head_dim`); the first `rotary_dim` values of each row become
    /// `x · cos + rotate_half(x) · sin` with `rotate_half(x) = [-x₂, x₁]` (the rotated part's
    /// halves), the others pass through. One GPU kernel (the `rotary_last` primitive, reading a
    /// strided view in place where it is dense) when no gradient is recorded and the operands
    /// share a float dtype; otherwise the composite (slices, negation, concatenation, products
    /// and a sum), which autograd differentiates and which is the primitive's reference.
    pub fn rotary_embedding(&self, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
        const OP: &str = "rotary_embedding";
        let rank = self.rank();
        if rank < 2 {
            return Err(Error::InvalidShape {
                op: OP,
                shape: self.shape().to_vec(),
                message: "needs [.., positions, head_dim]".into(),
            });
        }
        let (positions, head_dim) = (self.shape()[rank - 2], self.shape()[rank - 1]);
        let rotary_dim = cos.shape().last().copied().unwrap_or(0);
        for table in [cos, sin] {
            if table.shape() != [positions, rotary_dim]
                || rotary_dim == 0
                || !rotary_dim.is_multiple_of(2)
                || rotary_dim > head_dim
            {
                return Err(Error::ShapeMismatch {
                    op: OP,
                    lhs: self.shape().to_vec(),
                    rhs: table.shape().to_vec(),
                    reason: "cos and sin must be [positions, rotary_dim] of x [.., positions, \
                             head_dim], rotary_dim even, nonzero and at most head_dim"
                        .into(),
                });
            }
        }
        let recorded = crate::autograd::is_grad_enabled()
            && (self.is_tracked() || cos.is_tracked() || sin.is_tracked());
        let dtype = self.dtype();
        if recorded || !dtype.is_float() || cos.dtype() != dtype || sin.dtype() != dtype {
            return self.rotary_embedding_composite(cos, sin, rotary_dim);
        }
        let storage = {
            let (input, cos_storage, sin_storage) = (self.storage(), cos.storage(), sin.storage());
            input.rotary_last(
                self.layout(),
                (&cos_storage, cos.layout()),
                (&sin_storage, sin.layout()),
            )?
        };
        Ok(Tensor::from_storage(storage, self.shape(), None))
    }

    /// The composite of [`Tensor::rotary_embedding`] (autograd records it).
    fn rotary_embedding_composite(
        &self,
        cos: &Tensor,
        sin: &Tensor,
        rotary_dim: usize,
    ) -> Result<Tensor> {
        let head_dim = self.shape()[self.rank() - 1];
        let rotated_part = if rotary_dim == head_dim {
            self.clone()
        } else {
            self.narrow(-1, 0, rotary_dim)?
        };
        let half = rotary_dim / 2;
        let first = rotated_part.narrow(-1, 0, half)?;
        let second = rotated_part.narrow(-1, half, half)?;
        let rotated = Tensor::cat(&[&second.neg()?, &first], -1)?;
        let result = rotated_part.mul(cos)?.add(&rotated.mul(sin)?)?;
        if rotary_dim == head_dim {
            return Ok(result);
        }
        let passed = self.narrow(-1, rotary_dim, head_dim - rotary_dim)?;
        Tensor::cat(&[&result, &passed], -1)
    }
}
