//! `Tensor::class_pick`: the fused core of cross-entropy and NLL with class-index targets,
//! over the `class_pick` primitive (one kernel forward, one backward on a GPU), with the
//! composite ops (a comparison, casts, a gather) where the primitive has no kernel (f64 on a
//! GPU) — the same values either way.

use std::sync::Arc;

use super::Tensor;
use crate::autograd::CustomBackward;
use crate::error::{Error, Result};

impl Tensor {
    /// For `[n, c]` scores (this tensor, float) and `n` integer class indices `target`: a
    /// `[2, n]` tensor whose row 0 is `w[t_i] · self[i, t_i]` and row 1 is `w[t_i]`, with `w`
    /// the `[c]` class `weight` (1 without), both 0 on rows whose target equals `ignore`.
    /// Row 0 is differentiable in the scores (the weights are not). Other targets outside
    /// `[0, c)` are errors (on a GPU at the next readback). The negative log-likelihood's
    /// mean is `-row0.sum() / row1.sum()` (PyTorch's `nll_loss` with `weight` and
    /// `ignore_index`).
    pub fn class_pick(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        ignore: Option<i64>,
    ) -> Result<Tensor> {
        const OP: &str = "class_pick";
        if self.rank() != 2 || !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!(
                    "scores must be a 2-D float tensor, got {} {:?}",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        let (rows, classes) = (self.shape()[0], self.shape()[1]);
        if target.shape() != [rows] || !target.dtype().is_index() {
            return Err(Error::invalid(
                OP,
                format!(
                    "targets must be {rows} integer class indices, got {} {:?}",
                    target.dtype(),
                    target.shape()
                ),
            ));
        }
        self.same_device(OP, target)?;
        if let Some(weight) = weight {
            self.same_device(OP, weight)?;
            if weight.shape() != [classes] || weight.dtype() != self.dtype() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "class weights must be [{classes}] {}, got {} {:?}",
                        self.dtype(),
                        weight.dtype(),
                        weight.shape()
                    ),
                ));
            }
        }
        let scores = self.contiguous()?;
        let weight = weight.map(Tensor::contiguous).transpose()?;
        let fused = {
            let (s, t) = (scores.storage(), target.storage());
            let w = weight.as_ref().map(Tensor::storage);
            s.class_pick(
                scores.layout(),
                (&t, target.layout()),
                w.as_deref().zip(weight.as_ref().map(Tensor::layout)),
                ignore,
            )
        };
        let picked = match fused {
            Ok(storage) => Tensor::from_storage(storage, &[2, rows], None),
            Err(Error::Unsupported { .. }) => {
                return class_pick_composite(self, target, weight.as_ref(), ignore)
            }
            Err(error) => return Err(error),
        };
        let backward = Arc::new(PickBackward {
            target: target.clone(),
            weight,
            ignore,
            classes,
        });
        Ok(Tensor::with_custom_backward(&picked, &[self], backward))
    }
}

/// [`Tensor::class_pick`] in tensor ops, differentiable through them.
fn class_pick_composite(
    scores: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    ignore: Option<i64>,
) -> Result<Tensor> {
    let (safe, kept) = match ignore {
        Some(index) => {
            let kept = target.ne_scalar(index as f64)?;
            let safe = target.mul(&kept.to_dtype(target.dtype())?)?;
            (safe, Some(kept.to_dtype(scores.dtype())?))
        }
        None => (target.clone(), None),
    };
    let picked = scores.gather(1, &safe.unsqueeze(1)?)?.squeeze(1)?;
    let mut sample_weight = match weight {
        Some(weight) => Some(weight.detach().index_select(0, &safe)?),
        None => None,
    };
    if let Some(kept) = kept {
        sample_weight = Some(match sample_weight {
            Some(w) => w.mul(&kept)?,
            None => kept,
        });
    }
    let sample_weight = match sample_weight {
        Some(w) => w,
        None => picked.detach().ones_like()?,
    };
    Tensor::stack(&[&picked.mul(&sample_weight)?, &sample_weight], 0)
}

/// The gradient of [`Tensor::class_pick`]: `w[t_i] · g_i` at `(i, t_i)` of the scores.
struct PickBackward {
    target: Tensor,
    weight: Option<Tensor>,
    ignore: Option<i64>,
    classes: usize,
}

impl CustomBackward for PickBackward {
    fn backward(&self, _inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let rows = self.target.numel();
        let grad = grad_output.narrow(0, 0, 1)?.reshape([rows])?.contiguous()?;
        let storage = {
            let (g, t) = (grad.storage(), self.target.storage());
            let w = self.weight.as_ref().map(Tensor::storage);
            g.class_pick_backward(
                grad.layout(),
                (&t, self.target.layout()),
                w.as_deref().zip(self.weight.as_ref().map(Tensor::layout)),
                self.ignore,
                self.classes,
            )?
        };
        Ok(vec![Some(Tensor::from_storage(
            storage,
            &[rows, self.classes],
            None,
        ))])
    }
}
