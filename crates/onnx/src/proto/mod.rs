//! The ONNX protobuf messages (`onnx.proto`, IR version 11 / ONNX 1.23) as Rust structs
//! decoded and encoded by `prost`: only the messages and fields the importer reads or tests
//! write. Field numbers follow `onnx.proto`; unknown fields are skipped by the decoder, so
//! newer files still load. No `protoc` or build script is involved.

mod attribute;
mod graph;
mod model;
mod tensor;
mod types;

pub use attribute::{AttributeProto, AttributeType};
pub use graph::{GraphProto, NodeProto, ValueInfoProto};
pub use model::{FunctionProto, ModelProto, OperatorSetIdProto, StringStringEntryProto};
pub use tensor::{DataLocation, DataType, Segment, SparseTensorProto, TensorProto};
pub use types::{
    dimension, type_proto, Dimension, OptionalType, SequenceType, TensorShapeProto, TensorType,
    TypeProto,
};
