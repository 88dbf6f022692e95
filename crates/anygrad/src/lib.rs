//! anygrad: deep learning in Rust that feels like PyTorch and runs on any vendor's GPU
//! (Vulkan, DX12 or Metal through wgpu, with anygrad's own WGSL kernels) or on the CPU.
//!
//! This facade re-exports the workspace crates; most programs only need the prelude:
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

pub use anygrad_core as core;
pub use anygrad_core::*;
pub use anygrad_data as data;
pub use anygrad_models as models;
pub use anygrad_nn as nn;
pub use anygrad_train as train;

/// The names most programs use.
pub mod prelude {
    pub use anygrad_core::{autocast, no_grad, Conv2dParams, DType, Device, Error, Result, Tensor};
}
