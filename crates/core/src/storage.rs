//! `Storage` is the data behind a tensor: a CPU vector or a GPU buffer. This is the only place
//! that matches on backends; every method forwards to the backend with the same signature
//! (`CpuStorage` in `backend/cpu`, `GpuStorage` in `backend/gpu`). Inputs come with their
//! `Layout` (views are metadata); every output is a new contiguous storage.
//!
//! The contract every backend keeps:
//! - `binary`, `where_select`: operand layouts already have the same shape (the tensor layer
//!   broadcasts with stride-0 views first) and the same dtype.
//! - `reduce`: output has the input's shape with each reduced dim set to 1 (keepdim); arg
//!   reductions take exactly one dim and return `I32`.
//! - `matmul`: layouts are rank 3, `[batch, m, k]` and `[batch, k, n]` (a batch stride may be
//!   0); output `[batch, m, n]`.
//! - `conv2d`: input `[n, c, h, w]` and weight `[o, c, kh, kw]` (any strides), one group, no
//!   bias; output contiguous `[n, o, oh, ow]`. Float dtypes only. Its gradients
//!   `conv2d_backward_input` (output gradient and weight -> contiguous `[n, c, h, w]`) and
//!   `conv2d_backward_weight` (input and output gradient -> contiguous `[o, c, kh, kw]`) take
//!   the forward's parameters and the shape they return; the output gradient must have the
//!   forward output's shape.
//! - `index_select`: output shape is the input's with `dim` replaced by the number of indices.
//!   `gather`: output has the indices' shape. `scatter_add`: output has the base's shape.
//!   Out-of-range indices return `Error::InvalidArgument`, never a panic or a wild write.

use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::GpuStorage;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::geometry::Conv2dParams;
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::profiler;
use crate::random::Distribution;

/// Tensor data on one device.
#[derive(Debug)]
pub enum Storage {
    Cpu(CpuStorage),
    Gpu(GpuStorage),
}

fn device_mismatch(op: &'static str, lhs: &Storage, rhs: &Storage) -> Error {
    Error::DeviceMismatch {
        op,
        lhs: lhs.device().to_string(),
        rhs: rhs.device().to_string(),
    }
}

/// Bytes held by a storage (for the profiler).
fn storage_bytes(storage: &Storage) -> u64 {
    let len = match storage {
        Storage::Cpu(s) => s.len(),
        Storage::Gpu(s) => s.len(),
    };
    (len * storage.dtype().size_in_bytes()) as u64
}

impl Storage {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            Storage::Gpu(s) => s.dtype(),
        }
    }

    /// Number of stored elements (a view may use fewer).
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Gpu(s) => s.len(),
        }
    }

    /// The device holding the data.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Gpu(s) => Device::Gpu(s.device().clone()),
        }
    }

    /// A storage of `numel` elements of `dtype`, all equal to `value`.
    pub fn full(device: &Device, numel: usize, dtype: DType, value: f64) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::full(numel, dtype, value)?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(GpuStorage::full(gpu, numel, dtype, value)?)),
        }
    }

    /// `start, start + step, ...` (`numel` values) in `dtype`.
    pub fn arange(
        device: &Device,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::arange(start, step, numel, dtype)?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(GpuStorage::arange(
                gpu, start, step, numel, dtype,
            )?)),
        }
    }

    /// Counter-based random values (see `random.rs`): element `i` uses counter `offset + i`.
    pub fn random(
        device: &Device,
        numel: usize,
        dtype: DType,
        distribution: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<Storage> {
        match device {
            Device::Cpu => Ok(Storage::Cpu(CpuStorage::random(
                numel,
                dtype,
                distribution,
                seed,
                offset,
            )?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(GpuStorage::random(
                gpu,
                numel,
                dtype,
                distribution,
                seed,
                offset,
            )?)),
        }
    }

    /// Move (copy) the data to `device`. The whole storage is copied, layouts stay valid.
    pub fn to_device(&self, device: &Device) -> Result<Storage> {
        match (self, device) {
            (Storage::Cpu(s), Device::Cpu) => Ok(Storage::Cpu(s.clone())),
            (Storage::Cpu(s), Device::Gpu(gpu)) => Ok(Storage::Gpu(GpuStorage::from_cpu(gpu, s)?)),
            (Storage::Gpu(s), Device::Cpu) => Ok(Storage::Cpu(s.to_cpu()?)),
            (Storage::Gpu(s), Device::Gpu(gpu)) => Ok(Storage::Gpu(s.to_gpu(gpu)?)),
        }
    }

    /// The whole storage as a CPU storage (a readback for GPU data: this blocks).
    pub fn to_cpu(&self) -> Result<CpuStorage> {
        match self {
            Storage::Cpu(s) => Ok(s.clone()),
            Storage::Gpu(s) => s.to_cpu(),
        }
    }

    /// Elementwise unary op.
    pub fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Storage> {
        profiler::record(
            op.name(),
            &[&layout.shape],
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match self {
                Storage::Cpu(s) => Ok(Storage::Cpu(s.unary(layout, op)?)),
                Storage::Gpu(s) => Ok(Storage::Gpu(s.unary(layout, op)?)),
            },
        )
    }

    /// Elementwise binary op on equal-shape layouts.
    pub fn binary(
        &self,
        layout: &Layout,
        rhs: &Storage,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &rhs_layout.shape];
        profiler::record(
            op.name(),
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, rhs) {
                (Storage::Cpu(l), Storage::Cpu(r)) => {
                    Ok(Storage::Cpu(l.binary(layout, r, rhs_layout, op)?))
                }
                (Storage::Gpu(l), Storage::Gpu(r)) => {
                    Ok(Storage::Gpu(l.binary(layout, r, rhs_layout, op)?))
                }
                (l, r) => Err(device_mismatch(op.name(), l, r)),
            },
        )
    }

    /// Elementwise binary op with a scalar: `x op scalar`, or `scalar op x` when
    /// `scalar_on_left`.
    pub fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Storage> {
        profiler::record(
            op.name(),
            &[&layout.shape],
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match self {
                Storage::Cpu(s) => Ok(Storage::Cpu(s.binary_scalar(
                    layout,
                    op,
                    scalar,
                    scalar_on_left,
                )?)),
                Storage::Gpu(s) => Ok(Storage::Gpu(s.binary_scalar(
                    layout,
                    op,
                    scalar,
                    scalar_on_left,
                )?)),
            },
        )
    }

    /// `cond ? on_true : on_false` elementwise; `self` is the condition (any dtype, non-zero
    /// is true).
    pub fn where_select(
        &self,
        layout: &Layout,
        on_true: &Storage,
        true_layout: &Layout,
        on_false: &Storage,
        false_layout: &Layout,
    ) -> Result<Storage> {
        profiler::record(
            "where",
            &[&layout.shape],
            on_true.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, on_true, on_false) {
                (Storage::Cpu(c), Storage::Cpu(t), Storage::Cpu(f)) => Ok(Storage::Cpu(
                    c.where_select(layout, t, true_layout, f, false_layout)?,
                )),
                (Storage::Gpu(c), Storage::Gpu(t), Storage::Gpu(f)) => Ok(Storage::Gpu(
                    c.where_select(layout, t, true_layout, f, false_layout)?,
                )),
                (c, t, f) => Err(device_mismatch(
                    "where",
                    c,
                    if std::mem::discriminant(c) == std::mem::discriminant(t) {
                        f
                    } else {
                        t
                    },
                )),
            },
        )
    }

    /// Reduction over `dims` (keepdim output).
    pub fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Storage> {
        profiler::record(
            op.name(),
            &[&layout.shape],
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match self {
                Storage::Cpu(s) => Ok(Storage::Cpu(s.reduce(layout, op, dims)?)),
                Storage::Gpu(s) => Ok(Storage::Gpu(s.reduce(layout, op, dims)?)),
            },
        )
    }

    /// Batched matrix product of rank-3 layouts.
    pub fn matmul(&self, layout: &Layout, rhs: &Storage, rhs_layout: &Layout) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &rhs_layout.shape];
        profiler::record(
            "matmul",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, rhs) {
                (Storage::Cpu(l), Storage::Cpu(r)) => {
                    Ok(Storage::Cpu(l.matmul(layout, r, rhs_layout)?))
                }
                (Storage::Gpu(l), Storage::Gpu(r)) => {
                    Ok(Storage::Gpu(l.matmul(layout, r, rhs_layout)?))
                }
                (l, r) => Err(device_mismatch("matmul", l, r)),
            },
        )
    }

    /// 2-D convolution with one group and no bias (the direct primitive; see the contract).
    pub fn conv2d(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &weight_layout.shape];
        profiler::record(
            "conv2d",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, weight) {
                (Storage::Cpu(x), Storage::Cpu(w)) => {
                    Ok(Storage::Cpu(x.conv2d(layout, w, weight_layout, params)?))
                }
                (Storage::Gpu(x), Storage::Gpu(w)) => {
                    Ok(Storage::Gpu(x.conv2d(layout, w, weight_layout, params)?))
                }
                (x, w) => Err(device_mismatch("conv2d", x, w)),
            },
        )
    }

    /// The one-group convolution's input gradient: `self` is the output gradient
    /// `[n, o, oh, ow]`, `weight` the forward's weight; returns `[n, c, h, w]` for
    /// `input_shape` (the transposed convolution; see the contract).
    pub fn conv2d_backward_input(
        &self,
        layout: &Layout,
        weight: &Storage,
        weight_layout: &Layout,
        params: &Conv2dParams,
        input_shape: &[usize],
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &weight_layout.shape];
        profiler::record(
            "conv2d_backward_input",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, weight) {
                (Storage::Cpu(g), Storage::Cpu(w)) => Ok(Storage::Cpu(g.conv2d_backward_input(
                    layout,
                    w,
                    weight_layout,
                    params,
                    input_shape,
                )?)),
                (Storage::Gpu(g), Storage::Gpu(w)) => Ok(Storage::Gpu(g.conv2d_backward_input(
                    layout,
                    w,
                    weight_layout,
                    params,
                    input_shape,
                )?)),
                (g, w) => Err(device_mismatch("conv2d_backward_input", g, w)),
            },
        )
    }

    /// The one-group convolution's weight gradient: `self` is the forward's input
    /// `[n, c, h, w]`, `grad` the output gradient `[n, o, oh, ow]`; returns `[o, c, kh, kw]`
    /// for `weight_shape` (see the contract).
    pub fn conv2d_backward_weight(
        &self,
        layout: &Layout,
        grad: &Storage,
        grad_layout: &Layout,
        params: &Conv2dParams,
        weight_shape: &[usize],
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &grad_layout.shape];
        profiler::record(
            "conv2d_backward_weight",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, grad) {
                (Storage::Cpu(x), Storage::Cpu(g)) => Ok(Storage::Cpu(x.conv2d_backward_weight(
                    layout,
                    g,
                    grad_layout,
                    params,
                    weight_shape,
                )?)),
                (Storage::Gpu(x), Storage::Gpu(g)) => Ok(Storage::Gpu(x.conv2d_backward_weight(
                    layout,
                    g,
                    grad_layout,
                    params,
                    weight_shape,
                )?)),
                (x, g) => Err(device_mismatch("conv2d_backward_weight", x, g)),
            },
        )
    }

    /// A contiguous copy of the view.
    pub fn copy_strided(&self, layout: &Layout) -> Result<Storage> {
        profiler::record(
            "copy",
            &[&layout.shape],
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match self {
                Storage::Cpu(s) => Ok(Storage::Cpu(s.copy_strided(layout)?)),
                Storage::Gpu(s) => Ok(Storage::Gpu(s.copy_strided(layout)?)),
            },
        )
    }

    /// Copy the view `layout` of `self` into the view `dst_layout` of `dst` (same shape and
    /// dtype). Used by `cat`, `assign` and the optimizers' in-place updates.
    pub fn copy_into(&self, layout: &Layout, dst: &mut Storage, dst_layout: &Layout) -> Result<()> {
        match (self, &mut *dst) {
            (Storage::Cpu(s), Storage::Cpu(d)) => s.copy_into(layout, d, dst_layout),
            (Storage::Gpu(s), Storage::Gpu(d)) => s.copy_into(layout, d, dst_layout),
            (s, d) => Err(device_mismatch("copy", s, d)),
        }
    }

    /// Convert the view to another dtype (contiguous output).
    pub fn cast(&self, layout: &Layout, dtype: DType) -> Result<Storage> {
        profiler::record(
            "cast",
            &[&layout.shape],
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match self {
                Storage::Cpu(s) => Ok(Storage::Cpu(s.cast(layout, dtype)?)),
                Storage::Gpu(s) => Ok(Storage::Gpu(s.cast(layout, dtype)?)),
            },
        )
    }

    /// Select entries of `dim` by an index vector (rank-1 indices).
    pub fn index_select(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &indices_layout.shape];
        profiler::record(
            "index_select",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, indices) {
                (Storage::Cpu(s), Storage::Cpu(i)) => Ok(Storage::Cpu(s.index_select(
                    layout,
                    i,
                    indices_layout,
                    dim,
                )?)),
                (Storage::Gpu(s), Storage::Gpu(i)) => Ok(Storage::Gpu(s.index_select(
                    layout,
                    i,
                    indices_layout,
                    dim,
                )?)),
                (s, i) => Err(device_mismatch("index_select", s, i)),
            },
        )
    }

    /// `out[i][j][k] = self[i][indices[i][j][k]][k]` for `dim = 1` (likewise for any dim).
    pub fn gather(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let shapes: [&[usize]; 2] = [&layout.shape, &indices_layout.shape];
        profiler::record(
            "gather",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, indices) {
                (Storage::Cpu(s), Storage::Cpu(i)) => {
                    Ok(Storage::Cpu(s.gather(layout, i, indices_layout, dim)?))
                }
                (Storage::Gpu(s), Storage::Gpu(i)) => {
                    Ok(Storage::Gpu(s.gather(layout, i, indices_layout, dim)?))
                }
                (s, i) => Err(device_mismatch("gather", s, i)),
            },
        )
    }

    /// A copy of `self` (the base) with `src` added at `indices` along `dim`:
    /// `out[i][indices[i][j][k]][k] += src[i][j][k]` for `dim = 1`.
    pub fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        src: &Storage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let shapes: [&[usize]; 3] = [&layout.shape, &indices_layout.shape, &src_layout.shape];
        profiler::record(
            "scatter_add",
            &shapes,
            self.dtype(),
            &self.device(),
            storage_bytes,
            || match (self, indices, src) {
                (Storage::Cpu(b), Storage::Cpu(i), Storage::Cpu(s)) => Ok(Storage::Cpu(
                    b.scatter_add(layout, i, indices_layout, s, src_layout, dim)?,
                )),
                (Storage::Gpu(b), Storage::Gpu(i), Storage::Gpu(s)) => Ok(Storage::Gpu(
                    b.scatter_add(layout, i, indices_layout, s, src_layout, dim)?,
                )),
                (b, i, s) => Err(device_mismatch(
                    "scatter_add",
                    b,
                    if std::mem::discriminant(b) == std::mem::discriminant(i) {
                        s
                    } else {
                        i
                    },
                )),
            },
        )
    }
}
