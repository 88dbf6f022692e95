//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: LinearAlgebra
//! — batched matrix products, in batch slices (or row slices of one matrix) where a tensor exceeds
//! one buffer.

use crate::backend::contract::LinearAlgebra;
use crate::backend::gpu::runtime::sliced::{Combine, Follow, Plan};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;

impl LinearAlgebra for GpuStorage {
    fn matmul(&self, layout: &Layout, rhs: &Self, rhs_layout: &Layout) -> Result<Self> {
        // [batch, m, k] x [batch, k, n]: batch slices, or row slices of a single matrix.
        let (batch, m) = (
            layout.shape.first().copied().unwrap_or(1),
            layout.shape.get(1).copied().unwrap_or(1),
        );
        let n = rhs_layout.shape.get(2).copied().unwrap_or(1);
        let (lhs_follow, rhs_follow, rows, per_row) = if batch > 1 {
            (Follow::Sliced(0), Follow::Sliced(0), batch, m * n)
        } else {
            (Follow::Sliced(1), Follow::Whole, m, n)
        };
        Plan {
            op: "matmul",
            operands: [(self, layout, lhs_follow), (rhs, rhs_layout, rhs_follow)],
            rows,
            output_elements: per_row,
            combine: Combine::Concatenate,
            nests: false,
        }
        .run(|[(a, la), (b, lb)], _| GpuStorage::matmul(a, la, b, lb))
    }
}
