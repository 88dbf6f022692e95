//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Sorting —
//! stable argsort, in slices of the other dims where a tensor exceeds one buffer.

use crate::backend::contract::Sorting;
use crate::backend::gpu::runtime::sliced;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;

impl Sorting for GpuStorage {
    fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Self> {
        sliced::whole_lines("argsort", self, layout, dim)?
            .run(|[(x, l)], _| GpuStorage::argsort(x, l, dim, descending))
    }
}
