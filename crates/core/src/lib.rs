//! anygrad-core: the tensor, its dtypes and layouts, the primitive ops, autograd, and the two
//! backends (CPU, and GPU through wgpu with our own WGSL kernels). The backends and the
//! `Storage` that chooses between them are crate-private: users work with `Tensor` and
//! `Device`, and tools reach adapter facts and statistics through [`gpu`].
//! The GPU backend is the cargo feature `gpu` (on by default); without it this crate builds
//! CPU-only, with no wgpu, and asking for a GPU is an error (see [`gpu`]).
//!
//! ```
//! use anygrad_core::{Device, DType, Tensor};
//! let device = Device::Cpu;
//! let x = Tensor::randn(&[4, 3], DType::F32, &device)?.requires_grad_(true);
//! let loss = x.matmul(&x.t()?)?.relu()?.mean_all()?;
//! loss.backward()?;
//! assert_eq!(x.grad().unwrap().shape(), &[4, 3]);
//! # Ok::<(), anygrad_core::Error>(())
//! ```

pub mod amp;
pub mod autograd;
pub mod autotune_force;
pub(crate) mod backend;
pub mod custom_op;
pub mod determinism;
pub mod device;
pub mod dtype;
pub mod error;
pub mod fallback;
pub mod files;
mod flop_count;
pub(crate) mod geometry;
pub mod gpu;
mod grad_mode;
/// Fallible host allocation for buffers whose size comes from user data: an
/// [`Error::OutOfMemory`] naming the bytes requested, the bytes this process holds and the
/// machine's memory, instead of the abort `Vec::with_capacity` gives when the allocator says
/// no. The CPU backend's storage and the data crate's images and transforms use it.
pub mod host_memory {
    pub use crate::backend::cpu::alloc::{filled, reserved, total_memory};
}
#[cfg(test)]
mod layering;
pub mod layout;
mod mutation;
pub mod op;
pub(crate) mod profile_flag;
pub mod profiler;
pub mod quantization;
pub mod random;
pub mod shape;
pub(crate) mod storage;
pub mod tensor;
pub mod transfer;
pub mod update;

pub use amp::{autocast, autocast_dtype, autocast_or_f32, with_autocast, AutocastGuard};
pub use autograd::{
    enable_grad, is_grad_enabled, no_grad, CustomBackward, EnableGradGuard, HookHandle, NoGradGuard,
};
pub use determinism::{are_deterministic_algorithms_enabled, use_deterministic_algorithms};
pub use device::{
    device_count, device_name, empty_cache, fusion_stats, kernel_dispatches, memory_stats,
    reset_peak_memory, Device,
};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use gpu::{
    elementwise_fusion_enabled, set_elementwise_fusion, FusionStats, KernelDispatches, MemoryStats,
};
pub use layout::{Layout, MemoryFormat};
pub use op::EpilogueActivation;
pub use quantization::QuantFormat;
pub use random::manual_seed;
pub use tensor::autocast_cache::clear_autocast_cache;
pub use tensor::mutation_epoch;
pub use tensor::{
    fused_attention_enabled, fused_attention_mode, scaled_dot_product_attention,
    set_fused_attention, set_fused_attention_mode, Conv1dParams, Conv2dParams, ConvEpilogue,
    ConvTranspose2dParams, FusedAttention, GridSampleMode, GridSamplePadding, InterpolateMode,
    InterpolateSize, PendingRead, QuantizedMatrix, ShapeSpec, Tensor, TensorId,
    FUSED_ATTENTION_SCORES_BYTES,
};
pub use update::{AdamStep, SgdStep};
