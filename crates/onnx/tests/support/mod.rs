//! Builders of small ONNX models through the prost structs, shared by the integration tests.

#![allow(dead_code)]

use anygrad_onnx::proto::{
    dimension, type_proto, AttributeProto, AttributeType, DataType, Dimension, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TensorType,
    TypeProto, ValueInfoProto,
};
use prost::Message;

/// A float tensor initializer.
pub fn float_tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: DataType::Float as i32,
        float_data: values.to_vec(),
        ..Default::default()
    }
}

/// An int64 tensor initializer.
pub fn int64_tensor(name: &str, dims: &[i64], values: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: DataType::Int64 as i32,
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

/// A dim: a number, or a symbolic name when `name` is given.
pub enum D {
    N(i64),
    S(&'static str),
}

/// A tensor value declaration.
pub fn value_info(name: &str, elem: DataType, dims: &[D]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(TensorType {
                elem_type: elem as i32,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| Dimension {
                            value: Some(match d {
                                D::N(v) => dimension::Value::DimValue(*v),
                                D::S(s) => dimension::Value::DimParam(s.to_string()),
                            }),
                            denotation: String::new(),
                        })
                        .collect(),
                }),
            })),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// A node.
pub fn node(
    name: &str,
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        name: name.into(),
        op_type: op.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attributes,
        ..Default::default()
    }
}

/// An INT attribute.
pub fn int_attr(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i: value,
        r#type: AttributeType::Int as i32,
        ..Default::default()
    }
}

/// An INTS attribute.
pub fn ints_attr(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: values.to_vec(),
        r#type: AttributeType::Ints as i32,
        ..Default::default()
    }
}

/// A FLOAT attribute.
pub fn float_attr(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        f: value,
        r#type: AttributeType::Float as i32,
        ..Default::default()
    }
}

/// A TENSOR attribute.
pub fn tensor_attr(name: &str, tensor: TensorProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        t: Some(tensor),
        r#type: AttributeType::Tensor as i32,
        ..Default::default()
    }
}

/// A model of one graph at `opset`.
pub fn model(
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    opset: i64,
) -> ModelProto {
    ModelProto {
        ir_version: 8,
        producer_name: "anygrad-onnx tests".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(GraphProto {
            name: "test".into(),
            node: nodes,
            initializer: initializers,
            input: inputs,
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The encoded bytes of a model.
pub fn bytes(model: &ModelProto) -> Vec<u8> {
    model.encode_to_vec()
}
