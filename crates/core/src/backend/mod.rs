//! The backends: `cpu` (reference loops, `gemm`, rayon) and `gpu` (wgpu + WGSL kernels), the
//! contract both implement (`contract.rs`: the `BackendStorage` trait) and the view checks
//! both run (`checks.rs`). `storage.rs` is the only place that chooses between
//! them. Crate-private: users reach the GPU through `Device` and `anygrad_core::gpu`.

pub(crate) mod checks;
pub(crate) mod contract;
pub(crate) mod cpu;
pub(crate) mod gpu;

#[cfg(test)]
mod tests;
