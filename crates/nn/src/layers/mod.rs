//! The layers of anygrad-nn, one file per family.

mod activation;
mod batch_norm_coefficients;
mod batch_norm_function;
mod batch_norm_training;
mod container;
mod conv;
mod conv_batch_norm;
mod conv_variants;
mod embedding;
mod linear;
mod module_list;
mod multihead_attention;
mod norm;
mod pooling;
mod transformer;
mod upsample;

pub use activation::{
    Dropout, Dropout2d, Flatten, Hardswish, Identity, LeakyReLU, LogSoftmax, ReLU, ReLU6, SiLU,
    Sigmoid, Softmax, Tanh, ELU, GELU,
};
pub use batch_norm_function::{batch_norm, BatchNormInputs, FoldCache};
pub use container::Sequential;
pub use conv::{Conv2d, Conv2dOptions};
pub use conv_batch_norm::conv_batch_norm;
pub use conv_variants::{Conv1d, ConvTranspose2d, ConvTranspose2dOptions};
pub use embedding::Embedding;
pub use linear::Linear;
pub use module_list::{ModuleDict, ModuleList};
pub use multihead_attention::{
    generate_square_subsequent_mask, AttentionOutput, MultiheadAttention,
};
pub use norm::{BatchNorm, BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm};
pub use pooling::{AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, MaxPool2d};
pub use transformer::{
    DecoderMasks, TransformerActivation, TransformerDecoderLayer, TransformerEncoderLayer,
    TransformerLayerConfig,
};
pub use upsample::Upsample;
