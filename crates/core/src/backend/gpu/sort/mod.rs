//! Kernel families `SortRows` and `SortGlobal`, and `GpuStorage::argsort` they serve: the
//! stable sort order of every row along one dim, as a bitonic network. The host moves the
//! sorted dim last and casts the view to a 32-bit key dtype (floats to F32, U8/Bool/I32 to
//! I32, U32 stays), so kernels read contiguous words and turn them into order keys
//! (`shaders/sort_common.wgsl`). Rows up to `LOCAL_LENGTH` sort inside one workgroup
//! (`sort_rows.wgsl`); longer rows run the network over storage buffers, one dispatch per step
//! (`sort_global.wgsl`). Ties break by position, so the result equals the CPU's stable sort
//! (`cpu/sort.rs`). Params: [`SortParams`].

mod contract;
pub(crate) mod kernel;

use crate::backend::checks::check_dim;
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::backend::gpu::sort::kernel::SortKernel;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

/// The longest row `sort_rows.wgsl` sorts in workgroup memory (its `LOCAL_LENGTH`).
const LOCAL_LENGTH: usize = 1024;

kernel_params! {
    /// Parameters of `shaders/sort_rows.wgsl` and `shaders/sort_global.wgsl`.
    struct SortParams {
        /// Rows to sort.
        rows: u32,
        /// Elements per row.
        length: u32,
        /// `length` rounded up to a power of two (the network's width).
        padded: u32,
        /// 1 for a descending sort.
        descending: u32,
        /// Global kernel only: 0 load, 1 compare-exchange step, 2 write positions.
        stage: u32,
        /// Global kernel only: the size of the bitonic sequences this step merges.
        block: u32,
        /// Global kernel only: the distance between compared slots.
        distance: u32,
    }
}

/// The key kind of a 32-bit key dtype (`KEY_KIND` of `sort_common.wgsl`).
fn key_kind(key: DType) -> u32 {
    match key {
        DType::I32 => 1,
        DType::U32 => 2,
        DType::F32 | DType::F16 | DType::BF16 | DType::F64 | DType::U8 | DType::Bool => 0,
    }
}

/// The 32-bit dtype `dtype`'s values are cast to before sorting (exact for every GPU dtype).
fn key_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 | DType::F64 => DType::F32,
        DType::I32 | DType::U8 | DType::Bool => DType::I32,
        DType::U32 => DType::U32,
    }
}

/// WGSL of `SortKernel::SortRows` (`global: false`) or `SortKernel::SortGlobal`.
pub(crate) fn source(key: DType, global: bool) -> String {
    let mut text = format!("const KEY_KIND: u32 = {}u;\n", key_kind(key));
    text.push_str(SortParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/sort_common.wgsl"));
    if global {
        text.push_str(include_str!("../shaders/sort_global.wgsl"));
    } else {
        text.push_str(include_str!("../shaders/sort_rows.wgsl"));
    }
    text
}

/// The catalogue entries of both families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<SortKernel>) {
    for key in [DType::F32, DType::I32, DType::U32] {
        keys.push(SortKernel::SortRows { key });
        keys.push(SortKernel::SortGlobal { key });
    }
}

impl GpuStorage {
    /// The positions along `dim` that sort each row of the view, stable
    /// (`Sorting::argsort`): contiguous I32 of the view's shape.
    pub fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<GpuStorage> {
        check_view("argsort", layout, self.len)?;
        check_dim("argsort", layout, dim)?;
        let numel = layout.numel();
        if numel == 0 {
            return GpuStorage::allocate(&self.device, "argsort", 0, DType::I32);
        }
        // Rows contiguous along the sorted dim, in a 32-bit key dtype.
        let last = layout.rank() - 1;
        let mut permutation: Vec<usize> = (0..layout.rank()).collect();
        permutation.swap(dim, last);
        let moved = layout.permute(&permutation);
        let key = key_dtype(self.dtype);
        let values = self.cast(&moved, key)?;
        let length = layout.shape[dim];
        let rows = numel / length;
        let padded = length.next_power_of_two();
        let header = SortParams {
            rows: word(rows)?,
            length: word(length)?,
            padded: word(padded)?,
            descending: u32::from(descending),
            stage: 0,
            block: 0,
            distance: 0,
        };
        let sorted = if length <= LOCAL_LENGTH {
            self.sort_rows(&values, key, header)?
        } else {
            self.sort_global(&values, key, header)?
        };
        if dim == last {
            return Ok(sorted);
        }
        let back = Layout::contiguous(&moved.shape).permute(&permutation);
        sorted.copy_strided(&back)
    }

    /// One workgroup per row (`sort_rows.wgsl`).
    fn sort_rows(&self, values: &GpuStorage, key: DType, header: SortParams) -> Result<GpuStorage> {
        let rows = header.rows as usize;
        let out = GpuStorage::allocate(
            &self.device,
            "argsort",
            rows * header.length as usize,
            DType::I32,
        )?;
        let context = self.device.context();
        context.dispatch(
            &SortKernel::SortRows { key },
            Params::with_header(&header, 0).words(),
            &[values.raw()?, out.raw()?],
            context.grid(word(rows)?),
        )?;
        Ok(out)
    }

    /// The network over storage buffers, one dispatch per step (`sort_global.wgsl`).
    fn sort_global(
        &self,
        values: &GpuStorage,
        key: DType,
        header: SortParams,
    ) -> Result<GpuStorage> {
        let (rows, length, padded) = (
            header.rows as usize,
            header.length as usize,
            header.padded as usize,
        );
        let slots = rows.checked_mul(padded).ok_or_else(|| {
            crate::error::Error::invalid(
                "argsort",
                format!("{rows} rows of {padded} slots overflow"),
            )
        })?;
        let keys = GpuStorage::allocate(&self.device, "argsort", slots, DType::U32)?;
        let positions = GpuStorage::allocate(&self.device, "argsort", slots, DType::U32)?;
        let out = GpuStorage::allocate(&self.device, "argsort", rows * length, DType::I32)?;
        let kernel = SortKernel::SortGlobal { key };
        let buffers = [values.raw()?, keys.raw()?, positions.raw()?, out.raw()?];
        let launch = |stage: u32, block: usize, distance: usize, count: usize| -> Result<()> {
            let step = SortParams {
                stage,
                block: word(block)?,
                distance: word(distance)?,
                ..header
            };
            GpuStorage::launch(
                &self.device,
                &kernel,
                &Params::with_header(&step, 0),
                &buffers,
                count,
            )
        };
        launch(0, 0, 0, slots)?;
        let mut block = 2;
        while block <= padded {
            let mut distance = block / 2;
            while distance > 0 {
                launch(1, block, distance, slots / 2)?;
                distance /= 2;
            }
            block *= 2;
        }
        launch(2, 0, 0, rows * length)?;
        Ok(out)
    }
}
