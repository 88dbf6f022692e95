//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Elementwise
//! and Copying — elementwise ops, copies and casts, each run in slices where a tensor exceeds one
//! buffer; and the fold that sliced plans add partial results with (`Hooks::fold`).

use crate::backend::contract::{Copying, Elementwise};
use crate::backend::gpu::runtime::sliced::{self, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, UnaryOp};

impl Elementwise for GpuStorage {
    fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::unary(x, l, op))
    }

    fn binary(
        &self,
        layout: &Layout,
        rhs: &Self,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout), (rhs, rhs_layout)])
            .run(|[(a, la), (b, lb)], _| GpuStorage::binary(a, la, b, lb, op))
    }

    fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Self> {
        Plan::elementwise(op.name(), [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::binary_scalar(x, l, op, scalar, scalar_on_left))
    }

    fn where_select(
        &self,
        layout: &Layout,
        on_true: &Self,
        true_layout: &Layout,
        on_false: &Self,
        false_layout: &Layout,
    ) -> Result<Self> {
        let operands = [
            (self, layout),
            (on_true, true_layout),
            (on_false, false_layout),
        ];
        Plan::elementwise("where", operands)
            .run(|[(c, lc), (t, lt), (f, lf)], _| GpuStorage::where_select(c, lc, t, lt, f, lf))
    }
}

impl Copying for GpuStorage {
    fn copy_strided(&self, layout: &Layout) -> Result<Self> {
        Plan::elementwise("copy", [(self, layout)])
            .run(|[(x, l)], _| GpuStorage::copy_strided(x, l))
    }

    fn copy_into(&self, layout: &Layout, dst: &mut Self, dst_layout: &Layout) -> Result<()> {
        sliced::copy_into(self, layout, dst, dst_layout, &mut |s, l, d, dl| {
            GpuStorage::copy_into(s, l, d, dl)
        })
    }

    fn cast(&self, layout: &Layout, dtype: DType) -> Result<Self> {
        Plan::elementwise("cast", [(self, layout)]).run(|[(x, l)], _| GpuStorage::cast(x, l, dtype))
    }
}

/// `lhs op rhs` elementwise over two views of one shape: the runtime's `Hooks::fold`, with
/// which sliced plans add (or max, min) their slices' partial results.
pub(crate) fn fold(
    lhs: &GpuStorage,
    lhs_layout: &Layout,
    rhs: &GpuStorage,
    rhs_layout: &Layout,
    op: BinaryOp,
) -> Result<GpuStorage> {
    GpuStorage::binary(lhs, lhs_layout, rhs, rhs_layout, op)
}
