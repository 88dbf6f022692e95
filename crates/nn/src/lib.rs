//! anygrad-nn: the `Module` trait (and `#[derive(Module)]`), `Parameter` slots, hooks, layers, losses, weight
//! initialization, optimizers with learning-rate schedulers and gradient clipping, and
//! safetensors checkpoints with PyTorch's parameter names.
//!
//! ```
//! use anygrad_core::{Device, DType, Tensor};
//! use anygrad_nn::{cross_entropy, Linear, Module, Optimizer, ReLU, Sequential, Sgd, SgdConfig};
//! let device = Device::Cpu;
//! let model = Sequential::new()
//!     .add(Linear::new(4, 8, true, &device)?)
//!     .add(ReLU)
//!     .add(Linear::new(8, 3, true, &device)?);
//! let mut optimizer = Sgd::new(model.named_parameter_slots(), SgdConfig::new(0.1))?;
//! let x = Tensor::randn(&[5, 4], DType::F32, &device)?;
//! let y = Tensor::from_vec(vec![0i32, 1, 2, 1, 0], &[5], &device)?;
//! optimizer.zero_grad();
//! let loss = cross_entropy(&model.forward(&x)?, &y)?;
//! loss.backward()?;
//! optimizer.step()?;
//! assert_eq!(model.named_parameters()[0].0, "0.weight");
//! # Ok::<(), anygrad_core::Error>(())
//! ```

pub mod activation_checkpoint;
pub mod amp;
pub mod checkpoint;
pub mod hooks;
pub mod init;
pub mod layers;
pub mod loss;
pub mod module;
pub mod module_field;
pub mod optim;
pub mod parallel;

pub use activation_checkpoint::{checkpoint, checkpoint_fn};
pub use amp::{unscale_gradients, GradScaler};
/// Functional attention (the same function as `anygrad_core::scaled_dot_product_attention`).
pub use anygrad_core::scaled_dot_product_attention;
pub use anygrad_nn_derive::Module;
pub use checkpoint::{
    check_writable, load_checkpoint, load_optimizer, load_safetensors, load_safetensors_mapped,
    load_safetensors_with, load_state_into, load_tensors, remove_stale_temporaries,
    save_checkpoint, save_optimizer, save_safetensors, save_tensors, LoadReport,
};
pub use hooks::{HookHandle, Hooked};
pub use layers::*;
pub use loss::{
    binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss, BceLoss,
    BceWithLogitsLoss, CrossEntropyLoss, KlDivLoss, KlReduction, L1Loss, MseLoss, NllLoss,
    Reduction, SmoothL1Loss,
};
pub use module::{downcast_module, Kind, Module, Parameter, TrainingFlag};
pub use module_field::{BufferField, ModuleField};
pub use optim::{
    clip_grad_norm_, clip_grad_value_, split_no_decay, Adagrad, AdagradConfig, Adam, AdamConfig,
    AdamW, AnnealStrategy, CosineAnnealingLR, LambdaLR, LinearLR, LrSchedule, LrScheduler,
    MultiStepLR, OneCycleLR, OneCycleOptions, Optimizer, OptimizerState, ParamGroup, PlateauMode,
    RMSprop, RMSpropConfig, ReduceLROnPlateau, SequentialLR, Sgd, SgdConfig, StepLR, ThresholdMode,
};
pub use parallel::{
    broadcast_buffers, broadcast_module, Collective, DataParallel, ExchangeStats, GradientReducer,
    ParallelStep, ReplicatedOptimizer,
};
