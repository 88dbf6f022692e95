//! `OnnxError`: everything that can go wrong loading or running a model, each with the file,
//! tensor, node (name and op_type) or input it concerns.

/// An error of the ONNX importer. Messages name what they concern: the file, the tensor, the
/// node (`"name" (OpType)`) and its operands, or the graph input.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// A file could not be read.
    #[error("reading {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// The bytes are not a valid protobuf message of the expected kind (truncated, corrupt).
    #[error("malformed ONNX protobuf ({what}): {message}")]
    Decode {
        /// Which message was decoded (`model`, `tensor file.pb`).
        what: String,
        /// The decoder's reason.
        message: String,
    },
    /// The model as a whole is invalid: no graph, a cycle, a value nothing produces.
    #[error("invalid model: {0}")]
    Model(String),
    /// A constant tensor (initializer, `Constant` attribute, test data) is invalid or cannot
    /// be represented: bad shape, wrong data length, unsupported element type, external data
    /// outside the model's folder.
    #[error("tensor `{name}`: {message}")]
    Tensor {
        /// The tensor's name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A node failed: bad attributes, operands of the wrong shape or type, a core error.
    #[error("node {node}: {message}")]
    Node {
        /// The node as `"name" (OpType)`.
        node: String,
        /// What is wrong, with the operands' shapes and types where they matter.
        message: String,
    },
    /// No implementation exists for a node's operator (or for its opset version).
    #[error("node {node}: unsupported operator {operator}")]
    Unsupported {
        /// The node as `"name" (OpType)`.
        node: String,
        /// The operator, with its domain and opset version.
        operator: String,
    },
    /// A graph input was not given at run time.
    #[error("graph input `{name}` was not given (needed by {needed_by})")]
    MissingInput {
        /// The input's name.
        name: String,
        /// The nodes (or outputs) that read it.
        needed_by: String,
    },
    /// A given input does not match the graph's declaration (unknown name, rank, fixed dim,
    /// element type).
    #[error("input `{name}`: {message}")]
    Input {
        /// The input's name.
        name: String,
        /// What does not match.
        message: String,
    },
}

/// Shorthand for the importer's results.
pub type Result<T> = std::result::Result<T, OnnxError>;
