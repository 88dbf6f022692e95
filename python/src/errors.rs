//! Errors crossing into Python: every anygrad [`Error`] becomes the exception class PyTorch
//! raises for the same failure (`RuntimeError` for shapes, `ValueError` for bad arguments,
//! `MemoryError` for an exhausted device, ...), with anygrad's message, and a Rust panic
//! inside a binding becomes a `RuntimeError` naming the op instead of unwinding into the
//! interpreter.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anygrad::Error;
use pyo3::exceptions::{
    PyIndexError, PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::PyErr;
use pyo3::PyResult;

/// The Python spelling of the Rust method names that the library's messages suggest.
fn python_names(message: String) -> String {
    message
        .replace(
            "convert one with .to_dtype()",
            "convert one with .to(dtype)",
        )
        .replace("move one with .to_device()", "move one with .to(device)")
}

/// The Python exception for an anygrad error.
pub fn to_python_error(error: Error) -> PyErr {
    let message = python_names(error.to_string());
    match error {
        Error::InvalidArgument { .. } | Error::Format { .. } => PyValueError::new_err(message),
        Error::DTypeMismatch { .. } | Error::Unsupported { .. } => PyTypeError::new_err(message),
        Error::OutOfMemory { .. } | Error::BufferTooLarge { .. } => PyMemoryError::new_err(message),
        Error::Io { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// Run `body` (one op of the library), turning its error into the matching Python exception
/// and a panic into a `RuntimeError` that names `op`.
pub fn run<T>(op: &str, body: impl FnOnce() -> anygrad::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(to_python_error(error)),
        Err(panic) => Err(panic_error(op, panic)),
    }
}

/// Run `body` (a binding's own code, already returning Python errors), turning a panic into
/// a `RuntimeError` that names `op`.
pub fn guard<T>(op: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => Err(panic_error(op, panic)),
    }
}

/// The `RuntimeError` for a panic caught in `op`.
fn panic_error(op: &str, panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let detail = if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "an internal error".to_string()
    };
    PyRuntimeError::new_err(format!("{op}: internal error in anygrad: {detail}"))
}

/// A `ValueError` whose message starts with the op's name.
pub fn value_error(op: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{op}: {message}"))
}

/// A `TypeError` whose message starts with the op's name.
pub fn type_error(op: &str, message: impl std::fmt::Display) -> PyErr {
    PyTypeError::new_err(format!("{op}: {message}"))
}

/// An `IndexError` whose message starts with the op's name.
pub fn index_error(op: &str, message: impl std::fmt::Display) -> PyErr {
    PyIndexError::new_err(format!("{op}: {message}"))
}

/// A `RuntimeError` whose message starts with the op's name.
pub fn runtime_error(op: &str, message: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(format!("{op}: {message}"))
}
