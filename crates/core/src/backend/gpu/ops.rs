//! The compute primitives of `GpuStorage`, with the signatures of `CpuStorage`'s (see the
//! contract in `storage.rs`). Each method checks its operands on the host, packs shapes and
//! strides into parameter words, and records one dispatch; nothing here waits for the GPU.
//! The index ops are in `indexing.rs`.

use super::context::GpuContext;
use super::fusion::{self, Request};
use super::kernels::{unary_supported, Access, KernelKey};
use super::matmul_coop::COOP_TILE;
use super::matmul_large::{aligned_applies, prefers_large_tile, LARGE_TILE};
use super::params::{check_view, is_dense, Params};
use super::storage::GpuStorage;
use super::vector::MAX_WORKGROUPS;
use super::GpuDevice;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::op::{BinaryOp, ReduceOp, UnaryOp};

pub(super) fn unsupported(op: &'static str, dtype: DType, device: &GpuDevice) -> Error {
    Error::Unsupported {
        op,
        dtype,
        device: format!("gpu:{}", device.ordinal()),
        hint: String::new(),
    }
}

pub(super) fn same_device(op: &'static str, lhs: &GpuStorage, rhs: &GpuStorage) -> Result<()> {
    if lhs.device != rhs.device {
        return Err(Error::DeviceMismatch {
            op,
            lhs: format!("gpu:{}", lhs.device.ordinal()),
            rhs: format!("gpu:{} (another context)", rhs.device.ordinal()),
        });
    }
    Ok(())
}

pub(super) fn same_dtype(op: &'static str, lhs: DType, rhs: DType) -> Result<()> {
    if lhs != rhs {
        return Err(Error::DTypeMismatch { op, lhs, rhs });
    }
    Ok(())
}

fn same_shape(op: &'static str, lhs: &Layout, rhs: &Layout) -> Result<()> {
    if lhs.shape != rhs.shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: lhs.shape.clone(),
            rhs: rhs.shape.clone(),
            reason: "must have the same shape (broadcast first)".into(),
        });
    }
    Ok(())
}

/// The scalar of `binary_scalar` as the bits of the kernel's compute type (like the CPU: f32
/// for floats, `as i64` then wrapped for integers).
fn scalar_bits(dtype: DType, scalar: f64) -> u32 {
    match dtype {
        DType::F32 | DType::F16 | DType::F64 => (scalar as f32).to_bits(),
        DType::I32 => (scalar as i64) as i32 as u32,
        DType::U32 | DType::U8 | DType::Bool => (scalar as i64) as u32,
    }
}

impl GpuStorage {
    /// Elementwise unary op.
    pub fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<GpuStorage> {
        if !unary_supported(self.dtype, op) {
            return Err(unsupported(op.name(), self.dtype, &self.device));
        }
        check_view(op.name(), layout, self.len)?;
        if let Some(out) = fusion::defer(op.name(), (self, layout), Request::Unary(op), None)? {
            return Ok(out);
        }
        let numel = layout.numel();
        let out = GpuStorage::allocate(&self.device, op.name(), numel, self.dtype)?;
        let access = access(numel, &[layout]);
        let key = KernelKey::Unary {
            dtype: self.dtype,
            op,
            access,
        };
        let mut params = Params::new();
        if access == Access::Vector {
            params.push(numel / 4)?.push(layout.offset / 4)?;
            launch_vector(
                &self.device,
                &key,
                &params,
                &[self.raw()?, out.raw()?],
                numel,
            )?;
            return Ok(out);
        }
        params
            .push(numel)?
            .push(layout.rank())?
            .extend(&layout.shape)?
            .view(layout)?;
        GpuStorage::launch(
            &self.device,
            &key,
            &params,
            &[self.raw()?, out.raw()?],
            numel,
        )?;
        Ok(out)
    }

    /// Elementwise binary op on equal-shape views.
    pub fn binary(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<GpuStorage> {
        same_device(op.name(), self, rhs)?;
        same_dtype(op.name(), self.dtype, rhs.dtype)?;
        same_shape(op.name(), layout, rhs_layout)?;
        check_view(op.name(), layout, self.len)?;
        check_view(op.name(), rhs_layout, rhs.len)?;
        let request = Request::Binary(op);
        if let Some(out) =
            fusion::defer(op.name(), (self, layout), request, Some((rhs, rhs_layout)))?
        {
            return Ok(out);
        }
        let numel = layout.numel();
        let out_dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.dtype
        };
        let out = GpuStorage::allocate(&self.device, op.name(), numel, out_dtype)?;
        let access = access(numel, &[layout, rhs_layout]);
        let key = KernelKey::Binary {
            dtype: self.dtype,
            op,
            access,
        };
        let mut params = Params::new();
        if access == Access::Vector {
            params
                .push(numel / 4)?
                .push(layout.offset / 4)?
                .push(rhs_layout.offset / 4)?;
            let buffers = [self.raw()?, rhs.raw()?, out.raw()?];
            launch_vector(&self.device, &key, &params, &buffers, numel)?;
            return Ok(out);
        }
        params
            .push(numel)?
            .push(layout.rank())?
            .extend(&layout.shape)?
            .view(layout)?
            .view(rhs_layout)?;
        GpuStorage::launch(
            &self.device,
            &key,
            &params,
            &[self.raw()?, rhs.raw()?, out.raw()?],
            numel,
        )?;
        Ok(out)
    }

    /// `x op scalar`, or `scalar op x` when `scalar_on_left`.
    pub fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<GpuStorage> {
        check_view(op.name(), layout, self.len)?;
        if let Some(result) = self.unsigned_with_negative_scalar(layout, op, scalar, scalar_on_left)
        {
            return result;
        }
        let bits = scalar_bits(self.dtype, scalar);
        let request = Request::Scalar {
            op,
            on_left: scalar_on_left,
            bits,
        };
        if let Some(out) = fusion::defer(op.name(), (self, layout), request, None)? {
            return Ok(out);
        }
        let numel = layout.numel();
        let out_dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.dtype
        };
        let out = GpuStorage::allocate(&self.device, op.name(), numel, out_dtype)?;
        let access = access(numel, &[layout]);
        let key = KernelKey::BinaryScalar {
            dtype: self.dtype,
            op,
            scalar_on_left,
            access,
        };
        let mut params = Params::new();
        if access == Access::Vector {
            params
                .push(numel / 4)?
                .push(layout.offset / 4)?
                .push_bits(scalar_bits(self.dtype, scalar));
            launch_vector(
                &self.device,
                &key,
                &params,
                &[self.raw()?, out.raw()?],
                numel,
            )?;
            return Ok(out);
        }
        params
            .push(numel)?
            .push(layout.rank())?
            .push_bits(scalar_bits(self.dtype, scalar))
            .extend(&layout.shape)?
            .view(layout)?;
        GpuStorage::launch(
            &self.device,
            &key,
            &params,
            &[self.raw()?, out.raw()?],
            numel,
        )?;
        Ok(out)
    }

    /// Unsigned data with a negative scalar. The CPU computes integers in i64, so it compares
    /// with the negative number itself, while a u32 kernel would see its wrapped bits. Wrapping
    /// arithmetic (add, sub, mul, `scalar ** x`) agrees either way; the other ops have results
    /// that follow from `x >= 0 > scalar` and are built here. `None`: use the kernel.
    fn unsigned_with_negative_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        on_left: bool,
    ) -> Option<Result<GpuStorage>> {
        let s = scalar as i64;
        let unsigned = matches!(self.dtype, DType::U32 | DType::U8 | DType::Bool);
        if !unsigned || s >= 0 {
            return None;
        }
        let numel = layout.numel();
        let truth = |value: bool| {
            Some(GpuStorage::full(
                &self.device,
                numel,
                DType::Bool,
                value as u8 as f64,
            ))
        };
        // The CPU's `value as T` of an i64 (wrapping for U32/U8, non-zero test for Bool).
        let wrapped = |value: i64| match self.dtype {
            DType::U8 => (value as u8) as f64,
            DType::Bool => (value != 0) as u8 as f64,
            DType::U32 | DType::F32 | DType::F16 | DType::F64 | DType::I32 => (value as u32) as f64,
        };
        match op {
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => None,
            BinaryOp::Eq => truth(false),
            BinaryOp::Ne => truth(true),
            // `s < x` and `s <= x` hold when the scalar is on the left; `x < s` never does.
            BinaryOp::Lt | BinaryOp::Le => truth(on_left),
            BinaryOp::Gt | BinaryOp::Ge => truth(!on_left),
            BinaryOp::Maximum => Some(self.copy_strided(layout)),
            BinaryOp::Minimum => Some(GpuStorage::full(
                &self.device,
                numel,
                self.dtype,
                wrapped(s),
            )),
            BinaryOp::Pow if on_left => None,
            // A negative exponent gives 0 in integer arithmetic.
            BinaryOp::Pow => Some(GpuStorage::full(&self.device, numel, self.dtype, 0.0)),
            BinaryOp::Div => {
                // Truncating division: x / s = -(x / |s|) and s / x = -(|s| / x), then wrapped.
                let magnitude = s.unsigned_abs();
                if magnitude > u32::MAX as u64 {
                    return if on_left {
                        None
                    } else {
                        Some(GpuStorage::full(&self.device, numel, self.dtype, 0.0))
                    };
                }
                let quotient =
                    match self.binary_scalar(layout, BinaryOp::Div, magnitude as f64, on_left) {
                        Ok(quotient) => quotient,
                        Err(error) => return Some(Err(error)),
                    };
                if self.dtype == DType::Bool {
                    // Only zero versus non-zero matters, which negation keeps.
                    return Some(Ok(quotient));
                }
                Some(quotient.unary(&Layout::contiguous(&[numel]), UnaryOp::Neg))
            }
        }
    }

    /// `self ? on_true : on_false` elementwise (`self` of any dtype; non-zero is true).
    pub fn where_select(
        &self,
        layout: &Layout,
        on_true: &GpuStorage,
        true_layout: &Layout,
        on_false: &GpuStorage,
        false_layout: &Layout,
    ) -> Result<GpuStorage> {
        same_device("where", self, on_true)?;
        same_device("where", self, on_false)?;
        same_dtype("where", on_true.dtype, on_false.dtype)?;
        same_shape("where", layout, true_layout)?;
        same_shape("where", layout, false_layout)?;
        check_view("where", layout, self.len)?;
        check_view("where", true_layout, on_true.len)?;
        check_view("where", false_layout, on_false.len)?;
        let numel = layout.numel();
        let out = GpuStorage::allocate(&self.device, "where", numel, on_true.dtype)?;
        let mut params = Params::new();
        params
            .push(numel)?
            .push(layout.rank())?
            .extend(&layout.shape)?
            .view(layout)?
            .view(true_layout)?
            .view(false_layout)?;
        let key = KernelKey::Where {
            condition: self.dtype,
            dtype: on_true.dtype,
            // `where` has no vectorized kernel: dense is the best it gets.
            access: match access(numel, &[layout, true_layout, false_layout]) {
                Access::Strided => Access::Strided,
                Access::Contiguous | Access::Vector => Access::Contiguous,
            },
        };
        GpuStorage::launch(
            &self.device,
            &key,
            &params,
            &[self.raw()?, on_true.raw()?, on_false.raw()?, out.raw()?],
            numel,
        )?;
        Ok(out)
    }

    /// Reduce over `dims` (keepdim-shaped output; arg reductions take one dim, return I32).
    pub fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<GpuStorage> {
        if self.dtype == DType::Bool {
            return Err(unsupported(op.name(), self.dtype, &self.device));
        }
        check_view(op.name(), layout, self.len)?;
        if let Some(&bad) = dims.iter().find(|&&d| d >= layout.rank()) {
            return Err(Error::InvalidShape {
                op: op.name(),
                shape: layout.shape.clone(),
                message: format!("dim {bad} is out of range"),
            });
        }
        if op.is_arg() && dims.len() != 1 {
            return Err(Error::invalid(
                op.name(),
                "argmax/argmin reduce exactly one dim",
            ));
        }
        let kept: Vec<usize> = (0..layout.rank()).filter(|d| !dims.contains(d)).collect();
        let count: usize = dims.iter().map(|&d| layout.shape[d]).product();
        let outputs: usize = kept.iter().map(|&d| layout.shape[d]).product();
        let out_dtype = if op.is_arg() { DType::I32 } else { self.dtype };
        if count == 0 && !dims.is_empty() {
            if op != ReduceOp::Sum {
                return Err(Error::InvalidShape {
                    op: op.name(),
                    shape: layout.shape.clone(),
                    message: "cannot reduce over an empty dim (no identity for this reduction)"
                        .into(),
                });
            }
            return GpuStorage::full(&self.device, outputs, out_dtype, 0.0);
        }
        // Few outputs with many elements each: split each output over several workgroups and
        // reduce the partial results in a second pass. Only where partials lose nothing (f16
        // partial sums would be rounded to f16; arg reductions need their indices).
        let splittable =
            matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min) && self.dtype != DType::F16;
        let chunks = if splittable && outputs < 256 && count >= 1 << 16 {
            count.div_ceil(1 << 15).min(1024)
        } else {
            1
        };
        let out = GpuStorage::allocate(&self.device, op.name(), outputs * chunks, out_dtype)?;
        if outputs == 0 {
            return Ok(out);
        }
        let mut params = Params::new();
        params
            .push(outputs)?
            .push(count)?
            .push(kept.len())?
            .push(dims.len())?
            .push(layout.offset)?
            .push(chunks)?
            .push(count.div_ceil(chunks))?;
        for &d in &kept {
            params.push(layout.shape[d])?;
        }
        for &d in &kept {
            params.push(layout.strides[d])?;
        }
        for &d in dims {
            params.push(layout.shape[d])?;
        }
        for &d in dims {
            params.push(layout.strides[d])?;
        }
        // One workgroup per (output, chunk).
        let context: &GpuContext = self.device.context();
        let workgroups = u32::try_from(outputs * chunks)
            .map_err(|_| Error::invalid(op.name(), "too many outputs"))?;
        let key = KernelKey::Reduce {
            dtype: self.dtype,
            op,
        };
        context.dispatch(
            &key,
            params.words(),
            &[self.raw()?, out.raw()?],
            context.grid(workgroups),
        )?;
        if chunks > 1 {
            return out.reduce(&Layout::contiguous(&[outputs, chunks]), op, &[1]);
        }
        Ok(out)
    }

    /// `[batch, m, k] x [batch, k, n] -> [batch, m, n]` (batch strides may be 0).
    pub fn matmul(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
    ) -> Result<GpuStorage> {
        let (batch, m) = (
            layout.shape.first().copied().unwrap_or(0),
            layout.shape.get(1).copied().unwrap_or(0),
        );
        let n = rhs_layout.shape.get(2).copied().unwrap_or(0);
        // Tensor cores where they apply; a driver that refuses the (experimental) kernel
        // turns them off for this device and the regular kernels take over.
        let coop = &self.device.context().coop;
        if let Some(variant) = coop.key_for(self.dtype, layout, rhs_layout) {
            let key = KernelKey::MatmulCoop {
                variant,
                emulated: false,
            };
            match self.matmul_with(layout, rhs, rhs_layout, key) {
                Err(error @ Error::Shader { .. }) => coop.disable(&error),
                result => return result,
            }
        }
        let key = if self.dtype.is_float() && prefers_large_tile(batch, m, n) {
            KernelKey::MatmulLarge {
                dtype: self.dtype,
                aligned: aligned_applies(self.dtype, layout, rhs_layout),
            }
        } else {
            KernelKey::Matmul { dtype: self.dtype }
        };
        self.matmul_with(layout, rhs, rhs_layout, key)
    }

    /// `matmul` with a chosen kernel (`Matmul`, for floats `MatmulLarge`, for F16
    /// `MatmulCoop` where `CoopSupport::allows` it).
    pub(crate) fn matmul_with(
        &self,
        layout: &Layout,
        rhs: &GpuStorage,
        rhs_layout: &Layout,
        key: KernelKey,
    ) -> Result<GpuStorage> {
        same_device("matmul", self, rhs)?;
        same_dtype("matmul", self.dtype, rhs.dtype)?;
        if self.dtype == DType::Bool {
            return Err(unsupported("matmul", self.dtype, &self.device));
        }
        if layout.rank() != 3
            || rhs_layout.rank() != 3
            || layout.shape[0] != rhs_layout.shape[0]
            || layout.shape[2] != rhs_layout.shape[1]
        {
            return Err(Error::ShapeMismatch {
                op: "matmul",
                lhs: layout.shape.clone(),
                rhs: rhs_layout.shape.clone(),
                reason: "must be [batch, m, k] and [batch, k, n]".into(),
            });
        }
        check_view("matmul", layout, self.len)?;
        check_view("matmul", rhs_layout, rhs.len)?;
        // The aligned kernel has no bounds checks: it must only run where its predicate holds.
        if let KernelKey::MatmulLarge { aligned: true, .. } = key {
            if !aligned_applies(self.dtype, layout, rhs_layout) {
                return Err(Error::invalid(
                    "matmul",
                    "the aligned kernel needs row-major operands, m and n multiples of 128 and aligned k, offsets and batch strides",
                ));
            }
        }
        // So do the cooperative-matrix kernels, which also need the device's support.
        if let KernelKey::MatmulCoop { variant, emulated } = key {
            let context = self.device.context();
            let operands = (self.dtype, layout, rhs_layout);
            if !context
                .coop
                .allows(variant, emulated, &context.limits, operands)
            {
                return Err(Error::invalid(
                    "matmul",
                    "the cooperative-matrix kernel needs a device with 16x16x16 f16 -> f32 cooperative matrices, F16 row-major operands, m and n multiples of 128, aligned k, offsets and batch strides",
                ));
            }
        }
        let (batch, m, k, n) = (
            layout.shape[0],
            layout.shape[1],
            layout.shape[2],
            rhs_layout.shape[2],
        );
        let out = GpuStorage::allocate(&self.device, "matmul", batch * m * n, self.dtype)?;
        if batch * m * n == 0 {
            return Ok(out);
        }
        let mut params = Params::new();
        params
            .extend(&[batch, m, n, k])?
            .view(layout)?
            .view(rhs_layout)?;
        let context = self.device.context();
        let max = context.limits.max_compute_workgroups_per_dimension as usize;
        let tile = match key {
            KernelKey::MatmulLarge { .. } => LARGE_TILE,
            KernelKey::MatmulCoop { .. } => COOP_TILE,
            _ => 64,
        };
        let (tiles_n, tiles_m) = (n.div_ceil(tile), m.div_ceil(tile));
        if tiles_n > max || tiles_m > max {
            return Err(Error::invalid(
                "matmul",
                format!("a {m}x{n} output needs more than {max} tiles per dimension; split it"),
            ));
        }
        // The kernels loop over batches (grid-stride in z), so any batch count fits the grid.
        let grid = (tiles_n as u32, tiles_m as u32, batch.min(max) as u32);
        context.dispatch(
            &key,
            params.words(),
            &[self.raw()?, rhs.raw()?, out.raw()?],
            grid,
        )?;
        if let KernelKey::MatmulCoop {
            emulated: false, ..
        } = key
        {
            context.coop.count();
        }
        Ok(out)
    }

    /// Copy the view into `destination`'s view `destination_layout`, converting to its dtype.
    fn convert_into(
        &self,
        layout: &Layout,
        destination: &GpuStorage,
        destination_layout: &Layout,
    ) -> Result<()> {
        let numel = layout.numel();
        let access = access(numel, &[layout, destination_layout]);
        // Dense same-type copies deliberately stay kernels: `copy_buffer_to_buffer` measured
        // 729 GB/s on an H200 through Vulkan, below the old scalar copy kernel (1,171 GB/s).
        let key = KernelKey::Copy {
            from: self.dtype,
            to: destination.dtype,
            access,
        };
        let mut params = Params::new();
        if access == Access::Vector {
            params
                .push(numel / 4)?
                .push(layout.offset / 4)?
                .push(destination_layout.offset / 4)?;
            let buffers = [self.raw()?, destination.raw()?];
            return launch_vector(&self.device, &key, &params, &buffers, numel);
        }
        params
            .push(numel)?
            .push(layout.rank())?
            .extend(&layout.shape)?
            .view(layout)?
            .view(destination_layout)?;
        GpuStorage::launch(
            &self.device,
            &key,
            &params,
            &[self.raw()?, destination.raw()?],
            numel,
        )
    }

    /// A contiguous copy of the view.
    pub fn copy_strided(&self, layout: &Layout) -> Result<GpuStorage> {
        self.cast(layout, self.dtype)
    }

    /// Copy the view into the view `dst_layout` of `dst` (same shape and dtype).
    pub fn copy_into(
        &self,
        layout: &Layout,
        dst: &mut GpuStorage,
        dst_layout: &Layout,
    ) -> Result<()> {
        same_device("copy", self, dst)?;
        same_dtype("copy", self.dtype, dst.dtype)?;
        same_shape("copy", layout, dst_layout)?;
        check_view("copy", layout, self.len)?;
        check_view("copy", dst_layout, dst.len)?;
        self.convert_into(layout, dst, dst_layout)
    }

    /// Convert the view to `dtype` (contiguous output; float to integer saturates, NaN -> 0).
    pub fn cast(&self, layout: &Layout, dtype: DType) -> Result<GpuStorage> {
        check_view("cast", layout, self.len)?;
        let out = GpuStorage::allocate(&self.device, "cast", layout.numel(), dtype)?;
        self.convert_into(layout, &out, &Layout::contiguous(&layout.shape))?;
        Ok(out)
    }
}

/// How a kernel over `numel` elements may address `layouts`: vec4 when all are dense, start at
/// a multiple of 4 elements and `numel` is a multiple of 4; dense; or strided.
fn access(numel: usize, layouts: &[&Layout]) -> Access {
    if !layouts.iter().all(|layout| is_dense(layout)) {
        return Access::Strided;
    }
    if numel > 0
        && numel.is_multiple_of(4)
        && layouts.iter().all(|layout| layout.offset.is_multiple_of(4))
    {
        Access::Vector
    } else {
        Access::Contiguous
    }
}

/// Record a vectorized kernel over `numel` elements (`numel / 4` vec4s, grid-stride loop).
fn launch_vector(
    device: &GpuDevice,
    key: &KernelKey,
    params: &Params,
    buffers: &[&wgpu::Buffer],
    numel: usize,
) -> Result<()> {
    let vectors = numel / 4;
    if vectors == 0 {
        return Ok(());
    }
    // Each invocation handles `UNROLL` vectors per trip (`vector.rs`).
    let workgroups = vectors
        .div_ceil(256 * super::vector::UNROLL)
        .min(MAX_WORKGROUPS as usize) as u32;
    device
        .context()
        .dispatch(key, params.words(), buffers, (workgroups, 1, 1))
}
