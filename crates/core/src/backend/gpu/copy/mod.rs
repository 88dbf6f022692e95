//! The dense-copy kernel families that `copy_strided` and `cast` take where they apply: a
//! view with contiguous rows (`rows.rs`) and a batch of transposed matrices (`transpose.rs`).
//! The strided element-by-element copy is the elementwise family's `Copy`, which offers each
//! same-dtype copy to [`COPIES`] first (registered with every context as
//! `Hooks::dense_copies`, so that no family imports this one).

pub(crate) mod kernel;
pub(crate) mod rows;
pub(crate) mod transpose;

use crate::backend::gpu::runtime::hooks::DenseCopies;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

/// The dense copies of this family, as the runtime's hooks hold them.
pub(crate) struct Copies;

/// The copies `backend/gpu/mod.rs` registers with every context.
pub(crate) static COPIES: Copies = Copies;

impl DenseCopies for Copies {
    fn copy(
        &self,
        source: &GpuStorage,
        layout: &Layout,
        destination: &GpuStorage,
        destination_layout: &Layout,
    ) -> Result<bool> {
        // A view with contiguous rows (attention's heads): `vec4` rows (`rows.rs`).
        if rows::rows_view(source.dtype, layout, destination_layout) {
            source.copy_rows_into(layout, destination, destination_layout)?;
            return Ok(true);
        }
        // A batch of transposed matrices (channels-last activations, transposed weights):
        // tiles through workgroup memory (`transpose.rs`).
        if transpose::fits(source.dtype, &source.device) {
            if let Some(view) = transpose::transposed_view(source.dtype, layout, destination_layout)
            {
                source.copy_transpose_into(view, layout, destination, destination_layout)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn transposes(&self, dtype: DType, source: &Layout, destination: &Layout) -> bool {
        transpose::transposed_view(dtype, source, destination).is_some()
    }
}
