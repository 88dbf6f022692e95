//! The index primitives of `GpuStorage`: `index_select`, `gather` and `scatter_add`. Their
//! kernels never touch memory outside the views: an out-of-range index raises the dispatch's
//! word in the context's index-flag buffer, and the next readback or `synchronize` of the
//! recording thread returns the error (see `context.rs`). No op here waits for the GPU.

use super::context::{MAX_ROW_WORKGROUPS, WORKGROUP_SIZE};
use super::kernels::KernelKey;
use super::ops::{same_device, same_dtype, unsupported};
use super::params::{check_view, is_dense, Params};
use super::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::contiguous_strides;

impl GpuStorage {
    /// Entries of `dim` picked by an index vector.
    pub fn index_select(
        &self,
        layout: &Layout,
        indices: &GpuStorage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<GpuStorage> {
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
            return self.index_rows(layout, indices, &indices_layout, out_shape);
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
            dim,
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
    ) -> Result<GpuStorage> {
        let numel: usize = out_shape.iter().product();
        let out = GpuStorage::allocate(&self.device, "index_select", numel, self.dtype)?;
        let length = layout.shape[layout.rank() - 1];
        let columns = indices_layout.numel();
        if numel == 0 {
            return Ok(out);
        }
        let rows = numel / columns;
        let mut params = Params::new();
        params
            .push(rows)?
            .push(columns)?
            .push(length)?
            .push(layout.offset)?
            .push(indices_layout.offset)?
            .push(indices_layout.strides[0])?
            .push(0)?; // flag slot, filled in by the context
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
        let key = KernelKey::IndexRows {
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
            dim,
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
        dim: usize,
        op: &'static str,
    ) -> Result<GpuStorage> {
        let numel: usize = out_shape.iter().product();
        let out = GpuStorage::allocate(&self.device, op, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        let mut params = Params::new();
        params
            .push(numel)?
            .push(layout.rank())?
            .push(dim)?
            .push(layout.shape[dim])?
            .push(layout.offset)?
            .push(index_offset)?
            .push(0)? // flag slot, filled in by the context
            .extend(out_shape)?
            .extend(&layout.strides)?
            .extend(index_strides)?;
        let context = self.device.context();
        let key = KernelKey::Gather {
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

    /// A contiguous copy of the base with `src` added at `indices` along `dim`.
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
        let mut params = Params::new();
        params
            .push(numel)?
            .push(layout.rank())?
            .push(dim)?
            .push(layout.shape[dim])?
            .push(src_layout.offset)?
            .push(indices_layout.offset)?
            .push(0)? // flag slot, filled in by the context
            .extend(index_shape)?
            .extend(&contiguous_strides(&layout.shape))?
            .extend(&src_layout.strides)?
            .extend(&indices_layout.strides)?;
        let context = self.device.context();
        let key = KernelKey::ScatterAdd {
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

fn check_indices(op: &'static str, indices: &GpuStorage) -> Result<()> {
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
