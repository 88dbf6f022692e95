//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Scan —
//! running sums, in slices of the other dims where a tensor exceeds one buffer.

use crate::backend::contract::Scan;
use crate::backend::gpu::runtime::sliced;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;

impl Scan for GpuStorage {
    fn cumsum(&self, layout: &Layout, dim: usize) -> Result<Self> {
        sliced::whole_lines("cumsum", self, layout, dim)?
            .run(|[(x, l)], _| GpuStorage::cumsum(x, l, dim))
    }
}
