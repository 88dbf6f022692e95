//! The one error type of anygrad. Every fallible operation returns [`Result`]; each variant
//! names the operation and the operands so that a message alone tells the user what went wrong
//! and what to do about it. A user's mistake never panics.

use crate::dtype::DType;

/// Result alias used across anygrad.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong in anygrad.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two operands' shapes are incompatible for `op`.
    #[error("{op}: shapes {lhs:?} and {rhs:?} {reason}")]
    ShapeMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
        reason: String,
    },
    /// An argument's shape is invalid for `op` (a bad dim, a bad reshape, ...).
    #[error("{op}: {message} (shape {shape:?})")]
    InvalidShape {
        op: &'static str,
        shape: Vec<usize>,
        message: String,
    },
    /// An argument (other than a shape) is out of its valid range.
    #[error("{op}: {message}")]
    InvalidArgument { op: &'static str, message: String },
    /// Two operands have different dtypes where the op needs the same one.
    #[error("{op}: dtypes {lhs} and {rhs} do not match; convert one with .to_dtype()")]
    DTypeMismatch {
        op: &'static str,
        lhs: DType,
        rhs: DType,
    },
    /// Two operands live on different devices.
    #[error(
        "{op}: operands are on different devices ({lhs} and {rhs}); move one with .to_device()"
    )]
    DeviceMismatch {
        op: &'static str,
        lhs: String,
        rhs: String,
    },
    /// The op does not support this dtype on this device.
    #[error("{op}: not supported for dtype {dtype} on {device}{hint}")]
    Unsupported {
        op: &'static str,
        dtype: DType,
        device: String,
        hint: String,
    },
    /// A device allocation failed even after the cache was emptied.
    #[error("out of memory: requested {requested} bytes with {in_use} bytes in use (limit {limit} bytes); free tensors, call empty_cache(), or use a smaller batch")]
    OutOfMemory {
        requested: u64,
        in_use: u64,
        limit: u64,
    },
    /// One tensor needs a single buffer larger than the adapter allows for one buffer (its
    /// largest storage binding), however much memory is free. `op` and `operands` (shapes
    /// and dtypes) name the op that asked for it where that is known (`""` otherwise);
    /// `limit_source` says where `limit` comes from (the adapter, or the
    /// `ANYGRAD_MAX_BINDING_BYTES` variable that lowered it).
    #[error(
        "{}{requested} bytes in one buffer{} exceed the per-buffer binding limit of {limit} bytes ({limit_source}), whatever memory is free; use a smaller batch or split the tensor",
        op_prefix(.op),
        operands_suffix(.operands)
    )]
    BufferTooLarge {
        op: &'static str,
        operands: String,
        requested: u64,
        limit: u64,
        limit_source: String,
    },
    /// No GPU adapter could be found or opened.
    #[error("no GPU adapter: {hint}")]
    NoAdapter { hint: String },
    /// A WGSL kernel failed to compile or validate.
    #[error("shader error in kernel {kernel}: {message}")]
    Shader { kernel: String, message: String },
    /// The GPU device reported an error (validation, internal) or was lost.
    #[error("GPU device error: {message}")]
    DeviceLost { message: String },
    /// An op without a GPU kernel was refused by the CPU-fallback policy.
    #[error("{op}: has no GPU kernel and the CPU-fallback policy is `error`; set ANYGRAD_FALLBACK=warn or allow to run it on the CPU")]
    FallbackRefused { op: String },
    /// Autograd misuse (backward on a non-scalar, on a tensor without a graph, ...).
    #[error("backward: {message}")]
    Autograd { message: String },
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not in the expected format.
    #[error("{context}: malformed input: {message}")]
    Format { context: String, message: String },
}

/// `"op: "`, or nothing where the op is not known.
fn op_prefix(op: &str) -> String {
    if op.is_empty() {
        String::new()
    } else {
        format!("{op}: ")
    }
}

/// `" (operands ...)"`, or nothing where they are not known.
fn operands_suffix(operands: &str) -> String {
    if operands.is_empty() {
        String::new()
    } else {
        format!(" (operands {operands})")
    }
}

impl Error {
    /// A [`Error::BufferTooLarge`] that does not name its op yet (or names `op`) gets `op`
    /// and, where it has none, the `operands` description (the allocator that refused a
    /// buffer does not know which op asked for it; the dispatch of the op does). Any other
    /// error, and one raised by another op inside this one, is returned unchanged.
    pub(crate) fn naming_op(self, op: &'static str, operands: impl FnOnce() -> String) -> Error {
        match self {
            Error::BufferTooLarge {
                op: known,
                operands: described,
                requested,
                limit,
                limit_source,
            } if known.is_empty() || known == op => Error::BufferTooLarge {
                op,
                operands: if described.is_empty() {
                    operands()
                } else {
                    described
                },
                requested,
                limit,
                limit_source,
            },
            other => other,
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            op,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Io`] with a context string (usually the path).
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Shorthand for [`Error::Format`].
    pub fn format(context: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Format {
            context: context.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    fn too_large(op: &'static str) -> Error {
        Error::BufferTooLarge {
            op,
            operands: String::new(),
            requested: 367872,
            limit: 65536,
            limit_source: "set by ANYGRAD_MAX_BINDING_BYTES=65536".into(),
        }
    }

    #[test]
    fn a_buffer_too_large_names_the_op_that_asked() {
        let named = too_large("").naming_op("index_select", || "[1437, 64] float32".into());
        assert_eq!(
            named.to_string(),
            "index_select: 367872 bytes in one buffer (operands [1437, 64] float32) exceed the \
             per-buffer binding limit of 65536 bytes (set by ANYGRAD_MAX_BINDING_BYTES=65536), \
             whatever memory is free; use a smaller batch or split the tensor"
        );
        // An error raised by another op inside this one keeps its own name.
        let inner = too_large("copy").naming_op("matmul", || "[2, 2] float32".into());
        assert!(inner
            .to_string()
            .starts_with("copy: 367872 bytes in one buffer exceed"));
        // Other errors pass unchanged.
        let other = Error::invalid("sum", "bad dim").naming_op("matmul", String::new);
        assert_eq!(other.to_string(), "sum: bad dim");
    }
}
