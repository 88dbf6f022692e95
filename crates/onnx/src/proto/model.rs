//! `ModelProto` (the file's top message), `OperatorSetIdProto`, `FunctionProto` and the
//! key/value pair `StringStringEntryProto`.

use super::graph::{GraphProto, NodeProto, ValueInfoProto};
use super::AttributeProto;

/// A whole model: IR version, operator sets, producer and the main graph.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The IR version the file follows.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// The tool that wrote the file.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Its version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Reverse-DNS name of the model's namespace.
    #[prost(string, tag = "4")]
    pub domain: String,
    /// The model's own version number.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Free documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The main graph.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// The operator sets (domain, version) the graph's nodes are interpreted in.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// Named metadata.
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
    /// Model-local functions.
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<FunctionProto>,
}

/// One operator set: a domain (`""` or `"ai.onnx"` is the default one) and its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain (`""` for the default ONNX operators).
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The operator set version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// A string key and value (metadata, external-data locations).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A model-local function (a named subgraph an operator of its domain expands to). Read so
/// that files holding functions load; the importer does not expand them yet.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FunctionProto {
    /// The function's operator name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Formal input names.
    #[prost(string, repeated, tag = "4")]
    pub input: Vec<String>,
    /// Formal output names.
    #[prost(string, repeated, tag = "5")]
    pub output: Vec<String>,
    /// Attribute names.
    #[prost(string, repeated, tag = "6")]
    pub attribute: Vec<String>,
    /// The body.
    #[prost(message, repeated, tag = "7")]
    pub node: Vec<NodeProto>,
    /// Documentation.
    #[prost(string, tag = "8")]
    pub doc_string: String,
    /// Operator sets of the body.
    #[prost(message, repeated, tag = "9")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The function's domain.
    #[prost(string, tag = "10")]
    pub domain: String,
    /// Attributes with default values.
    #[prost(message, repeated, tag = "11")]
    pub attribute_proto: Vec<AttributeProto>,
    /// Types of the body's values.
    #[prost(message, repeated, tag = "12")]
    pub value_info: Vec<ValueInfoProto>,
}
