//! The GPU runtime: what every kernel family runs on, and nothing that names a family.
//!
//! - `adapters.rs`: enumerate and order adapters, the features a device is opened with;
//! - `context.rs` (+ `context/`): one opened device — queue, the open command encoder,
//!   flushes, readback, errors, the pipeline cache (`context/pipeline_store.rs`), timing;
//! - `device.rs`: `GpuDevice`, the handle to one opened context;
//! - `buffers.rs`: the caching allocator;
//! - `hooks.rs`: what families register with the runtime (deferred work, their caches);
//! - `kernel.rs`: the `Kernel` trait a family's key implements, and the type-erased key of
//!   the pipeline cache;
//! - `storage.rs`: `GpuStorage`, a tensor's data in one buffer, its uploads and readbacks;
//!   `parts.rs`: a storage in pieces (tensors above one binding); `pending_read.rs`: a
//!   readback started now and finished later;
//! - `operands.rs`: the operand checks every primitive shares;
//! - `params.rs`: the `kernel_params!` parameter structs and their words;
//! - `wgsl.rs`: the WGSL every family shares (dtype types, value header, op expressions);
//! - `autotune.rs` (+ `autotune/`): timing kernel candidates per shape;
//! - `shader_check.rs` (tests): naga validation and SPIR-V translation of kernels.
//!
//! Kernel families live beside this folder (`backend/gpu/<family>/`) and import from it;
//! files here import no family (nor anything else of `backend/gpu/` outside this folder).
//! Where the runtime must call into a family, the family registers (`hooks.rs`); where a
//! family keeps state per device, the context holds it by type (`context/family_state.rs`).

pub(crate) mod adapters;
pub(crate) mod autotune;
pub(crate) mod buffers;
pub(crate) mod context;
pub(crate) mod device;
pub(crate) mod hooks;
pub(crate) mod kernel;
#[cfg(test)]
pub(crate) mod layering;
pub(crate) mod operands;
pub(crate) mod params;
pub(crate) mod parts;
pub(crate) mod pending_read;
#[cfg(test)]
pub(crate) mod shader_check;
pub(crate) mod sliced;
pub(crate) mod storage;
pub(crate) mod wgsl;
