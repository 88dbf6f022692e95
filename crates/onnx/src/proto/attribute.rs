//! `AttributeProto`: one named attribute of a node (a number, string, tensor, graph or a list
//! of them) and its `AttributeType` discriminator.

use super::{GraphProto, SparseTensorProto, TensorProto, TypeProto};

/// One attribute of a node; `type` says which value field holds the value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// A float value.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// An integer value.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// A string value (bytes; UTF-8 by convention).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// A tensor value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// A graph value (control flow bodies).
    #[prost(message, optional, boxed, tag = "6")]
    pub g: Option<Box<GraphProto>>,
    /// Float list.
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    /// Integer list.
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    /// String list.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// Tensor list.
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    /// Graph list.
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    /// Documentation.
    #[prost(string, tag = "13")]
    pub doc_string: String,
    /// A type value.
    #[prost(message, optional, tag = "14")]
    pub tp: Option<TypeProto>,
    /// Which field holds the value (`AttributeType`).
    #[prost(enumeration = "AttributeType", tag = "20")]
    pub r#type: i32,
    /// In a function body: the caller's attribute this one refers to.
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
    /// A sparse tensor value.
    #[prost(message, optional, tag = "22")]
    pub sparse_tensor: Option<SparseTensorProto>,
}

/// What kind of value an attribute holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AttributeType {
    /// Not set.
    Undefined = 0,
    /// `f`.
    Float = 1,
    /// `i`.
    Int = 2,
    /// `s`.
    String = 3,
    /// `t`.
    Tensor = 4,
    /// `g`.
    Graph = 5,
    /// `floats`.
    Floats = 6,
    /// `ints`.
    Ints = 7,
    /// `strings`.
    Strings = 8,
    /// `tensors`.
    Tensors = 9,
    /// `graphs`.
    Graphs = 10,
    /// `sparse_tensor`.
    SparseTensor = 11,
    /// `sparse_tensors`.
    SparseTensors = 12,
    /// `tp`.
    TypeProto = 13,
    /// `type_protos`.
    TypeProtos = 14,
}
