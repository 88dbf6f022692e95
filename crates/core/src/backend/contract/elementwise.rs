//! The backend contract's `Elementwise` family: elementwise ops over views of one shape. The rules
//! every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};

/// Elementwise ops over views of one shape.
pub(crate) trait Elementwise: BackendStorage {
    /// Elementwise unary op; float ops on integer data are `Unsupported`.
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self>;

    /// Elementwise binary op. The layouts have the same shape (the tensor layer broadcasts
    /// with stride-0 views first) and the storages the same dtype (checked by the dispatcher).
    fn binary(
        &self,
        layout: &Layout,
        rhs: &Self,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Self>;

    /// `x op scalar`, or `scalar op x` when `scalar_on_left`, elementwise.
    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Self>;

    /// `self ? on_true : on_false` elementwise: `self` is the condition (any dtype, non-zero
    /// is true); the three layouts have the same shape, `on_true` and `on_false` one dtype.
    fn where_select(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_layout: &Layout,
        on_false: &Self,
        false_layout: &Layout,
    ) -> Result<Self>;
}
