//! Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class weights,
//! `ignore_index`, reductions none / sum / mean), written as tensor ops so gradients flow
//! to the scores.

use anygrad_core::Tensor;

use super::{any_opset, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The loss operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("NegativeLogLikelihoodLoss", |c| {
        let input = c.tensor(0)?;
        Ok(vec![Value::Tensor(nll(c, &input)?)])
    }),
    any_opset("SoftmaxCrossEntropyLoss", softmax_cross_entropy),
];

/// The negative log-likelihood of `log_prob` `[N, C, d...]` at the node's targets (input 1)
/// with optional class weights (input 2).
fn nll(ctx: &NodeContext, log_prob: &Tensor) -> Result<Tensor> {
    let target = ctx.int64(1)?;
    let weight = ctx.optional_tensor(2)?;
    let reduction = ctx.attr_string("reduction", "mean")?;
    let ignore = ctx.attr_opt_int("ignore_index")?;
    if log_prob.rank() < 2 {
        return Err(ctx.error("the input must be [N, C, d...]"));
    }
    let classes = log_prob.shape()[1] as i64;
    let mut expected = vec![log_prob.shape()[0]];
    expected.extend_from_slice(&log_prob.shape()[2..]);
    if target.shape != expected {
        return Err(ctx.error(format!(
            "target shape {:?} does not match the input's {expected:?}",
            target.shape
        )));
    }
    let mut picked = Vec::with_capacity(target.data.len());
    let mut keep = Vec::with_capacity(target.data.len());
    for &t in &target.data {
        if Some(t) == ignore {
            picked.push(0i32);
            keep.push(0f32);
        } else if (0..classes).contains(&t) {
            picked.push(t as i32);
            keep.push(1.0);
        } else {
            return Err(ctx.error(format!("target {t} is not a class in 0..{classes}")));
        }
    }
    let device = log_prob.device();
    let mut index_shape = expected.clone();
    index_shape.insert(1, 1);
    ctx.core((|| {
        let index = Tensor::from_vec(picked.clone(), &index_shape, device)?;
        let chosen = log_prob.gather(1, &index)?.squeeze(1)?;
        let mut factor = Tensor::from_vec(keep, &expected, device)?.to_dtype(log_prob.dtype())?;
        if let Some(weight) = &weight {
            let flat = Tensor::from_vec(picked, &[target.data.len()], device)?;
            let per = weight.index_select(0, &flat)?.reshape(expected.clone())?;
            factor = factor.mul(&per)?;
        }
        let loss = chosen.mul(&factor)?.neg()?;
        match reduction.as_str() {
            "sum" => loss.sum_all(),
            "mean" => loss.sum_all()?.div(&factor.sum_all()?),
            _ => Ok(loss),
        }
    })())
}

fn softmax_cross_entropy(ctx: &NodeContext) -> Result<Vec<Value>> {
    let scores = ctx.tensor(0)?;
    if scores.rank() < 2 {
        return Err(ctx.error("the scores must be [N, C, d...]"));
    }
    let log_prob = ctx.core(scores.log_softmax(1))?;
    let loss = nll(ctx, &log_prob)?;
    Ok(vec![Value::Tensor(loss), Value::Tensor(log_prob)])
}
