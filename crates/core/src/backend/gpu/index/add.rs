//! Kernel families `IndexAddKeys` and `IndexAddSums`, and `GpuStorage::index_add` they serve:
//! a copy of the base with `src` added at 1-D `indices` along `dim`, the backward of
//! `index_select` (embedding gradients). Deterministic and without float atomics, so one index
//! repeated thousands of times (an embedding row every token hits) costs no contention:
//!
//! 1. the stable `argsort` of the indices (`sort/`) groups equal indices into segments of
//!    consecutive sorted positions, each in the indices' original order;
//! 2. `index_add_keys.wgsl` reads each sorted position's index once and checks it (a bad
//!    index raises the dispatch's index flag, like `index/`'s kernels);
//! 3. `index_add_chunks.wgsl`: the sorted positions are cut into chunks of `chunk_length`;
//!    one invocation per (outer, chunk, column) sums each run inside its chunk, adds finished
//!    segments to the output directly and leaves the runs of segments crossing a chunk border
//!    in a small partials buffer;
//! 4. `index_add_crossing.wgsl`: one invocation per crossing segment's head chunk and column
//!    adds those partials in chunk order and writes the result.
//!
//! Every output element is written by exactly one invocation, and each sum runs in a fixed
//! order that depends only on the indices, so every run gives the same bits. The tensors are
//! seen as `[outer, size, inner]` around `dim` (the base and output) and `[outer, count,
//! inner]` (src, made contiguous first when it is not). Params: [`IndexAddParams`].

use crate::backend::checks::check_index_add_shapes;
use crate::backend::gpu::index::check_indices;
use crate::backend::gpu::index::kernel::IndexKernel;
use crate::backend::gpu::runtime::context::INDEX_SLOT_WORD;
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{class, storage_type, value_header, Class, COMMON};
use crate::backend::gpu::runtime::wgsl::{GPU_DTYPES, INDEX_DTYPES};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the three `index_add` passes (`shaders/index_add_*.wgsl`).
    struct IndexAddParams {
        /// Indices (sorted positions).
        count: u32,
        /// Elements after `dim` (columns of one row).
        inner: u32,
        /// Elements before `dim`.
        outer: u32,
        /// The base's size along `dim` (indices must be below it).
        limit: u32,
        /// Sorted positions per chunk.
        chunk: u32,
        /// Chunks (`count` / `chunk`, rounded up).
        chunks: u32,
        /// This dispatch's word of the index-flag buffer (set by the context; keys pass).
        flag_slot: u32,
        /// The index view's offset.
        index_offset: u32,
        /// The index view's stride.
        index_stride: u32,
        /// The (contiguous) src's offset.
        src_offset: u32,
        /// Invocations of a summing pass (`outer * chunks * inner`).
        invocations: u32,
    }
}

// The context writes the flag slot at word `INDEX_SLOT_WORD` of an index kernel's params.
const _: () = assert!(std::mem::offset_of!(IndexAddParams, flag_slot) == 4 * INDEX_SLOT_WORD);

/// Sorted positions per chunk for `count` indices: about half the square root, a power of
/// two in 32..=1024, so that the chunks' walks (pass 3) and the chunks' count (pass 4's walk
/// along one long segment) both stay short. A function of `count` only: the summation order,
/// hence the bits, never changes between runs.
fn chunk_length(count: usize) -> usize {
    let root = (count as f64).sqrt().ceil() as usize;
    (root.next_power_of_two() / 2).clamp(32, 1024)
}

/// The dtype of the partial sums of `dtype`'s values (its WGSL `T`).
fn partial_dtype(dtype: DType) -> DType {
    match class(dtype) {
        Class::Float => DType::F32,
        Class::Signed => DType::I32,
        Class::Unsigned => DType::U32,
    }
}

/// WGSL of `IndexKernel::IndexAddKeys`.
pub(crate) fn keys_source(index: DType) -> String {
    let mut text = format!("alias IX = {};\n", storage_type(index));
    text.push_str(IndexAddParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/index_add_keys.wgsl"));
    text
}

/// WGSL of `IndexKernel::IndexAddSums` (after `enable f16;` where needed): the chunk pass, or
/// the crossing pass when `crossing`.
pub(crate) fn sums_source(dtype: DType, crossing: bool) -> String {
    let mut text = value_header(dtype);
    text.push_str(IndexAddParams::WGSL);
    text.push_str(COMMON);
    text.push_str(if crossing {
        include_str!("../shaders/index_add_crossing.wgsl")
    } else {
        include_str!("../shaders/index_add_chunks.wgsl")
    });
    text
}

/// The catalogue entries of both families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<IndexKernel>) {
    for index in INDEX_DTYPES {
        keys.push(IndexKernel::IndexAddKeys { index });
    }
    for dtype in GPU_DTYPES {
        if dtype != DType::Bool {
            for crossing in [false, true] {
                keys.push(IndexKernel::IndexAddSums { dtype, crossing });
            }
        }
    }
}

impl GpuStorage {
    /// A contiguous copy of the base with `src` added at the 1-D `indices` along `dim`
    /// (`Indexing::index_add`), deterministic.
    pub fn index_add(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        src: &GpuStorage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
        const OP: &str = "index_add";
        same_device(OP, self, indices)?;
        same_device(OP, self, src)?;
        same_dtype(OP, self.dtype, src.dtype)?;
        if self.dtype == DType::Bool {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        check_indices(OP, indices)?;
        let (outer, size, inner, count) =
            check_index_add_shapes(layout, indices_layout, src_layout, dim)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, indices_layout, indices.len)?;
        check_view(OP, src_layout, src.len)?;
        let out = self.copy_strided(layout)?;
        if count == 0 {
            return Ok(out);
        }
        let order = indices.argsort(indices_layout, 0, false)?;
        let keys = GpuStorage::allocate(&self.device, OP, count, DType::U32)?;
        let chunk = chunk_length(count);
        let chunks = count.div_ceil(chunk);
        let invocations = outer
            .checked_mul(inner)
            .and_then(|columns| columns.checked_mul(chunks))
            .ok_or_else(|| Error::invalid(OP, "the sums' grid overflows"))?;
        let mut header = IndexAddParams {
            count: word(count)?,
            inner: word(inner)?,
            outer: word(outer)?,
            limit: word(size)?,
            chunk: word(chunk)?,
            chunks: word(chunks)?,
            flag_slot: 0, // filled in by the context
            index_offset: word(indices_layout.offset)?,
            index_stride: word(indices_layout.strides[0])?,
            src_offset: 0,
            invocations: word(invocations)?,
        };
        let context = self.device.context();
        // The indices are checked even when there is nothing to add them to.
        GpuStorage::launch_checked(
            &self.device,
            &IndexKernel::IndexAddKeys {
                index: indices.dtype,
            },
            &Params::with_header(&header, 0),
            &[
                indices.raw()?,
                order.raw()?,
                keys.raw()?,
                context.index_flags(),
            ],
            count,
            Some(OP),
        )?;
        if invocations == 0 {
            return Ok(out);
        }
        let contiguous;
        let src = if src_layout.is_contiguous() {
            header.src_offset = word(src_layout.offset)?;
            src
        } else {
            contiguous = src.copy_strided(src_layout)?;
            &contiguous
        };
        let partials =
            GpuStorage::allocate(&self.device, OP, invocations * 2, partial_dtype(self.dtype))?;
        let params = Params::with_header(&header, 0);
        GpuStorage::launch(
            &self.device,
            &IndexKernel::IndexAddSums {
                dtype: self.dtype,
                crossing: false,
            },
            &params,
            &[
                src.raw()?,
                order.raw()?,
                keys.raw()?,
                out.raw()?,
                partials.raw()?,
            ],
            invocations,
        )?;
        if chunks > 1 {
            GpuStorage::launch(
                &self.device,
                &IndexKernel::IndexAddSums {
                    dtype: self.dtype,
                    crossing: true,
                },
                &params,
                &[keys.raw()?, partials.raw()?, out.raw()?],
                invocations,
            )?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_short_at_every_count() {
        assert_eq!(chunk_length(1), 32);
        assert_eq!(chunk_length(2000), 32);
        assert_eq!(chunk_length(8192), 64);
        assert_eq!(chunk_length(1 << 20), 512);
        assert_eq!(chunk_length(usize::from(u16::MAX) << 16), 1024);
    }
}
