//! The normalization kernel families: softmax and layer norm over the last dim (`rows.rs`),
//! the rotary position embedding of rows (`rotary.rs`),
//! batch norm's per-channel sums (`batch_norm.rs`) and its input gradient
//! (`batch_norm_input.rs`).

pub(crate) mod batch_norm;
pub(crate) mod batch_norm_input;
mod contract;
pub(crate) mod kernel;
pub(crate) mod rotary;
pub(crate) mod rows;
