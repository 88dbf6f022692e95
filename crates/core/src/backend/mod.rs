//! The backends: `cpu` (reference loops, `gemm`, rayon) and `gpu` (wgpu + WGSL kernels).
//! `storage.rs` is the only place that chooses between them.

pub mod cpu;
pub mod gpu;
