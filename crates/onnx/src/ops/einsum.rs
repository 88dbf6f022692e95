//! Einsum: the core's `Tensor::einsum` over the node's operands and its `equation` attribute.

use anygrad_core::Tensor;

use super::{any_opset, single, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The Einsum operator.
pub(crate) const OPERATORS: &[OperatorEntry] = &[any_opset("Einsum", einsum)];

fn einsum(ctx: &NodeContext) -> Result<Vec<Value>> {
    let equation = ctx.attr_string("equation", "")?;
    let operands: Vec<Tensor> = (0..ctx.input_count())
        .map(|i| ctx.tensor(i))
        .collect::<Result<_>>()?;
    let references: Vec<&Tensor> = operands.iter().collect();
    single(ctx.core(Tensor::einsum(&equation, &references))?)
}
