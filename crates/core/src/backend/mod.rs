//! The backends: `cpu` (reference loops, `gemm`, rayon) and `gpu` (wgpu + WGSL kernels), the
//! contract both implement (`contract/`: one trait per family of primitives on the base
//! `BackendStorage`) and the view checks both run (`checks.rs`). `storage.rs` is the only place that chooses between
//! them. Crate-private: users reach the GPU through `Device` and `anygrad_core::gpu`.
//!
//! The GPU backend is the `gpu` cargo feature (on by default). Without it, `gpu_absent.rs` is
//! mounted as `gpu`: the same names, with uninhabited device and storage types, so the rest of
//! the crate compiles unchanged. `gpu_facts.rs` (adapter facts, counters, execution mode) is
//! plain data shared by both.

pub(crate) mod checks;
pub(crate) mod contract;
pub(crate) mod cpu;
#[cfg(feature = "gpu")]
pub(crate) mod gpu;
#[cfg(not(feature = "gpu"))]
#[path = "gpu_absent.rs"]
pub(crate) mod gpu;
pub(crate) mod gpu_facts;

#[cfg(test)]
mod tests;
