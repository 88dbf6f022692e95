//! `anygrad._native`: the extension module behind the Python package `anygrad` (PyO3, stable
//! ABI for Python 3.9 and later). It binds the library's tensor, dtypes, devices, autograd and
//! the native parts of `nn.functional`; the Python package (`python/anygrad/`) builds
//! PyTorch's API (`nn.Module`, optimizers, data loading, ...) on top.
//!
//! One concept per file: `errors` (exceptions, panics), `dtype`, `device`, `tensor` (the
//! class and its protocols), `creation`, `operators`, `math`, `reductions`, `views`,
//! `indexing`, `einsum`, `autograd`, `amp` (autocast scopes), `functional` (convolution, pooling,
//! normalization), `optimizers` (the SGD, Adam and Adadelta steps), `datasets` (the bundled
//! digits), `models` (sentence embeddings), `profiler`.

use pyo3::prelude::*;

pub mod amp;
pub mod autograd;
pub mod creation;
pub mod datasets;
pub mod device;
pub mod dtype;
pub mod einsum;
pub mod errors;
pub mod functional;
pub mod host_array;
pub mod indexing;
pub mod losses;
pub mod math;
pub mod models;
pub mod onnx;
pub mod operators;
pub mod optimizers;
pub mod profiler;
pub mod reductions;
pub mod tensor;
pub mod views;

/// Keep Rust's panic messages off stderr: a panic inside a binding is reported as the
/// `RuntimeError` that `errors::run` raises instead.
fn quiet_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::env::var_os("ANYGRAD_PYTHON_PANIC_TRACE").is_some() {
            previous(info);
        }
    }));
}

/// The module's contents.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    quiet_panics();
    module.add_class::<tensor::PyTensor>()?;
    module.add_class::<host_array::HostArray>()?;
    dtype::register(module)?;
    device::register(module)?;
    creation::register(module)?;
    math::register(module)?;
    einsum::register(module)?;
    autograd::register(module)?;
    amp::register(module)?;
    functional::register(module)?;
    losses::register(module)?;
    datasets::register(module)?;
    optimizers::register(module)?;
    models::register(module)?;
    onnx::register(module)?;
    profiler::register(module)?;
    Ok(())
}
