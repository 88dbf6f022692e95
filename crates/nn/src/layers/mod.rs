//! The layers of anygrad-nn, one file per family.

mod activation;
mod batch_norm_training;
mod container;
mod conv;
mod conv_variants;
mod embedding;
mod linear;
mod module_list;
mod norm;
mod pooling;
mod upsample;

pub use activation::{
    Dropout, Dropout2d, Flatten, Hardswish, Identity, LeakyReLU, LogSoftmax, ReLU, ReLU6, SiLU,
    Sigmoid, Softmax, Tanh, ELU, GELU,
};
pub use container::Sequential;
pub use conv::{Conv2d, Conv2dOptions};
pub use conv_variants::{Conv1d, ConvTranspose2d, ConvTranspose2dOptions};
pub use embedding::Embedding;
pub use linear::Linear;
pub use module_list::{ModuleDict, ModuleList};
pub use norm::{BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm};
pub use pooling::{AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, MaxPool2d};
pub use upsample::Upsample;
