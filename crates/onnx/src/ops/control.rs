//! Control flow: If (one of two branch graphs), Loop (a body graph run while a trip count and
//! a condition allow, with loop-carried values and stacked scan outputs) and Scan (a body run
//! over slices of its scan inputs, opset 9+). The graphs were planned at load; they read the
//! enclosing graph's values by name.

use anygrad_core::Tensor;

use super::{any_opset, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::host_int64;
use crate::value::{Int64Tensor, Value};

/// The control-flow operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("If", if_),
    any_opset("Loop", loop_),
    OperatorEntry {
        op_type: "Scan",
        min_opset: 9,
        max_opset: i64::MAX,
        run: scan,
    },
];

/// The most iterations a Loop or Scan runs (a guard against a loop without end).
const MAX_ITERATIONS: i64 = 1 << 24;

/// Whether a (one-element) value is true.
fn truthy(ctx: &NodeContext, v: &Value) -> Result<bool> {
    let values = match v {
        Value::Int64(v) => v.data.iter().map(|&x| x as f64).collect(),
        Value::Tensor(t) => ctx.core(t.to_vec_f64())?,
    };
    match values[..] {
        [x] => Ok(x != 0.0),
        _ => Err(ctx.error("a condition must hold one value")),
    }
}

fn if_(ctx: &NodeContext) -> Result<Vec<Value>> {
    let branch = if truthy(ctx, ctx.input(0)?)? {
        "then_branch"
    } else {
        "else_branch"
    };
    (ctx.subgraphs)(branch, &[])
}

/// `values` stacked along a new dim `axis` (device tensors, or int64 values on the host).
fn stack(ctx: &NodeContext, values: &[Value], axis: isize) -> Result<Value> {
    if values.iter().any(|v| matches!(v, Value::Int64(_))) {
        let all: Vec<Int64Tensor> = values
            .iter()
            .map(|v| v.to_int64().map_err(|e| ctx.error(e)))
            .collect::<Result<_>>()?;
        let refs: Vec<&Int64Tensor> = all.iter().collect();
        let out = host_int64::through_positions(&refs, |t| {
            let r: Vec<&Tensor> = t.iter().collect();
            Tensor::stack(&r, axis)
        })
        .map_err(|e| ctx.error(e))?;
        return Ok(Value::Int64(out));
    }
    let tensors: Vec<Tensor> = values
        .iter()
        .map(|v| v.to_tensor(ctx.device).map_err(|e| ctx.error(e)))
        .collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = tensors.iter().collect();
    Ok(Value::Tensor(ctx.core(Tensor::stack(&refs, axis))?))
}

/// Slice `index` of `v` along `axis`, the axis removed.
fn slice(ctx: &NodeContext, v: &Value, axis: usize, index: usize) -> Result<Value> {
    let take = |t: &Tensor| t.narrow(axis as isize, index, 1)?.squeeze(axis as isize);
    match v {
        Value::Int64(values) => Ok(Value::Int64(
            host_int64::through_positions(&[values], |t| take(&t[0])).map_err(|e| ctx.error(e))?,
        )),
        Value::Tensor(t) => Ok(Value::Tensor(ctx.core(take(t))?)),
    }
}

/// An empty float tensor for a scan output of a loop that ran no iteration.
fn empty(ctx: &NodeContext) -> Result<Value> {
    Ok(Value::Tensor(ctx.core(Tensor::zeros(
        &[0],
        anygrad_core::DType::F32,
        ctx.device,
    ))?))
}

fn loop_(ctx: &NodeContext) -> Result<Vec<Value>> {
    let trips = match ctx.optional(0) {
        Some(_) => Some(ctx.scalar(0)? as i64),
        None => None,
    };
    let mut condition = match ctx.optional(1) {
        Some(v) => truthy(ctx, v)?,
        None => true,
    };
    let mut carried: Vec<Value> = (2..ctx.input_count())
        .map(|i| ctx.input(i).cloned())
        .collect::<Result<_>>()?;
    let n = carried.len();
    let scan_count = ctx.node.output.len().saturating_sub(n);
    let mut scans: Vec<Vec<Value>> = vec![Vec::new(); scan_count];
    let mut i = 0i64;
    while condition && trips.is_none_or(|m| i < m) {
        if i >= MAX_ITERATIONS {
            return Err(ctx.error(format!("more than {MAX_ITERATIONS} iterations")));
        }
        let mut arguments = vec![
            Value::Int64(Int64Tensor {
                shape: Vec::new(),
                data: vec![i],
            }),
            Value::Tensor(ctx.core(Tensor::from_vec(vec![condition], &[], ctx.device))?),
        ];
        arguments.extend(carried.iter().cloned());
        let outputs = (ctx.subgraphs)("body", &arguments)?;
        if outputs.len() != 1 + n + scan_count {
            return Err(ctx.error(format!(
                "the body gives {} outputs for 1 condition, {n} carried and {scan_count} scan \
                 outputs",
                outputs.len()
            )));
        }
        condition = truthy(ctx, &outputs[0])?;
        carried = outputs[1..1 + n].to_vec();
        for (k, v) in outputs[1 + n..].iter().enumerate() {
            scans[k].push(v.clone());
        }
        i += 1;
    }
    let mut results = carried;
    for list in &scans {
        results.push(if list.is_empty() {
            empty(ctx)?
        } else {
            stack(ctx, list, 0)?
        });
    }
    Ok(results)
}

fn scan(ctx: &NodeContext) -> Result<Vec<Value>> {
    let m = usize::try_from(ctx.attr_int("num_scan_inputs", 0)?)
        .map_err(|_| ctx.error("num_scan_inputs must be positive"))?;
    let total = ctx.input_count();
    if m == 0 || m > total {
        return Err(ctx.error(format!("num_scan_inputs {m} for {total} inputs")));
    }
    let n = total - m;
    let list = |name: &str, count: usize| -> Result<Vec<i64>> {
        let values = ctx.attr_ints(name)?.unwrap_or_else(|| vec![0; count]);
        if values.len() != count {
            return Err(ctx.error(format!("`{name}` must hold {count} entries")));
        }
        Ok(values)
    };
    let input_axes = list("scan_input_axes", m)?;
    let input_directions = list("scan_input_directions", m)?;
    let k = ctx.node.output.len().saturating_sub(n);
    let output_axes = list("scan_output_axes", k)?;
    let output_directions = list("scan_output_directions", k)?;
    let mut state: Vec<Value> = (0..n)
        .map(|i| ctx.input(i).cloned())
        .collect::<Result<_>>()?;
    let inputs: Vec<Value> = (n..total)
        .map(|i| ctx.input(i).cloned())
        .collect::<Result<_>>()?;
    let mut axes = Vec::with_capacity(m);
    let mut length = None;
    for (j, v) in inputs.iter().enumerate() {
        let axis = ctx.axis(input_axes[j], v.shape().len())?;
        let size = v.shape()[axis];
        if length.is_some_and(|l| l != size) {
            return Err(ctx.error("scan inputs differ in length"));
        }
        length = Some(size);
        axes.push(axis);
    }
    let length = length.unwrap_or(0);
    let mut outputs: Vec<Vec<Value>> = vec![Vec::new(); k];
    for t in 0..length {
        let mut arguments = state.clone();
        for (j, v) in inputs.iter().enumerate() {
            let index = if input_directions[j] != 0 {
                length - 1 - t
            } else {
                t
            };
            arguments.push(slice(ctx, v, axes[j], index)?);
        }
        let results = (ctx.subgraphs)("body", &arguments)?;
        if results.len() != n + k {
            return Err(ctx.error(format!(
                "the body gives {} outputs for {n} states and {k} scan outputs",
                results.len()
            )));
        }
        state = results[..n].to_vec();
        for (j, v) in results[n..].iter().enumerate() {
            outputs[j].push(v.clone());
        }
    }
    let mut results = state;
    for (j, mut list) in outputs.into_iter().enumerate() {
        if list.is_empty() {
            results.push(empty(ctx)?);
            continue;
        }
        if output_directions[j] != 0 {
            list.reverse();
        }
        let rank = list[0].shape().len() + 1;
        let axis = ctx.axis(output_axes[j], rank)? as isize;
        results.push(stack(ctx, &list, axis)?);
    }
    Ok(results)
}
