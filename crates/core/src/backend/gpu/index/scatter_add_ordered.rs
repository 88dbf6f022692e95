//! Kernel family `ScatterAddOrdered`: `scatter_add` on floats in a fixed order, for
//! deterministic algorithms (`determinism.rs`). The atomic kernel (`index/`,
//! `shaders/scatter_add.wgsl`) adds each source element to its target as it arrives, so
//! where indices repeat the last bits can change from run to run; this one gives each output
//! element one invocation, which walks the index along `dim` in order and adds what names
//! it (`shaders/scatter_add_ordered.wgsl`): the CPU's order and arithmetic. It costs one index
//! read per output element and index position along `dim`, so
//! `determinism::ordered_scatter_fits` bounds it; beyond that the op runs on the CPU under
//! the fallback policy (`tensor/index.rs`).

use crate::backend::gpu::index::kernel::IndexKernel;
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{storage_type, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of `shaders/scatter_add_ordered.wgsl`.
    struct ScatterAddOrderedParams {
        /// Elements of the output (one invocation each).
        numel: u32,
        /// Rank of the views.
        rank: u32,
        /// The indexed dim.
        dim: u32,
        /// The output's size along `dim` (indices must be below it).
        limit: u32,
        /// The source view's offset.
        src_offset: u32,
        /// The index view's offset.
        index_offset: u32,
        /// This dispatch's word of the index-flag buffer (set by the context).
        flag_slot: u32,
    }
    tail: "output shape[rank], index shape[rank], src strides[rank], index strides[rank]";
}

// The context writes the flag slot at word `INDEX_SLOT_WORD` of an index kernel's params.
const _: () = assert!(
    std::mem::offset_of!(ScatterAddOrderedParams, flag_slot)
        == 4 * crate::backend::gpu::runtime::context::INDEX_SLOT_WORD
);

/// WGSL of `IndexKernel::ScatterAddOrdered` (after `enable f16;` where needed).
pub(crate) fn source(dtype: DType, index: DType) -> String {
    let mut text = format!(
        "alias S = {};\nalias IX = {};\n",
        storage_type(dtype),
        storage_type(index)
    );
    text.push_str(ScatterAddOrderedParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/scatter_add_ordered.wgsl"));
    text
}

/// The catalogue entries (`kernel_catalog.rs`): the float dtypes.
pub(crate) fn catalogue(keys: &mut Vec<IndexKernel>, dtype: DType, index_dtypes: &[DType]) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for &index in index_dtypes {
            keys.push(IndexKernel::ScatterAddOrdered { dtype, index });
        }
    }
}

/// Record the ordered kernel over `out` (the base's contiguous copy, of `output_shape`; the
/// shapes checked by `GpuStorage::scatter_add`), adding `src` at `indices` along `dim`.
pub(super) fn launch(
    out: &GpuStorage,
    output_shape: &[usize],
    dim: usize,
    (indices, indices_layout): (&GpuStorage, &Layout),
    (src, src_layout): (&GpuStorage, &Layout),
) -> Result<()> {
    let header = ScatterAddOrderedParams {
        numel: word(out.len)?,
        rank: word(output_shape.len())?,
        dim: word(dim)?,
        limit: word(output_shape[dim])?,
        src_offset: word(src_layout.offset)?,
        index_offset: word(indices_layout.offset)?,
        flag_slot: 0, // filled in by the context
    };
    let mut params = Params::with_header(&header, 4 * output_shape.len());
    params
        .extend(output_shape)?
        .extend(&indices_layout.shape)?
        .extend(&src_layout.strides)?
        .extend(&indices_layout.strides)?;
    let context = out.device.context();
    let key = IndexKernel::ScatterAddOrdered {
        dtype: out.dtype,
        index: indices.dtype,
    };
    GpuStorage::launch_checked(
        &out.device,
        &key,
        &params,
        &[
            src.raw()?,
            indices.raw()?,
            out.raw()?,
            context.index_flags(),
        ],
        out.len,
        Some("scatter_add"),
    )
}
