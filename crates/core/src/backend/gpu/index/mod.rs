//! Kernel families `Gather`, `IndexRows` and `ScatterAdd`, and the index primitives of
//! `GpuStorage` they serve: `index_select`, `gather` and `scatter_add`. Their kernels never
//! touch memory outside the views: an out-of-range index raises the dispatch's word in the
//! context's index-flag buffer, and the next readback or `synchronize` of the recording thread
//! returns the error (see `runtime/context.rs`). No op here waits for the GPU.
//! Params: [`GatherParams`], [`IndexRowsParams`], [`ScatterAddParams`] (the flag slot is word
//! `INDEX_SLOT_WORD` of each, which the context fills in); sources: `shaders/gather.wgsl`,
//! `index_rows.wgsl`, `scatter_add.wgsl`.

pub(crate) mod add;
pub(crate) mod class_pick;
mod contract;
pub(crate) mod kernel;
pub(crate) mod scatter_add_ordered;

use crate::backend::gpu::index::kernel::IndexKernel;
use crate::backend::gpu::runtime::context::{INDEX_SLOT_WORD, MAX_ROW_WORKGROUPS, WORKGROUP_SIZE};
use crate::backend::gpu::runtime::operands::{same_device, same_dtype, unsupported};
use crate::backend::gpu::runtime::params::{
    check_view, is_dense, kernel_params, word, KernelParams, Params,
};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{narrow_expression, storage_type, COMMON};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::contiguous_strides;

kernel_params! {
    /// Parameters of `shaders/gather.wgsl` (`index_select` and `gather`).
    struct GatherParams {
        /// Output elements.
        numel: u32,
        /// Rank of the views.
        rank: u32,
        /// The indexed dim.
        dim: u32,
        /// The input's size along `dim` (indices must be below it).
        limit: u32,
        /// The input view's offset.
        input_offset: u32,
        /// The index view's offset.
        index_offset: u32,
        /// This dispatch's word of the index-flag buffer (set by the context).
        flag_slot: u32,
        /// 1 where an index in [-limit, 0) counts from the end (signed indices of
        /// `index_select_wrapping`).
        wrap: u32,
    }
    tail: "output shape[rank], input strides[rank], index strides[rank]";
}

kernel_params! {
    /// Parameters of `shaders/index_rows.wgsl` (`index_select` along the last dim).
    struct IndexRowsParams {
        /// Rows of the input (all dims but the last).
        rows: u32,
        /// Indices (output row length).
        columns: u32,
        /// Input row length (indices must be below it).
        length: u32,
        /// The input's offset.
        input_offset: u32,
        /// The index vector's offset.
        index_offset: u32,
        /// The index vector's stride.
        index_stride: u32,
        /// This dispatch's word of the index-flag buffer (set by the context).
        flag_slot: u32,
        /// 1 where an index in [-length, 0) counts from the end.
        wrap: u32,
    }
}

kernel_params! {
    /// Parameters of `shaders/scatter_add.wgsl`.
    struct ScatterAddParams {
        /// Elements of the index view (one add each).
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
    tail: "index shape[rank], output strides[rank], src strides[rank], index strides[rank]";
}

// The context writes the flag slot at word `INDEX_SLOT_WORD` of an index kernel's params.
const _: () = assert!(std::mem::offset_of!(GatherParams, flag_slot) == 4 * INDEX_SLOT_WORD);
const _: () = assert!(std::mem::offset_of!(IndexRowsParams, flag_slot) == 4 * INDEX_SLOT_WORD);
const _: () = assert!(std::mem::offset_of!(ScatterAddParams, flag_slot) == 4 * INDEX_SLOT_WORD);

/// WGSL of `IndexKernel::Gather` (`rows: false`) or `IndexKernel::IndexRows` (after `enable f16;`
/// where needed).
pub(crate) fn gather_source(dtype: DType, index: DType, rows: bool) -> String {
    let mut text = format!(
        "alias S = {stored};\nalias IX = {};\nconst ZERO: S = {stored}();\n",
        storage_type(index),
        stored = storage_type(dtype)
    );
    if rows {
        text.push_str(IndexRowsParams::WGSL);
        text.push_str(COMMON);
        text.push_str(include_str!("../shaders/index_rows.wgsl"));
    } else {
        text.push_str(GatherParams::WGSL);
        text.push_str(COMMON);
        text.push_str(include_str!("../shaders/gather.wgsl"));
    }
    text
}

/// WGSL of `IndexKernel::ScatterAdd` (after `enable f16;` where needed).
pub(crate) fn scatter_add_source(dtype: DType, index: DType) -> String {
    let mut text = format!(
        "alias S = {};\nalias IX = {};\n",
        storage_type(dtype),
        storage_type(index)
    );
    text.push_str(&atomic_add_header(dtype));
    text.push_str(ScatterAddParams::WGSL);
    text.push_str(COMMON);
    text.push_str(include_str!("../shaders/scatter_add.wgsl"));
    text
}

/// The catalogue entries of the three families (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<IndexKernel>, dtype: DType, index_dtypes: &[DType]) {
    for &index in index_dtypes {
        keys.push(IndexKernel::Gather { dtype, index });
        keys.push(IndexKernel::IndexRows { dtype, index });
        if dtype != DType::Bool {
            keys.push(IndexKernel::ScatterAdd { dtype, index });
        }
    }
}

/// `atomic_add_element(position, value)` for scatter_add (`output` is `array<atomic<u32>>`).
fn atomic_add_header(dtype: DType) -> String {
    let cas = |word: &str, update: &str| {
        format!(
            "    var old = atomicLoad(&output[{word}]);\n    loop {{\n        let updated = {update};\n\
             \x20       let result = atomicCompareExchangeWeak(&output[{word}], old, updated);\n\
             \x20       if (result.exchanged) {{ break; }}\n        old = result.old_value;\n    }}\n"
        )
    };
    let body = match dtype {
        // BF16 never reaches a kernel (it runs in f32 through `storage.rs`).
        DType::F32 | DType::F64 | DType::BF16 => {
            cas("position", "bitcast<u32>(bitcast<f32>(old) + value)")
        }
        DType::F16 => format!(
            "    let word = position / 2u;\n    let lane = position % 2u;\n{}",
            cas(
                "word",
                "pack2x16float(unpack2x16float(old) + select(vec2<f32>(f32(value), 0.0), vec2<f32>(0.0, f32(value)), lane == 1u))"
            )
        ),
        DType::I32 => "    atomicAdd(&output[position], bitcast<u32>(value));\n".into(),
        DType::U32 => "    atomicAdd(&output[position], value);\n".into(),
        DType::U8 | DType::Bool => cas("position", &narrow_expression(dtype, "(old + value)")),
    };
    format!("fn atomic_add_element(position: u32, value: S) {{\n{body}}}\n")
}

impl GpuStorage {
    /// Entries of `dim` picked by an index vector.
    pub fn index_select(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
        self.select(layout, indices, indices_layout, dim, false)
    }

    /// [`GpuStorage::index_select`] where a signed index in `[-size, 0)` counts from the end
    /// of `dim` (Python's `x[idx]`).
    pub fn index_select_wrapping(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
        self.select(layout, indices, indices_layout, dim, true)
    }

    /// `index_select`, counting negative indices from the end where `wrap` (I32 indices only:
    /// unsigned ones are never negative).
    fn select(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        dim: usize,
        wrap: bool,
    ) -> Result<GpuStorage> {
        let wrap = u32::from(wrap && indices.dtype == DType::I32);
        same_device("index_select", self, indices)?;
        check_indices("index_select", indices)?;
        check_dim("index_select", layout, dim)?;
        check_view("index_select", layout, self.len)?;
        check_view("index_select", indices_layout, indices.len)?;
        // Any index rank is read as a flat vector (like the CPU); make it 1-D first.
        let flat;
        let (indices, indices_layout) = if indices_layout.rank() == 1 {
            (indices, indices_layout.clone())
        } else {
            flat = indices.copy_strided(indices_layout)?;
            (&flat, Layout::contiguous(&[indices_layout.numel()]))
        };
        let mut out_shape = layout.shape.clone();
        out_shape[dim] = indices_layout.numel();
        if dim + 1 == layout.rank() && is_dense(layout) {
            return self.index_rows(layout, indices, &indices_layout, out_shape, wrap);
        }
        // The index vector seen as a view of the output's shape: stride 0 except along `dim`.
        let mut index_strides = vec![0; layout.rank()];
        index_strides[dim] = indices_layout.strides[0];
        self.gather_kernel(
            layout,
            indices,
            indices_layout.offset,
            &index_strides,
            &out_shape,
            (dim, wrap),
            "index_select",
        )
    }

    /// `index_select` along the last dim of a dense view (1-D `indices`): one invocation per
    /// selected column walks every row (`index_rows.wgsl`).
    fn index_rows(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        out_shape: Vec<usize>,
        wrap: u32,
    ) -> Result<GpuStorage> {
        let numel: usize = out_shape.iter().product();
        let out = GpuStorage::allocate(&self.device, "index_select", numel, self.dtype)?;
        let length = layout.shape[layout.rank() - 1];
        let columns = indices_layout.numel();
        if numel == 0 {
            return Ok(out);
        }
        let rows = numel / columns;
        let header = IndexRowsParams {
            rows: word(rows)?,
            columns: word(columns)?,
            length: word(length)?,
            input_offset: word(layout.offset)?,
            index_offset: word(indices_layout.offset)?,
            index_stride: word(indices_layout.strides[0])?,
            flag_slot: 0, // filled in by the context
            wrap,
        };
        let params = Params::with_header(&header, 0);
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let column_groups = columns.div_ceil(WORKGROUP_SIZE as usize);
        if column_groups > max {
            return Err(Error::invalid(
                "index_select",
                format!("{columns} indices exceed one dispatch; select in parts"),
            ));
        }
        let row_groups = rows.min(MAX_ROW_WORKGROUPS as usize).min(max).max(1);
        let key = IndexKernel::IndexRows {
            dtype: self.dtype,
            index: indices.dtype,
        };
        context.dispatch_checked(
            &key,
            params.words(),
            &[
                self.raw()?,
                indices.raw()?,
                out.raw()?,
                context.index_flags(),
            ],
            (column_groups as u32, row_groups as u32, 1),
            Some("index_select"),
        )?;
        Ok(out)
    }

    /// `out[..., j, ...] = self[..., indices[..., j, ...], ...]` along `dim`.
    pub fn gather(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
        same_device("gather", self, indices)?;
        check_indices("gather", indices)?;
        check_dim("gather", layout, dim)?;
        let index_shape = &indices_layout.shape;
        if index_shape.len() != layout.rank()
            || index_shape
                .iter()
                .zip(&layout.shape)
                .enumerate()
                .any(|(d, (&i, &s))| d != dim && i > s)
        {
            return Err(Error::ShapeMismatch {
                op: "gather",
                lhs: layout.shape.clone(),
                rhs: index_shape.clone(),
                reason: format!("index shape must have the same rank and not exceed the input outside dim {dim}"),
            });
        }
        check_view("gather", layout, self.len)?;
        check_view("gather", indices_layout, indices.len)?;
        self.gather_kernel(
            layout,
            indices,
            indices_layout.offset,
            &indices_layout.strides,
            index_shape,
            (dim, 0),
            "gather",
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn gather_kernel(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        index_offset: usize,
        index_strides: &[usize],
        out_shape: &[usize],
        (dim, wrap): (usize, u32),
        op: &'static str,
    ) -> Result<GpuStorage> {
        let numel: usize = out_shape.iter().product();
        let out = GpuStorage::allocate(&self.device, op, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        let header = GatherParams {
            numel: word(numel)?,
            rank: word(layout.rank())?,
            dim: word(dim)?,
            limit: word(layout.shape[dim])?,
            input_offset: word(layout.offset)?,
            index_offset: word(index_offset)?,
            flag_slot: 0, // filled in by the context
            wrap,
        };
        let mut params = Params::with_header(&header, 3 * layout.rank());
        params
            .extend(out_shape)?
            .extend(&layout.strides)?
            .extend(index_strides)?;
        let context = self.device.context();
        let key = IndexKernel::Gather {
            dtype: self.dtype,
            index: indices.dtype,
        };
        GpuStorage::launch_checked(
            &self.device,
            &key,
            &params,
            &[
                self.raw()?,
                indices.raw()?,
                out.raw()?,
                context.index_flags(),
            ],
            numel,
            Some(op),
        )?;
        Ok(out)
    }

    /// A contiguous copy of the base with `src` added at `indices` along `dim`: floats with
    /// atomic adds, or, with deterministic algorithms on and the work within
    /// `determinism::ordered_scatter_fits`, in the CPU's order
    /// (`index/scatter_add_ordered.rs`).
    pub fn scatter_add(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        src: &GpuStorage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
        same_device("scatter_add", self, indices)?;
        same_device("scatter_add", self, src)?;
        same_dtype("scatter_add", self.dtype, src.dtype)?;
        if self.dtype == DType::Bool {
            return Err(unsupported("scatter_add", self.dtype, &self.device));
        }
        check_indices("scatter_add", indices)?;
        check_dim("scatter_add", layout, dim)?;
        let index_shape = &indices_layout.shape;
        let fits = |other: &[usize], allow_dim: bool| {
            index_shape.len() == other.len()
                && index_shape
                    .iter()
                    .zip(other)
                    .enumerate()
                    .all(|(d, (&i, &s))| (allow_dim && d == dim) || i <= s)
        };
        if !fits(&layout.shape, true) || !fits(&src_layout.shape, false) {
            return Err(Error::ShapeMismatch {
                op: "scatter_add",
                lhs: layout.shape.clone(),
                rhs: index_shape.clone(),
                reason: format!(
                    "index shape must have the rank of base and src and fit inside them (src shape {:?})",
                    src_layout.shape
                ),
            });
        }
        check_view("scatter_add", layout, self.len)?;
        check_view("scatter_add", indices_layout, indices.len)?;
        check_view("scatter_add", src_layout, src.len)?;
        let out = self.copy_strided(layout)?;
        let numel = indices_layout.numel();
        if numel == 0 {
            return Ok(out);
        }
        if self.dtype.is_float()
            && crate::determinism::are_deterministic_algorithms_enabled()
            && crate::determinism::ordered_scatter_fits(out.len, index_shape[dim])
        {
            crate::backend::gpu::index::scatter_add_ordered::launch(
                &out,
                &layout.shape,
                dim,
                (indices, indices_layout),
                (src, src_layout),
            )?;
            return Ok(out);
        }
        let header = ScatterAddParams {
            numel: word(numel)?,
            rank: word(layout.rank())?,
            dim: word(dim)?,
            limit: word(layout.shape[dim])?,
            src_offset: word(src_layout.offset)?,
            index_offset: word(indices_layout.offset)?,
            flag_slot: 0, // filled in by the context
        };
        let mut params = Params::with_header(&header, 4 * layout.rank());
        params
            .extend(index_shape)?
            .extend(&contiguous_strides(&layout.shape))?
            .extend(&src_layout.strides)?
            .extend(&indices_layout.strides)?;
        let context = self.device.context();
        let key = IndexKernel::ScatterAdd {
            dtype: self.dtype,
            index: indices.dtype,
        };
        GpuStorage::launch_checked(
            &self.device,
            &key,
            &params,
            &[
                src.raw()?,
                indices.raw()?,
                out.raw()?,
                context.index_flags(),
            ],
            numel,
            Some("scatter_add"),
        )?;
        Ok(out)
    }
}

pub(super) fn check_indices(op: &'static str, indices: &GpuStorage) -> Result<()> {
    if !indices.dtype.is_index() {
        return Err(Error::invalid(
            op,
            format!("indices must be an integer tensor, got {}", indices.dtype),
        ));
    }
    Ok(())
}

fn check_dim(op: &'static str, layout: &Layout, dim: usize) -> Result<()> {
    if dim >= layout.rank() {
        return Err(Error::InvalidShape {
            op,
            shape: layout.shape.clone(),
            message: format!(
                "dim {dim} is out of range for a tensor of rank {}",
                layout.rank()
            ),
        });
    }
    Ok(())
}
