//! `TypeProto` (tensor, sequence and optional types) and `TensorShapeProto` with its
//! dimensions (a number or a symbolic name).

/// The type of a value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// Which kind of type.
    #[prost(oneof = "type_proto::Value", tags = "1, 4, 9")]
    pub value: Option<type_proto::Value>,
    /// Free annotation.
    #[prost(string, tag = "6")]
    pub denotation: String,
}

/// The variants of `TypeProto`.
pub mod type_proto {
    /// The kinds of type the importer reads.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// A dense tensor.
        #[prost(message, tag = "1")]
        TensorType(super::TensorType),
        /// A sequence of values.
        #[prost(message, tag = "4")]
        SequenceType(Box<super::SequenceType>),
        /// An optional value.
        #[prost(message, tag = "9")]
        OptionalType(Box<super::OptionalType>),
    }
}

/// A tensor type: element type and (possibly partial, possibly symbolic) shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorType {
    /// The element type (`DataType`).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape; absent when the rank is unknown.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// A sequence type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SequenceType {
    /// The element type.
    #[prost(message, optional, boxed, tag = "1")]
    pub elem_type: Option<Box<TypeProto>>,
}

/// An optional type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OptionalType {
    /// The type of the value when present.
    #[prost(message, optional, boxed, tag = "1")]
    pub elem_type: Option<Box<TypeProto>>,
}

/// A shape: one entry per dim.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dims.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// One dim: a size, a symbolic name, or unknown.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// The size or name.
    #[prost(oneof = "dimension::Value", tags = "1, 2")]
    pub value: Option<dimension::Value>,
    /// Free annotation.
    #[prost(string, tag = "3")]
    pub denotation: String,
}

/// The variants of `Dimension`.
pub mod dimension {
    /// A size or a symbolic name.
    #[derive(Clone, PartialEq, Eq, Hash, prost::Oneof)]
    pub enum Value {
        /// A fixed size.
        #[prost(int64, tag = "1")]
        DimValue(i64),
        /// A symbolic name (`batch`): any size, the same wherever the name appears.
        #[prost(string, tag = "2")]
        DimParam(String),
    }
}
