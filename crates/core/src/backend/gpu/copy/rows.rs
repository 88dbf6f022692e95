//! Kernel family `CopyRows`: the dense copy of a view whose rows (the last dim) are contiguous,
//! four elements per invocation. Attention's heads are such views (`[B, T, H, D]` transposed
//! to `[B, H, T, D]`, or a third of a stacked query-key-value projection), and the generic
//! strided copy (`copy.wgsl`) decomposes every element's index over every dim, twice (source
//! and destination); here one `vec4` is read and written per invocation, and only the row
//! index is decomposed, over the outer dims.
//!
//! Applies ([`rows_view`]) when the view's last stride is 1, its last dim, offset and every
//! outer stride are multiples of 4 (so rows start on `vec4` boundaries), and the destination is
//! dense from a multiple of 4. Params: [`CopyRowsParams`], then the outer dims' sizes and
//! strides in `vec4`s.

use crate::backend::gpu::copy::kernel::CopyKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON, STRIDED};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the row copy.
    struct CopyRowsParams {
        /// `vec4`s to write.
        vectors: u32,
        /// `vec4`s per row.
        row_vectors: u32,
        /// Outer dims (all but the last).
        rank: u32,
        /// The source view's offset, in `vec4`s.
        source_offset: u32,
        /// The destination's offset, in `vec4`s.
        destination_offset: u32,
    }
    tail: "outer shape[rank], outer strides[rank] (in vec4s)";
}

/// WGSL of `CopyKernel::CopyRows`.
pub(crate) fn source(dtype: DType) -> String {
    let mut text = value_header(dtype);
    text.push_str(CopyRowsParams::WGSL);
    text.push_str(COMMON);
    text.push_str(STRIDED);
    text.push_str(
        "@group(0) @binding(1) var<storage, read> source: array<vec4<S>>;
@group(0) @binding(2) var<storage, read_write> destination: array<vec4<S>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.vectors) {
        return;
    }
    let row = i / params.row_vectors;
    let column = i - row * params.row_vectors;
    let position = params.source_offset + strided_position(row, params.rank, 0u, params.rank) + column;
    destination[params.destination_offset + i] = source[position];
}
",
    );
    text
}

/// The catalogue entries (`kernel_catalog.rs`): every stored dtype moves as `vec4`s of itself.
pub(crate) fn catalogue(keys: &mut Vec<CopyKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16 | DType::I32 | DType::U32) {
        keys.push(CopyKernel::CopyRows { dtype });
    }
}

/// Whether a same-dtype copy of `source` into the dense `destination` can move `vec4` rows
/// (see the module documentation).
pub(crate) fn rows_view(dtype: DType, source: &Layout, destination: &Layout) -> bool {
    let rank = source.rank();
    matches!(dtype, DType::F32 | DType::F16 | DType::I32 | DType::U32)
        && rank >= 2
        && source.strides[rank - 1] == 1
        && source.shape[rank - 1].is_multiple_of(4)
        && source.shape[rank - 1] > 0
        && source.offset.is_multiple_of(4)
        && source.strides[..rank - 1]
            .iter()
            .all(|s| s.is_multiple_of(4))
        && destination.is_contiguous()
        && destination.offset.is_multiple_of(4)
}

impl GpuStorage {
    /// Copy the view `layout` of `self` into the dense view `destination_layout` of
    /// `destination` by rows of `vec4`s (the caller checked [`rows_view`]).
    pub(crate) fn copy_rows_into(
        &self,
        layout: &Layout,
        destination: &GpuStorage,
        destination_layout: &Layout,
    ) -> Result<()> {
        let rank = layout.rank() - 1;
        let numel = layout.numel();
        let header = CopyRowsParams {
            vectors: word(numel / 4)?,
            row_vectors: word(layout.shape[rank] / 4)?,
            rank: word(rank)?,
            source_offset: word(layout.offset / 4)?,
            destination_offset: word(destination_layout.offset / 4)?,
        };
        let mut params = Params::with_header(&header, 2 * rank);
        params.extend(&layout.shape[..rank])?;
        let strides: Vec<usize> = layout.strides[..rank].iter().map(|s| s / 4).collect();
        params.extend(&strides)?;
        GpuStorage::launch(
            &self.device,
            &CopyKernel::CopyRows { dtype: self.dtype },
            &params,
            &[self.raw()?, destination.raw()?],
            numel / 4,
        )
    }
}
