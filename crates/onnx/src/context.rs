//! `NodeContext`: what an operator implementation sees of the node it runs (its inputs as
//! values, the opset version, the device) and the typed readers of inputs and attributes,
//! whose errors name the node, the attribute or input, and the operands.

use std::collections::HashMap;

use anygrad_core::{Device, Tensor};

use crate::error::{OnnxError, Result};
use crate::proto::{AttributeProto, AttributeType, DataType, NodeProto, TensorProto};
use crate::value::{Int64Tensor, Value};

/// `"name" (OpType)`, or `#index (OpType)` for a node without a name.
pub fn describe_node(node: &NodeProto, index: usize) -> String {
    if node.name.is_empty() {
        format!("#{index} ({})", node.op_type)
    } else {
        format!("\"{}\" ({})", node.name, node.op_type)
    }
}

/// Runs a node's graph attribute (by name) on values bound to its inputs; its outputs.
pub type SubgraphRunner<'a> = dyn Fn(&str, &[Value]) -> Result<Vec<Value>> + 'a;

/// One node being run.
pub struct NodeContext<'a> {
    /// The node.
    pub node: &'a NodeProto,
    /// Its position in the graph (for nodes without a name).
    pub index: usize,
    /// Its inputs in order (`None`: an omitted optional input).
    pub inputs: Vec<Option<Value>>,
    /// The version of the node's operator set.
    pub opset: i64,
    /// The device the model runs on.
    pub device: &'a Device,
    /// Element types the graph declares for values (inputs, outputs, `value_info`), by name:
    /// what anygrad's dtypes cannot tell apart (int8 and int16 are both int32 tensors).
    pub declared_types: &'a HashMap<String, i32>,
    /// Runs one of the node's graph attributes (If's branches, Loop's body) on values bound
    /// to its inputs in order, with this node's scope visible to it; its outputs in order.
    pub subgraphs: &'a SubgraphRunner<'a>,
}

impl NodeContext<'_> {
    /// The node as `"name" (OpType)`.
    pub fn describe(&self) -> String {
        describe_node(self.node, self.index)
    }

    /// The inputs' names, types and shapes, for messages.
    pub fn operands(&self) -> String {
        let parts: Vec<String> = self
            .node
            .input
            .iter()
            .enumerate()
            .map(
                |(i, name)| match self.inputs.get(i).and_then(Option::as_ref) {
                    Some(value) => format!("`{name}` {}", value.describe()),
                    None => "(omitted)".to_string(),
                },
            )
            .collect();
        parts.join(", ")
    }

    /// The element type the graph declares for output `k`, if any.
    pub fn declared_output_type(&self, k: usize) -> Option<DataType> {
        let name = self.node.output.get(k)?;
        DataType::try_from(*self.declared_types.get(name)?).ok()
    }

    /// The element type the graph declares for input `k`, if any.
    pub fn declared_input_type(&self, k: usize) -> Option<DataType> {
        let name = self.node.input.get(k)?;
        DataType::try_from(*self.declared_types.get(name)?).ok()
    }

    /// An error of this node, with its operands.
    pub fn error(&self, message: impl std::fmt::Display) -> OnnxError {
        OnnxError::Node {
            node: self.describe(),
            message: format!("{message} (inputs: {})", self.operands()),
        }
    }

    /// A core result with its error turned into this node's error.
    pub fn core<T>(&self, result: anygrad_core::Result<T>) -> Result<T> {
        result.map_err(|e| self.error(e))
    }

    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> Result<&Value> {
        self.optional(i)
            .ok_or_else(|| self.error(format!("input {i} is required")))
    }

    /// Input `i` if present.
    pub fn optional(&self, i: usize) -> Option<&Value> {
        self.inputs.get(i).and_then(Option::as_ref)
    }

    /// The number of inputs the node lists (present or omitted).
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Input `i` as a device tensor (int64 values as int32 when they fit).
    pub fn tensor(&self, i: usize) -> Result<Tensor> {
        let value = self.input(i)?;
        value
            .to_tensor(self.device)
            .map_err(|e| self.error(format!("input {i} (`{}`): {e}", self.input_name(i))))
    }

    /// Input `i` as a device tensor if present.
    pub fn optional_tensor(&self, i: usize) -> Result<Option<Tensor>> {
        match self.optional(i) {
            Some(_) => self.tensor(i).map(Some),
            None => Ok(None),
        }
    }

    /// Input `i` as exact int64 values.
    pub fn int64(&self, i: usize) -> Result<Int64Tensor> {
        self.input(i)?
            .to_int64()
            .map_err(|e| self.error(format!("input {i} (`{}`): {e}", self.input_name(i))))
    }

    /// Input `i`'s values as a list of int64.
    pub fn ints(&self, i: usize) -> Result<Vec<i64>> {
        Ok(self.int64(i)?.data)
    }

    /// Input `i`'s values if present.
    pub fn optional_ints(&self, i: usize) -> Result<Option<Vec<i64>>> {
        match self.optional(i) {
            Some(_) => self.ints(i).map(Some),
            None => Ok(None),
        }
    }

    /// Input `i`'s single value as f64 (a scalar or one-element tensor).
    pub fn scalar(&self, i: usize) -> Result<f64> {
        let value = self.input(i)?;
        let values = match value {
            Value::Int64(v) => v.data.iter().map(|&x| x as f64).collect(),
            Value::Tensor(t) => self.core(t.to_vec_f64())?,
        };
        match values[..] {
            [x] => Ok(x),
            _ => Err(self.error(format!(
                "input {i} (`{}`) must hold one value",
                self.input_name(i)
            ))),
        }
    }

    fn input_name(&self, i: usize) -> &str {
        self.node.input.get(i).map(String::as_str).unwrap_or("")
    }

    /// The attribute `name`, if the node has it.
    pub fn attribute(&self, name: &str) -> Option<&AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    fn typed(&self, name: &str, want: AttributeType) -> Result<Option<&AttributeProto>> {
        match self.attribute(name) {
            None => Ok(None),
            Some(a) if a.r#type == want as i32 => Ok(Some(a)),
            Some(a) => Err(self.error(format!(
                "attribute `{name}` must be {want:?}, found {}",
                AttributeType::try_from(a.r#type)
                    .map(|t| format!("{t:?}"))
                    .unwrap_or_else(|_| format!("type {}", a.r#type))
            ))),
        }
    }

    /// An INT attribute or `default`.
    pub fn attr_int(&self, name: &str, default: i64) -> Result<i64> {
        Ok(self.attr_opt_int(name)?.unwrap_or(default))
    }

    /// An INT attribute if present.
    pub fn attr_opt_int(&self, name: &str) -> Result<Option<i64>> {
        Ok(self.typed(name, AttributeType::Int)?.map(|a| a.i))
    }

    /// A FLOAT attribute or `default`.
    pub fn attr_float(&self, name: &str, default: f32) -> Result<f32> {
        Ok(self
            .typed(name, AttributeType::Float)?
            .map(|a| a.f)
            .unwrap_or(default))
    }

    /// An INTS attribute if present.
    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        Ok(self
            .typed(name, AttributeType::Ints)?
            .map(|a| a.ints.clone()))
    }

    /// A FLOATS attribute if present.
    pub fn attr_floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        Ok(self
            .typed(name, AttributeType::Floats)?
            .map(|a| a.floats.clone()))
    }

    /// A STRING attribute or `default`.
    pub fn attr_string(&self, name: &str, default: &str) -> Result<String> {
        match self.typed(name, AttributeType::String)? {
            Some(a) => String::from_utf8(a.s.clone())
                .map_err(|_| self.error(format!("attribute `{name}` is not UTF-8"))),
            None => Ok(default.to_string()),
        }
    }

    /// A TENSOR attribute if present.
    pub fn attr_tensor(&self, name: &str) -> Result<Option<&TensorProto>> {
        Ok(self
            .typed(name, AttributeType::Tensor)?
            .and_then(|a| a.t.as_ref()))
    }

    /// A dim index in `-rank..rank` made non-negative (a rank-0 value has no axis).
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            return Err(self.error(format!("axis {axis} is out of range for rank {rank}")));
        }
        Ok(if axis < 0 { axis + r } else { axis } as usize)
    }
}
