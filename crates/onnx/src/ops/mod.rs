//! The operator implementations, one file per family. Each family lists its operators in a
//! `OPERATORS` table of [`OperatorEntry`]s (op_type, opset range, function) that
//! `registry.rs` joins.

pub(crate) mod activation;
pub(crate) mod attention;
pub(crate) mod bitwise;
pub(crate) mod cast;
pub(crate) mod causal_conv;
pub(crate) mod col2im;
pub(crate) mod comparison;
pub(crate) mod control;
pub(crate) mod conv;
pub(crate) mod detection;
pub(crate) mod determinant;
pub(crate) mod einsum;
pub(crate) mod elementwise;
pub(crate) mod geometry;
pub(crate) mod grid_sample;
pub(crate) mod linear;
pub(crate) mod linear_attention;
pub(crate) mod loss;
pub(crate) mod max_unpool;
pub(crate) mod mel_weight_matrix;
pub(crate) mod misc;
pub(crate) mod normalization;
pub(crate) mod pool;
pub(crate) mod quantize;
pub(crate) mod recurrent;
pub(crate) mod reduce;
pub(crate) mod resize;
pub(crate) mod scatter;
pub(crate) mod shape;
pub(crate) mod tensor_scatter;
pub(crate) mod unique;
pub(crate) mod window;

use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// An operator implementation: the node's output values, in order.
pub type OperatorFn = fn(&NodeContext) -> Result<Vec<Value>>;

/// One operator the importer runs, for opset versions `min_opset..=max_opset` of the default
/// domain.
#[derive(Clone, Copy)]
pub struct OperatorEntry {
    /// The ONNX op_type.
    pub op_type: &'static str,
    /// The first opset version this implementation follows.
    pub min_opset: i64,
    /// The last one.
    pub max_opset: i64,
    /// The implementation.
    pub run: OperatorFn,
}

/// An entry for every opset version.
pub(crate) const fn any_opset(op_type: &'static str, run: OperatorFn) -> OperatorEntry {
    OperatorEntry {
        op_type,
        min_opset: 1,
        max_opset: i64::MAX,
        run,
    }
}

/// One output.
pub(crate) fn single(value: impl Into<Value>) -> Result<Vec<Value>> {
    Ok(vec![value.into()])
}
