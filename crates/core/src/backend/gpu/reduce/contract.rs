//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Reduction —
//! reductions, in slices where a tensor exceeds one buffer (folded partial sums are divided once
//! for a mean).

use crate::backend::contract::{Elementwise, Reduction};
use crate::backend::gpu::runtime::sliced;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp};

impl Reduction for GpuStorage {
    fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Self> {
        let plan = sliced::reduction(self, layout, op, dims)?;
        if op == ReduceOp::Mean && plan.folds() {
            // Slices over a reduced dim: their sums are folded, then divided once.
            let sum = plan.run(|[(x, l)], _| GpuStorage::reduce(x, l, ReduceOp::Sum, dims))?;
            let mut kept = layout.shape.clone();
            let mut count = 1;
            for &d in dims {
                count *= kept[d];
                kept[d] = 1;
            }
            let kept = Layout::contiguous(&kept);
            return Elementwise::binary_scalar(&sum, &kept, BinaryOp::Div, count as f64, false);
        }
        plan.run(|[(x, l)], _| GpuStorage::reduce(x, l, op, dims))
    }
}
