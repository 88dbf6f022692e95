//! ONNX import for anygrad: load a `.onnx` file ([`OnnxModel::load`]), run it on the CPU or
//! a GPU with anygrad tensor ops ([`OnnxModel::run`]), and fine-tune its weights (the
//! initializers are trainable tensors: [`OnnxModel::parameters`], gradients through every
//! op, [`OnnxModel::save_safetensors`]).
//!
//! The protobuf messages are Rust structs decoded by `prost` ([`proto`]). Values on the
//! graph's edges are device tensors or exact int64 host values ([`Value`]), so shape
//! arithmetic keeps ONNX's int64 semantics while anygrad's devices have 32-bit integers.
//! Operators are looked up in a registry by op_type and opset ([`supported_operators`]).

#![warn(missing_docs)]

pub mod backend_test;
mod batch_norm_fold;
pub mod compare;
pub mod context;
mod conv_fusion;
pub mod declaration;
pub mod error;
mod executor;
mod external_data;
mod graph_order;
mod host_int64;
pub mod host_tensor;
pub mod model;
pub mod ops;
pub mod proto;
pub mod registry;
pub mod tensor_data;
pub mod value;

pub use backend_test::{find_cases, read_tensor_file, run_case, CaseOutcome};
pub use compare::{compare, Tolerance};
pub use conv_fusion::{FusedConvChain, FUSION_VARIABLE};
pub use declaration::{Declaration, DeclaredDim};
pub use error::{OnnxError, Result};
pub use host_tensor::{HostData, HostTensor};
pub use model::OnnxModel;
pub use registry::{coverage_table, supported_operators};
pub use value::{Int64Tensor, Value, MAX_ELEMENTS};
