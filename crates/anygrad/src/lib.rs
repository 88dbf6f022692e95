//! anygrad: deep learning in Rust that feels like PyTorch and runs on any vendor's GPU
//! (Vulkan, DX12 or Metal through wgpu, with anygrad's own WGSL kernels) or on the CPU.
//!
//! This facade re-exports what programs use, by name: the tensor and its types at the root
//! (like `torch.*`), the tools of the core crate as modules ([`gpu`], [`profiler`],
//! [`random`], [`custom_op`], ...), and the other crates whole as [`nn`], [`data`],
//! [`models`] and [`train`]. Most programs only need the prelude:
//!
//! ```
//! use anygrad::prelude::*;
//! let device = Device::Cpu;
//! let x = Tensor::randn(&[8, 4], DType::F32, &device)?.requires_grad_(true);
//! let y = x.matmul(&x.t()?)?.relu()?.mean_all()?;
//! y.backward()?;
//! assert!(x.grad().is_some());
//! # Ok::<(), anygrad::Error>(())
//! ```

/// Tensors, their element types and layouts, devices and errors (`torch.Tensor`,
/// `torch.dtype`, `torch.device`, `torch.channels_last`).
pub use anygrad_core::{
    DType, Device, Element, Error, Layout, MemoryFormat, PendingRead, Result, ShapeSpec, Tensor,
    TensorId,
};

/// Parameters of convolution, interpolation, grid sampling and fused convolution epilogues (what
/// `Tensor::conv2d` and friends take).
pub use anygrad_core::{
    Conv1dParams, Conv2dParams, ConvEpilogue, ConvTranspose2dParams, EpilogueActivation,
    GridSampleMode, GridSamplePadding, InterpolateMode, InterpolateSize,
};

/// Gradient recording (`torch.no_grad`, `torch.enable_grad`, `torch.is_grad_enabled`),
/// custom backward functions and the handle of tensor hooks (`Tensor::register_hook`).
pub use anygrad_core::{
    enable_grad, is_grad_enabled, no_grad, CustomBackward, EnableGradGuard, HookHandle, NoGradGuard,
};

/// Mixed precision (`torch.autocast`) and its cache of lower-precision weights.
pub use anygrad_core::{
    autocast, autocast_dtype, autocast_or_f32, clear_autocast_cache, with_autocast, AutocastGuard,
};

/// Reproducibility: the global seed (`torch.manual_seed`) and deterministic algorithms
/// (`torch.use_deterministic_algorithms`).
pub use anygrad_core::{
    are_deterministic_algorithms_enabled, manual_seed, use_deterministic_algorithms,
};

/// Devices and their memory (`torch.cuda.device_count`, `memory_allocated`,
/// `empty_cache`, ...), and the GPU's elementwise fusion switch and counters.
pub use anygrad_core::{
    device_count, device_name, elementwise_fusion_enabled, empty_cache, fusion_stats,
    kernel_dispatches, memory_stats, reset_peak_memory, set_elementwise_fusion, FusionStats,
    KernelDispatches, MemoryStats,
};

/// Attention (`torch.nn.functional.scaled_dot_product_attention`) and the fused kernel's
/// switch.
pub use anygrad_core::{
    fused_attention_enabled, fused_attention_mode, scaled_dot_product_attention,
    set_fused_attention, set_fused_attention_mode, FusedAttention, FUSED_ATTENTION_SCORES_BYTES,
};

/// Block-quantized matrices (GGML's formats, as GGUF files store weights), read in place by
/// the quantized kernels (`Tensor::linear_quantized`, `QuantizedMatrix::select_rows`).
pub use anygrad_core::{quantization, QuantFormat, QuantizedMatrix};

/// The fused SGD and Adam steps' settings (what `Tensor::sgd_step_` and `Tensor::adam_step_` take).
pub use anygrad_core::{AdamStep, SgdStep};

/// Mixed precision: autocast guards and the dtype rules per op.
pub use anygrad_core::amp;
/// Autograd: guards, custom backward functions and the graph's bookkeeping.
pub use anygrad_core::autograd;
/// The syntax check of `ANYGRAD_AUTOTUNE_FORCE` (for tools that validate the environment).
pub use anygrad_core::autotune_force;
/// Custom ops: a forward and a backward written in tensor ops, and a gradient check.
pub use anygrad_core::custom_op;
/// Deterministic algorithms and which ops they change.
pub use anygrad_core::determinism;
/// The CPU-fallback policy for ops without a GPU kernel, and its counters.
pub use anygrad_core::fallback;
/// Reading files named by the user: regular files only, with a size bound.
pub use anygrad_core::files;
/// GPU facts and controls: adapters, limits, execution modes, autotuning, statistics,
/// shutdown.
pub use anygrad_core::gpu;
/// The primitive ops' enums (`UnaryOp`, `BinaryOp`, `ReduceOp`, ...), what custom tools and
/// the doctor test one by one.
pub use anygrad_core::op;
/// The profiler (`torch.profiler`): per-op and per-kernel times of a closure.
pub use anygrad_core::profiler;
/// The random number generator: seeding, its state, and the distributions of `Tensor::rand*`.
pub use anygrad_core::random;

/// Layers, losses, optimizers, schedulers, checkpoints and data parallelism (`torch.nn`,
/// `torch.optim`).
pub use anygrad_nn as nn;

/// Datasets, loaders, transforms and the bundled data sets (`torch.utils.data`,
/// `torchvision.datasets`, `torchvision.transforms`).
pub use anygrad_data as data;

/// Ready-made models: MLP, small CNN, ResNets, BERT encoders (feature `text`).
pub use anygrad_models as models;

/// The training loop behind `anygrad train`: configuration, data, evaluation,
/// checkpoint/resume and data parallelism.
pub use anygrad_train as train;

/// The names most programs use.
pub mod prelude {
    pub use anygrad_core::{autocast, no_grad, Conv2dParams, DType, Device, Error, Result, Tensor};
}

/// The README's code blocks, compiled and run as doctests (`cargo test -p anygrad --doc`), so
/// the first program it shows keeps building against the library.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
