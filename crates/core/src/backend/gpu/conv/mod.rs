//! The convolution kernel families (one group, F32 and F16): the entry points that pick a
//! kernel per shape (`tuning.rs`), the direct implicit-GEMM forward (`direct.rs`) and its
//! gradients (`backward.rs`) over shared tile code (`gemm.rs`), the epilogue applied in the
//! forward's store (`epilogue.rs`), Winograd (`winograd.rs`), the tensor-core kernels over
//! the plain layout (`coop.rs`) and over channels-last copies (`nhwc.rs`), the weights'
//! rearranged forms kept between calls (`weight_cache.rs`), and the depthwise convolution
//! (groups == channels) with both of its gradients (`depthwise.rs`).

pub(crate) mod backward;
mod contract;
pub(crate) mod coop;
pub(crate) mod depthwise;
pub(crate) mod direct;
pub(crate) mod epilogue;
pub(crate) mod gemm;
pub(crate) mod kernel;
pub(crate) mod nhwc;
pub(crate) mod tuning;
pub(crate) mod weight_cache;
pub(crate) mod winograd;
