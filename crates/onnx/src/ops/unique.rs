//! Unique: the distinct elements (or slices along `axis`) of a tensor, sorted or in order of
//! first appearance, with the first-occurrence indices, the inverse indices and the counts.
//! The grouping runs on the host; the values are picked from the input on its device.

use anygrad_core::Tensor;

use super::{any_opset, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::{Int64Tensor, Value};

/// The Unique operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[any_opset("Unique", unique)];

fn unique(ctx: &NodeContext) -> Result<Vec<Value>> {
    let input = ctx.input(0)?.clone();
    let x = match &input {
        Value::Int64(v) => {
            let wide: Vec<f64> = v.data.iter().map(|&x| x as f64).collect();
            ctx.core(Tensor::from_vec(wide, &v.shape, &anygrad_core::Device::Cpu))?
        }
        Value::Tensor(t) => t.clone(),
    };
    let sorted = ctx.attr_int("sorted", 1)? != 0;
    let (data, axis) = match ctx.attr_opt_int("axis")? {
        Some(a) => (x.clone(), Some(ctx.axis(a, x.rank())?)),
        None => (ctx.core(x.reshape([x.numel()]))?, None),
    };
    let along = axis.unwrap_or(0);
    let count = data.shape().get(along).copied().unwrap_or(0);
    // Each slice along the axis as a row of values.
    let moved = ctx.core(
        data.transpose(0, along as isize)
            .and_then(|t| t.contiguous()),
    )?;
    let values = ctx.core(moved.to_vec_f64())?;
    let width = values.len().checked_div(count).unwrap_or(0);
    let row = |i: usize| &values[i * width..(i + 1) * width];
    let compare = |a: usize, b: usize| {
        row(a)
            .iter()
            .zip(row(b))
            .map(|(x, y)| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    };
    // Group equal rows by sorting positions by value (stable: the first occurrence leads its
    // group), then number the groups in order of first occurrence.
    let mut by_value: Vec<usize> = (0..count).collect();
    by_value.sort_by(|&a, &b| compare(a, b));
    let mut group_of = vec![0usize; count];
    let mut group_firsts: Vec<usize> = Vec::new();
    for (k, &i) in by_value.iter().enumerate() {
        if k == 0 || compare(by_value[k - 1], i).is_ne() {
            group_firsts.push(i);
        }
        group_of[i] = group_firsts.len() - 1;
    }
    let mut appearance: Vec<usize> = (0..group_firsts.len()).collect();
    appearance.sort_by_key(|&g| group_firsts[g]);
    let mut renumber = vec![0usize; group_firsts.len()];
    for (k, &g) in appearance.iter().enumerate() {
        renumber[g] = k;
    }
    let firsts: Vec<usize> = appearance.iter().map(|&g| group_firsts[g]).collect();
    let inverse_first: Vec<usize> = group_of.iter().map(|&g| renumber[g]).collect();
    let mut order: Vec<usize> = (0..firsts.len()).collect();
    if sorted {
        order.sort_by(|&a, &b| compare(firsts[a], firsts[b]));
    }
    let mut rank_of = vec![0usize; firsts.len()];
    for (r, &k) in order.iter().enumerate() {
        rank_of[k] = r;
    }
    let picks: Vec<usize> = order.iter().map(|&k| firsts[k]).collect();
    let mut counts = vec![0i64; picks.len()];
    let inverse: Vec<i64> = inverse_first
        .iter()
        .map(|&k| {
            counts[rank_of[k]] += 1;
            rank_of[k] as i64
        })
        .collect();
    let index: Vec<i32> = picks.iter().map(|&p| p as i32).collect();
    let index = ctx.core(Tensor::from_vec(index, &[picks.len()], data.device()))?;
    let y = ctx.core(data.index_select(along as isize, &index))?;
    let y = match &input {
        Value::Int64(_) => Value::Int64(Value::Tensor(y).to_int64().map_err(|e| ctx.error(e))?),
        Value::Tensor(_) => Value::Tensor(y),
    };
    let vector = |v: Vec<i64>| Value::Int64(Int64Tensor::vector(v));
    Ok(vec![
        y,
        vector(picks.iter().map(|&p| p as i64).collect()),
        vector(inverse),
        vector(counts),
    ])
}
