//! The layers of anygrad-nn, one file per family.

mod activation;
mod batch_norm_training;
mod container;
mod conv;
mod embedding;
mod linear;
mod module_list;
mod multihead_attention;
mod norm;
mod pooling;
mod transformer;

pub use activation::{
    Dropout, Flatten, Hardswish, Identity, LeakyReLU, LogSoftmax, ReLU, ReLU6, SiLU, Sigmoid,
    Softmax, Tanh, ELU, GELU,
};
pub use container::Sequential;
pub use conv::{Conv2d, Conv2dOptions};
pub use embedding::Embedding;
pub use linear::Linear;
pub use module_list::{ModuleDict, ModuleList};
pub use multihead_attention::{
    generate_square_subsequent_mask, AttentionOutput, MultiheadAttention,
};
pub use norm::{BatchNorm, BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm};
pub use pooling::{AdaptiveAvgPool2d, AvgPool2d, MaxPool2d};
pub use transformer::{
    DecoderMasks, TransformerActivation, TransformerDecoderLayer, TransformerEncoderLayer,
    TransformerLayerConfig,
};
