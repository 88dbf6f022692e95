//! The row primitives at the tensor level: softmax over the last dim (`softmax_last`, with its
//! own derivative rule `GradFn::SoftmaxLast`) and `layer_norm` (like
//! `torch.nn.functional.layer_norm`), each one kernel on the GPU instead of a chain of
//! reductions and elementwise passes.
//!
//! `layer_norm` runs its primitive when no gradient is recorded (inference, `no_grad`, or no
//! operand that requires one); otherwise its composite (mean, centre, mean of squares, rsqrt,
//! scale, affine), which autograd differentiates. Both paths compute the same values in the
//! same order; the composite is the primitive's reference in the tests.

use std::sync::{Arc, RwLock};

use super::elementwise::float_promotion;
use super::Tensor;
use crate::autograd::GradFn;
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
        });
        Ok(Tensor::from_view(storage, layout, grad_fn))
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
        if let Some(wide) = crate::amp::upcast_if_autocast(self)? {
            return wide.layer_norm(normalized_shape, weight, bias, eps);
        }
        let k = normalized_shape.len();
        if k == 0 || self.rank() < k || self.shape()[self.rank() - k..] != normalized_shape[..] {
            return Err(Error::InvalidShape {
                op: "layer_norm",
                shape: self.shape().to_vec(),
                message: format!(
                    "the trailing dims must be the normalized shape {normalized_shape:?}"
                ),
            });
        }
        for (name, parameter) in [("weight", weight), ("bias", bias)] {
            if let Some(parameter) = parameter {
                if parameter.shape() != normalized_shape {
                    return Err(Error::ShapeMismatch {
                        op: "layer_norm",
                        lhs: normalized_shape.to_vec(),
                        rhs: parameter.shape().to_vec(),
                        reason: format!("the {name} must have the normalized shape"),
                    });
                }
            }
        }
        // The result's dtype: the input's, widened by the parameters' as `mul`/`add` would.
        let dtype = [weight, bias]
            .into_iter()
            .flatten()
            .fold(self.dtype(), |dtype, p| {
                float_promotion(dtype, p.dtype()).unwrap_or(dtype)
            });
        let recorded = crate::autograd::is_grad_enabled()
            && [Some(self), weight, bias]
                .into_iter()
                .flatten()
                .any(Tensor::is_tracked);
        if recorded || !dtype.is_float() || !self.dtype().is_float() {
            return self.layer_norm_composite(k, weight, bias, eps);
        }
        let x = if self.dtype() == dtype {
            self.clone()
        } else {
            self.to_dtype(dtype)?
        };
        let length: usize = normalized_shape.iter().product();
        let rows_shape: Vec<usize> = x.shape()[..x.rank() - k]
            .iter()
            .copied()
            .chain([length])
            .collect();
        let x = x.reshape(rows_shape)?;
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
}
