//! Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
//! ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (axes as an attribute before opset 13 for
//! ReduceSum and 18 for the others, as an optional input after; `keepdims`,
//! `noop_with_empty_axes`), and ArgMax / ArgMin (`select_last_index`).

use anygrad_core::{DType, Tensor};

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The reduction operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("ReduceSum", |c| reduce(c, 13, 0.0, |x, d, k| x.sum(d, k))),
    any_opset("ReduceMean", |c| {
        reduce(c, 18, f64::NAN, |x, d, k| x.mean(d, k))
    }),
    any_opset("ReduceMax", |c| {
        reduce(c, 18, f64::NEG_INFINITY, |x, d, k| x.max(d, k))
    }),
    any_opset("ReduceMin", |c| {
        reduce(c, 18, f64::INFINITY, |x, d, k| x.min(d, k))
    }),
    any_opset("ReduceProd", |c| reduce(c, 18, 1.0, |x, d, k| x.prod(d, k))),
    any_opset("ReduceL1", |c| {
        reduce(c, 18, 0.0, |x, d, k| x.abs()?.sum(d, k))
    }),
    any_opset("ReduceL2", |c| {
        reduce(c, 18, 0.0, |x, d, k| x.square()?.sum(d, k)?.sqrt())
    }),
    any_opset("ReduceLogSum", |c| {
        reduce(c, 18, f64::NEG_INFINITY, |x, d, k| x.sum(d, k)?.log())
    }),
    any_opset("ReduceLogSumExp", |c| {
        reduce(c, 18, f64::NEG_INFINITY, |x, d, k| x.logsumexp(d, k))
    }),
    any_opset("ReduceSumSquare", |c| {
        reduce(c, 18, 0.0, |x, d, k| x.square()?.sum(d, k))
    }),
    any_opset("ArgMax", |c| arg(c, true)),
    any_opset("ArgMin", |c| arg(c, false)),
];

/// A reduction over the node's axes; `input_since` is the opset from which the axes are an
/// input instead of an attribute; `empty` is the value of a reduction over no element.
fn reduce(
    ctx: &NodeContext,
    input_since: i64,
    empty: f64,
    f: fn(&Tensor, &[isize], bool) -> anygrad_core::Result<Tensor>,
) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    // Bool reduces as uint8 (max = any, min = all) and comes back as Bool.
    if x.dtype() == DType::Bool {
        let mut narrowed = ctx.inputs.clone();
        narrowed[0] = Some(Value::Tensor(ctx.core(x.to_dtype(DType::U8))?));
        let inner = NodeContext {
            node: ctx.node,
            index: ctx.index,
            inputs: narrowed,
            opset: ctx.opset,
            device: ctx.device,
            declared_types: ctx.declared_types,
            subgraphs: ctx.subgraphs,
        };
        let out = reduce(&inner, input_since, empty, f)?;
        return match out.first() {
            Some(Value::Tensor(t)) => single(ctx.core(t.ne_scalar(0.0))?),
            _ => Ok(out),
        };
    }
    let keepdims = ctx.attr_int("keepdims", 1)? != 0;
    let axes = if ctx.opset >= input_since {
        ctx.optional_ints(1)?
    } else {
        ctx.attr_ints("axes")?
    };
    let axes = axes.unwrap_or_default();
    if axes.is_empty() && ctx.attr_int("noop_with_empty_axes", 0)? != 0 {
        return single(x);
    }
    let rank = x.rank();
    let dims: Vec<isize> = if axes.is_empty() {
        (0..rank as isize).collect()
    } else {
        axes.iter()
            .map(|&a| ctx.axis(a, rank).map(|d| d as isize))
            .collect::<Result<_>>()?
    };
    if dims.iter().any(|&d| x.shape()[d as usize] == 0) {
        let shape: Vec<usize> = x
            .shape()
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| {
                if !dims.contains(&(i as isize)) {
                    Some(s)
                } else if keepdims {
                    Some(1)
                } else {
                    None
                }
            })
            .collect();
        let dtype = if x.dtype().is_float() {
            x.dtype()
        } else {
            DType::F32
        };
        let filled = ctx.core(Tensor::full(&shape, empty, dtype, x.device()))?;
        return single(ctx.core(filled.to_dtype(x.dtype()))?);
    }
    single(ctx.core(f(&x, &dims, keepdims))?)
}

fn arg(ctx: &NodeContext, largest: bool) -> Result<Vec<Value>> {
    let x = ctx.tensor(0)?;
    let axis = ctx.axis(ctx.attr_int("axis", 0)?, x.rank())? as isize;
    let keepdims = ctx.attr_int("keepdims", 1)? != 0;
    let last = ctx.attr_int("select_last_index", 0)? != 0;
    let pick = |t: &Tensor| {
        if largest {
            t.argmax(axis, keepdims)
        } else {
            t.argmin(axis, keepdims)
        }
    };
    if !last {
        return single(ctx.core(pick(&x))?);
    }
    let size = ctx.core(x.dim(axis))?;
    let flipped = ctx.core(x.flip(&[axis]))?;
    let index = ctx.core(pick(&flipped))?;
    single(ctx.core(index.neg().and_then(|n| n.add_scalar(size as f64 - 1.0)))?)
}
