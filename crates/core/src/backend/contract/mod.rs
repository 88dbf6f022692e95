//! The backend contract: the primitives every backend implements (the CPU's `CpuStorage`, the
//! GPU's `GpuStorage`), one trait per family of primitives. `storage.rs` dispatches each
//! primitive through one helper that records it for the profiler and checks devices and dtypes
//! once, so a backend method may assume its operands share a device and (where stated) a dtype.
//!
//! Common rules: inputs come with their `Layout` (views are metadata, any strides); every
//! output is a new contiguous storage. Each method checks its views against its storages
//! (`backend/checks.rs`): a view reaching outside its storage, a dim out of range or operands
//! of the wrong rank is an `Error` naming the op, never a panic or a wild read. A dtype the
//! backend cannot compute in is `Error::Unsupported`.
//!
//! The families: `creation`, `random_numbers`, `copying`, `elementwise`, `reduction`,
//! `linear_algebra`, `convolution`, `pooling`, `row_normalization`, `batch_normalization`,
//! `indexing`, `sorting`, `scan`, `update`, `quantized_matrices`, and two optional ones whose methods default to
//! "unsupported" (`attention`, `custom_kernels`). Each backend implements a family next to
//! its kernels: the CPU in `cpu/<family>.rs`, the GPU in `gpu/<family>/contract.rs`.
//!
//! Adding a primitive (ARCHITECTURE.md walks through one): its signature in its family's trait
//! here, its implementation on the CPU and in the GPU family (the compiler refuses to build
//! until both exist; `gpu_absent.rs`, the CPU-only build's stand-in, answers it too), and one
//! `Storage` method in `storage.rs` whose body is one `run!` call.

mod attention;
mod batch_normalization;
mod convolution;
mod copying;
mod creation;
mod custom_kernels;
mod elementwise;
mod indexing;
mod linear_algebra;
mod pooling;
mod quantized_matrices;
mod random_numbers;
mod reduction;
mod row_normalization;
mod scan;
mod sorting;
mod update;

pub(crate) use attention::Attention;
pub(crate) use batch_normalization::BatchNormalization;
pub(crate) use convolution::{Convolution, Epilogue};
pub(crate) use copying::{into_format, Copying};
pub(crate) use creation::Creation;
pub(crate) use custom_kernels::CustomKernels;
pub(crate) use elementwise::Elementwise;
pub(crate) use indexing::Indexing;
pub(crate) use linear_algebra::LinearAlgebra;
pub(crate) use pooling::Pooling;
pub(crate) use quantized_matrices::QuantizedMatrices;
pub(crate) use random_numbers::RandomNumbers;
pub(crate) use reduction::Reduction;
pub(crate) use row_normalization::{Affine, RowNormalization};
pub(crate) use scan::Scan;
pub(crate) use sorting::Sorting;
pub(crate) use update::{AdamMoments, Update};

use crate::dtype::DType;

/// One backend's tensor data: what every family trait builds on.
pub(crate) trait BackendStorage: Sized {
    /// The handle creation needs (`()` for the CPU, the opened GPU for the GPU).
    type Device;

    /// The backend's name in errors (`cpu`, `gpu`).
    const NAME: &'static str;

    /// The element type of the data.
    fn dtype(&self) -> DType;
}
