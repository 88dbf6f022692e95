//! The indexing family's key: [`IndexKernel`] (gathers, scatter-adds, `index_add`), per
//! value and index dtype.

use crate::backend::gpu::runtime::kernel::{enable_f16_if, Kernel};
use crate::backend::gpu::runtime::wgsl::{GPU_DTYPES, INDEX_DTYPES};
use crate::dtype::DType;

/// The identity of one indexing kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum IndexKernel {
    /// `index_select` / `gather`.
    Gather { dtype: DType, index: DType },
    /// `index_select` along the last dim of a dense input (`index_rows.wgsl`).
    IndexRows { dtype: DType, index: DType },
    /// `scatter_add` (atomic adds into a copy of the base).
    ScatterAdd { dtype: DType, index: DType },
    /// `scatter_add` on floats in the CPU's order, for deterministic algorithms.
    ScatterAddOrdered { dtype: DType, index: DType },
    /// Classification's pick of each row's class score and weight (`index/class_pick.rs`).
    ClassPick {
        dtype: DType,
        index: DType,
        weighted: bool,
    },
    /// The dense gradient of the pick (`index/class_pick.rs`).
    ClassPickBackward {
        dtype: DType,
        index: DType,
        weighted: bool,
    },
    /// `index_add`'s check of the sorted indices (`index/add.rs`).
    IndexAddKeys { index: DType },
    /// `index_add`'s deterministic segmented sums: the chunk pass, or the pass over segments
    /// crossing chunk borders when `crossing` (`index/add.rs`).
    IndexAddSums { dtype: DType, crossing: bool },
}

impl Kernel for IndexKernel {
    fn name(&self) -> String {
        format!("{self:?}")
    }

    fn source(&self) -> String {
        match *self {
            IndexKernel::Gather { dtype, index } => enable_f16_if(
                dtype == DType::F16,
                super::gather_source(dtype, index, false),
            ),
            IndexKernel::IndexRows { dtype, index } => enable_f16_if(
                dtype == DType::F16,
                super::gather_source(dtype, index, true),
            ),
            IndexKernel::ScatterAdd { dtype, index } => {
                enable_f16_if(dtype == DType::F16, super::scatter_add_source(dtype, index))
            }
            IndexKernel::ScatterAddOrdered { dtype, index } => enable_f16_if(
                dtype == DType::F16,
                super::scatter_add_ordered::source(dtype, index),
            ),
            IndexKernel::ClassPick {
                dtype,
                index,
                weighted,
            } => enable_f16_if(
                dtype == DType::F16,
                super::class_pick::source(dtype, index, weighted),
            ),
            IndexKernel::ClassPickBackward {
                dtype,
                index,
                weighted,
            } => enable_f16_if(
                dtype == DType::F16,
                super::class_pick::backward_source(dtype, index, weighted),
            ),
            IndexKernel::IndexAddKeys { index } => super::add::keys_source(index),
            IndexKernel::IndexAddSums { dtype, crossing } => enable_f16_if(
                dtype == DType::F16,
                super::add::sums_source(dtype, crossing),
            ),
        }
    }

    /// Index kernels keep the checks (a bad index is reported through the index flags).
    fn is_trusted(&self) -> bool {
        false
    }

    fn writes_workgroup_memory_first(&self) -> bool {
        false
    }

    fn catalogue() -> Vec<IndexKernel> {
        let mut keys = Vec::new();
        for dtype in GPU_DTYPES {
            super::catalogue(&mut keys, dtype, &INDEX_DTYPES);
            super::scatter_add_ordered::catalogue(&mut keys, dtype, &INDEX_DTYPES);
            super::class_pick::catalogue(&mut keys, dtype, &INDEX_DTYPES);
        }
        super::add::catalogue(&mut keys);
        keys
    }
}
