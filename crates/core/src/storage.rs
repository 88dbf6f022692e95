//! `Storage` is the data behind a tensor: a CPU vector or a GPU buffer. This is the only place
//! that matches on backends. Every primitive is one call of `dispatch`, which records the op
//! for the profiler, checks that the operands live on one device and that their dtypes agree
//! (or that indices are integers), then runs the backend's method of the contract (one trait
//! per family of primitives, with each primitive's rules, in `backend/contract/`). Creation,
//! transfers, fused attention and user kernels match on the device or the operands directly.
//! The dispatch of some families lives beside it, in `storage/`: `convolution.rs`,
//! `normalization.rs`, `quantized.rs` and `in_place.rs` (the in-place updates).
//!
//! BF16 is computed in f32 here, once for every primitive and both backends: `dispatch`
//! widens each BF16 operand's storage to F32 (exactly), runs the primitive's F32 kernel, and
//! rounds a float result back to BF16 (to nearest even). Only copies, casts and creation
//! handle BF16 data directly (the GPU's packed 16-bit conversions, `elementwise/bfloat16.rs`).

use crate::backend::contract::{
    Attention, Copying, Creation, CustomKernels, Elementwise, Indexing, LinearAlgebra, Pooling,
    RandomNumbers, Reduction, Scan, Sorting,
};
use crate::backend::cpu::CpuStorage;
use crate::backend::cpu::HostBuffer;
use crate::backend::gpu::{GpuPendingRead, GpuStaging, GpuStorage};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::geometry::{AttentionShape, Window};
use crate::layout::{Layout, MemoryFormat};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::profiler;
use crate::random::Distribution;

/// Tensor data on one device.
#[derive(Debug)]
pub enum Storage {
    Cpu(CpuStorage),
    Gpu(GpuStorage),
}

impl From<CpuStorage> for Storage {
    /// CPU data as a storage.
    fn from(cpu: CpuStorage) -> Storage {
        Storage::Cpu(cpu)
    }
}

impl Storage {
    /// The address of a CPU storage's first element (`Tensor::host_storage_address`), or
    /// `None` on a GPU.
    pub(crate) fn host_address(&self) -> Option<usize> {
        match self {
            Storage::Cpu(cpu) => Some(cpu.address()),
            Storage::Gpu(_) => None,
        }
    }

    /// A CPU storage over foreign memory (`Tensor::from_host_memory`).
    ///
    /// # Safety
    /// As `Tensor::from_host_memory`.
    pub(crate) unsafe fn from_host_memory(
        address: usize,
        dtype: DType,
        count: usize,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<Storage> {
        // SAFETY: the caller's contract, passed on.
        unsafe { CpuStorage::from_foreign(address, dtype, count, owner).map(Storage::Cpu) }
    }
}

/// Bytes held by a storage (for the profiler).
fn storage_bytes(storage: &Storage) -> u64 {
    (storage.len() * storage.dtype().size_in_bytes()) as u64
}

/// What `dispatch` checks before a primitive runs, and what it records.
struct Call<'a, const N: usize> {
    /// The op's name (profiler events and errors).
    op: &'static str,
    /// The storage operands and their views; the first decides the device.
    operands: [(&'a Storage, &'a Layout); N],
    /// Positions of operands that must share one dtype.
    same_dtype: &'static [usize],
    /// Position of the operand holding indices (an integer dtype), if any.
    indices: Option<usize>,
    /// Position of the operand whose dtype the profiler records; a BF16 operand there makes
    /// a float result BF16 (see `dispatch`).
    profiled_dtype: usize,
    /// Whether the result is F32 whatever the operands' float dtype (batch-norm sums).
    f32_output: bool,
    /// Whether the backends move BF16 data themselves (copies and casts), instead of the call
    /// running in f32 on widened operands.
    moves_bfloat16: bool,
}

impl<'a, const N: usize> Call<'a, N> {
    /// A call with no dtype rule, profiled with the first operand's dtype.
    fn new(op: &'static str, operands: [(&'a Storage, &'a Layout); N]) -> Call<'a, N> {
        Call {
            op,
            operands,
            same_dtype: &[],
            indices: None,
            profiled_dtype: 0,
            f32_output: false,
            moves_bfloat16: false,
        }
    }

    /// The backends take BF16 operands as they are (copies and casts).
    fn moves_bfloat16(mut self) -> Self {
        self.moves_bfloat16 = true;
        self
    }

    /// The result is F32 for any float operands (not rounded back to BF16).
    fn f32_output(mut self) -> Self {
        self.f32_output = true;
        self
    }

    /// Whether this call runs in f32 on widened copies of its BF16 operands: any call with
    /// a BF16 operand but the copies and casts, which move BF16 data themselves.
    fn widens_bfloat16(&self) -> bool {
        !self.moves_bfloat16
            && self
                .operands
                .iter()
                .any(|(storage, _)| storage.dtype() == DType::BF16)
    }

    /// Require the operands at `positions` to share one dtype.
    fn same_dtype(mut self, positions: &'static [usize]) -> Self {
        self.same_dtype = positions;
        self
    }

    /// The operand at `position` holds indices.
    fn indices(mut self, position: usize) -> Self {
        self.indices = Some(position);
        self
    }

    /// Record the dtype of the operand at `position` (instead of the first).
    fn profiled_dtype(mut self, position: usize) -> Self {
        self.profiled_dtype = position;
        self
    }

    /// The device, dtype and index checks shared by every primitive.
    fn check(&self) -> Result<()> {
        let (first, _) = self.operands[0];
        for &(other, _) in &self.operands[1..] {
            check_same_device(self.op, first, other)?;
        }
        if let Some((&head, rest)) = self.same_dtype.split_first() {
            let lhs = self.operands[head].0.dtype();
            for &position in rest {
                let rhs = self.operands[position].0.dtype();
                if lhs != rhs {
                    return Err(Error::DTypeMismatch {
                        op: self.op,
                        lhs,
                        rhs,
                    });
                }
            }
        }
        if let Some(position) = self.indices {
            let dtype = self.operands[position].0.dtype();
            if !dtype.is_index() {
                return Err(Error::invalid(
                    self.op,
                    format!("indices must be an integer tensor, got {dtype}"),
                ));
            }
        }
        Ok(())
    }
}

/// `Err(DeviceMismatch)` unless `lhs` and `rhs` live on the same device (for GPUs: the same
/// opened context).
fn check_same_device(op: &'static str, lhs: &Storage, rhs: &Storage) -> Result<()> {
    let (left, right) = (lhs.device(), rhs.device());
    if left == right {
        return Ok(());
    }
    let (lhs, mut rhs) = (left.to_string(), right.to_string());
    if lhs == rhs {
        rhs.push_str(" (another context)");
    }
    Err(Error::DeviceMismatch { op, lhs, rhs })
}

/// The operands of one call, all on one backend.
enum Operands<'a, const N: usize> {
    Cpu([&'a CpuStorage; N]),
    Gpu([&'a GpuStorage; N]),
}

/// Split checked operands by backend (`check` already refused mixed devices).
fn operands<'a, const N: usize>(
    op: &'static str,
    storages: [&'a Storage; N],
) -> Result<Operands<'a, N>> {
    let mismatch = || Error::DeviceMismatch {
        op,
        lhs: storages[0].device().to_string(),
        rhs: "another device".into(),
    };
    match storages[0] {
        Storage::Cpu(_) => {
            let mut cpu = Vec::with_capacity(N);
            for storage in storages {
                match storage {
                    Storage::Cpu(s) => cpu.push(s),
                    Storage::Gpu(_) => return Err(mismatch()),
                }
            }
            cpu.try_into().map(Operands::Cpu).map_err(|_| mismatch())
        }
        Storage::Gpu(_) => {
            let mut gpu = Vec::with_capacity(N);
            for storage in storages {
                match storage {
                    Storage::Gpu(s) => gpu.push(s),
                    Storage::Cpu(_) => return Err(mismatch()),
                }
            }
            gpu.try_into().map(Operands::Gpu).map_err(|_| mismatch())
        }
    }
}

/// The operands' shapes and dtypes, for an error that names them: `[8, 64] float32, [8] int32`.
fn describe(operands: &[(&Storage, &Layout)]) -> String {
    operands
        .iter()
        .map(|(storage, layout)| format!("{:?} {}", layout.shape, storage.dtype()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Run one primitive: profile it, check its operands once, and call the backend. `run` is
/// given the operands of one backend; `both!` writes it once for both.
fn dispatch<const N: usize>(
    call: Call<'_, N>,
    cpu: impl FnOnce([&CpuStorage; N]) -> Result<CpuStorage>,
    gpu: impl FnOnce([&GpuStorage; N]) -> Result<GpuStorage>,
) -> Result<Storage> {
    let shapes: [&[usize]; N] = call.operands.map(|(_, layout)| layout.shape.as_slice());
    let (first, _) = call.operands[0];
    profiler::record(
        call.op,
        &shapes,
        call.operands[call.profiled_dtype].0.dtype(),
        &first.device(),
        storage_bytes,
        || {
            call.check()?;
            if call.widens_bfloat16() {
                return run_in_f32(&call, cpu, gpu);
            }
            match operands(call.op, call.operands.map(|(storage, _)| storage))? {
                Operands::Cpu(storages) => cpu(storages).map(Storage::Cpu),
                Operands::Gpu(storages) => gpu(storages)
                    .map(Storage::Gpu)
                    .map_err(|error| error.naming_op(call.op, || describe(&call.operands))),
            }
        },
    )
}

/// The whole of `storage` converted to `dtype` by its backend's cast (every layout over the
/// storage stays valid over the result).
fn cast_whole(storage: &Storage, dtype: DType) -> Result<Storage> {
    let whole = Layout::contiguous(&[storage.len()]);
    match storage {
        Storage::Cpu(cpu) => Copying::cast(cpu, &whole, dtype).map(Storage::Cpu),
        Storage::Gpu(gpu) => Copying::cast(gpu, &whole, dtype).map(Storage::Gpu),
    }
}

/// Run a checked call with BF16 operands in f32: each BF16 operand's storage widened whole
/// to F32 (exact; the call's views index it unchanged), the primitive run on those, and an
/// F32 result rounded to BF16 when the operand the result follows (`profiled_dtype`) is
/// BF16. Errors name BF16, not the F32 it ran in.
fn run_in_f32<const N: usize>(
    call: &Call<'_, N>,
    cpu: impl FnOnce([&CpuStorage; N]) -> Result<CpuStorage>,
    gpu: impl FnOnce([&GpuStorage; N]) -> Result<GpuStorage>,
) -> Result<Storage> {
    let as_bfloat16 = |error: Error| match error {
        Error::Unsupported {
            op,
            dtype: DType::F32,
            device,
            hint,
        } => Error::Unsupported {
            op,
            dtype: DType::BF16,
            device,
            hint,
        },
        other => other,
    };
    let mut widened: Vec<Option<Storage>> = Vec::with_capacity(N);
    for (storage, _) in &call.operands {
        widened.push(if storage.dtype() == DType::BF16 {
            Some(cast_whole(storage, DType::F32)?)
        } else {
            None
        });
    }
    let storages: [&Storage; N] = std::array::from_fn(|position| {
        widened[position]
            .as_ref()
            .unwrap_or(call.operands[position].0)
    });
    let result = match operands(call.op, storages)? {
        Operands::Cpu(storages) => cpu(storages).map(Storage::Cpu),
        Operands::Gpu(storages) => gpu(storages)
            .map(Storage::Gpu)
            .map_err(|error| error.naming_op(call.op, || describe(&call.operands))),
    }
    .map_err(as_bfloat16)?;
    let follows_bfloat16 = call.operands[call.profiled_dtype].0.dtype() == DType::BF16;
    if follows_bfloat16 && !call.f32_output && result.dtype() == DType::F32 {
        cast_whole(&result, DType::BF16)
    } else {
        Ok(result)
    }
}

/// `dispatch` of one contract method, written once for both backends:
/// `run!(call, |a, b| Family::method(a, layout, b, ...))` evaluates the body with the CPU
/// operands or the GPU operands bound to `a, b`.
macro_rules! run {
    ($call:expr, |$($operand:ident),+| $body:expr) => {
        dispatch($call, |[$($operand),+]| $body, |[$($operand),+]| $body)
    };
}

/// The moments an Adam step writes in place, as `Storage::adam_step` takes them.
pub(crate) use crate::backend::contract::AdamMoments;

// The normalization primitives' dispatch (after `run!`, which it uses).
mod convolution;
mod in_place;
mod normalization;
mod quantized;

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
            Device::Cpu => Ok(Storage::Cpu(Creation::full(&(), numel, dtype, value)?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(Creation::full(gpu, numel, dtype, value)?)),
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
        if dtype == DType::BF16 {
            // Computed in f32, then rounded (the GPU has no BF16 arithmetic).
            let wide = Storage::arange(device, start, step, numel, DType::F32)?;
            return cast_whole(&wide, DType::BF16);
        }
        match device {
            Device::Cpu => Ok(Storage::Cpu(Creation::arange(
                &(),
                start,
                step,
                numel,
                dtype,
            )?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(Creation::arange(
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
        if dtype == DType::BF16 {
            // The F32 draws rounded, the same numbers on every device.
            let wide = Storage::random(device, numel, DType::F32, distribution, seed, offset)?;
            return cast_whole(&wide, DType::BF16);
        }
        match device {
            Device::Cpu => Ok(Storage::Cpu(RandomNumbers::random(
                &(),
                numel,
                dtype,
                distribution,
                seed,
                offset,
            )?)),
            Device::Gpu(gpu) => Ok(Storage::Gpu(RandomNumbers::random(
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

    /// `values` as a storage on `device` (uploaded from the host for a GPU).
    pub fn from_vec<T: Element>(values: Vec<T>, device: &Device) -> Result<Storage> {
        Storage::Cpu(CpuStorage::from_vec(values)).to_device(device)
    }

    /// An empty host storage of no elements (what graph-edge twins hold).
    pub fn empty() -> Storage {
        Storage::Cpu(CpuStorage::U8(HostBuffer::from(Vec::new())))
    }

    /// The elements of the view `layout` as `T` (the storage's own dtype), in row-major
    /// order: CPU data read in place, GPU data after making the view contiguous on the device
    /// and reading back only those bytes (this blocks).
    pub fn to_vec<T: Element>(&self, layout: &Layout) -> Result<Vec<T>> {
        self.with_host_view(layout, |cpu, layout| cpu.to_vec(layout))
    }

    /// The elements of the view `layout` converted to f64, in row-major order (a GPU view is
    /// read back like [`Storage::to_vec`]'s).
    pub fn to_f64_vec(&self, layout: &Layout) -> Result<Vec<f64>> {
        self.with_host_view(layout, |cpu, layout| cpu.to_f64_vec(layout))
    }

    /// Run `read` on host data for the view `layout` (see [`Storage::to_vec`]).
    fn with_host_view<R>(
        &self,
        layout: &Layout,
        read: impl FnOnce(&CpuStorage, &Layout) -> Result<R>,
    ) -> Result<R> {
        match self {
            Storage::Cpu(cpu) => read(cpu, layout),
            Storage::Gpu(_) => {
                let host = self.copy_strided(layout)?.to_cpu()?;
                read(&host, &Layout::contiguous(&layout.shape))
            }
        }
    }

    /// Start copying the view `layout` to the host without waiting: CPU data is read now; a
    /// GPU view (made contiguous on the device first unless it is the whole storage) is
    /// queued after the work recorded so far ([`HostRead::finish`] waits for that copy alone).
    pub fn start_host_read(&self, layout: &Layout) -> Result<HostRead> {
        Ok(match self {
            Storage::Cpu(cpu) => HostRead::Ready(cpu.copy_strided(layout)?),
            Storage::Gpu(gpu) => {
                let exact =
                    layout.is_contiguous() && layout.offset == 0 && gpu.len() == layout.numel();
                if exact {
                    HostRead::Gpu(gpu.start_read()?)
                } else {
                    match self.copy_strided(layout)? {
                        Storage::Gpu(copy) => HostRead::Gpu(copy.start_read()?),
                        Storage::Cpu(copy) => HostRead::Ready(copy),
                    }
                }
            }
        })
    }

    /// The whole storage as a CPU storage (a readback for GPU data: this blocks).
    pub fn to_cpu(&self) -> Result<CpuStorage> {
        match self {
            Storage::Cpu(s) => Ok(s.clone()),
            Storage::Gpu(s) => s.to_cpu(),
        }
    }

    /// Elementwise unary op (`Elementwise::unary`).
    pub fn unary(&self, layout: &Layout, op: UnaryOp) -> Result<Storage> {
        run!(Call::new(op.name(), [(self, layout)]), |x| {
            Elementwise::unary(x, layout, op)
        })
    }

    /// Elementwise binary op on equal-shape layouts (`Elementwise::binary`).
    pub fn binary(
        &self,
        layout: &Layout,
        rhs: &Storage,
        rhs_layout: &Layout,
        op: BinaryOp,
    ) -> Result<Storage> {
        let call = Call::new(op.name(), [(self, layout), (rhs, rhs_layout)]).same_dtype(&[0, 1]);
        run!(call, |l, r| Elementwise::binary(
            l, layout, r, rhs_layout, op
        ))
    }

    /// `x op scalar`, or `scalar op x` when `scalar_on_left` (`Elementwise::binary_scalar`).
    pub fn binary_scalar(
        &self,
        layout: &Layout,
        op: BinaryOp,
        scalar: f64,
        scalar_on_left: bool,
    ) -> Result<Storage> {
        run!(Call::new(op.name(), [(self, layout)]), |x| {
            Elementwise::binary_scalar(x, layout, op, scalar, scalar_on_left)
        })
    }

    /// `cond ? on_true : on_false` elementwise; `self` is the condition
    /// (`Elementwise::where_select`).
    pub fn where_select(
        &self,
        layout: &Layout,
        on_true: &Storage,
        true_layout: &Layout,
        on_false: &Storage,
        false_layout: &Layout,
    ) -> Result<Storage> {
        let operands = [
            (self, layout),
            (on_true, true_layout),
            (on_false, false_layout),
        ];
        let call = Call::new("where", operands)
            .same_dtype(&[1, 2])
            .profiled_dtype(1);
        run!(call, |c, t, f| Elementwise::where_select(
            c,
            layout,
            t,
            true_layout,
            f,
            false_layout
        ))
    }

    /// Reduction over `dims`, keepdim output (`Reduction::reduce`).
    pub fn reduce(&self, layout: &Layout, op: ReduceOp, dims: &[usize]) -> Result<Storage> {
        run!(Call::new(op.name(), [(self, layout)]), |x| {
            Reduction::reduce(x, layout, op, dims)
        })
    }

    /// Batched matrix product of rank-3 layouts (`LinearAlgebra::matmul`).
    pub fn matmul(&self, layout: &Layout, rhs: &Storage, rhs_layout: &Layout) -> Result<Storage> {
        let call = Call::new("matmul", [(self, layout), (rhs, rhs_layout)]).same_dtype(&[0, 1]);
        run!(call, |l, r| LinearAlgebra::matmul(l, layout, r, rhs_layout))
    }

    /// 2-D max pooling of `[n, c, h, w]` into `format` (`Pooling::max_pool2d`).
    pub(crate) fn max_pool2d(
        &self,
        layout: &Layout,
        window: &Window,
        format: MemoryFormat,
    ) -> Result<Storage> {
        run!(Call::new("max_pool2d", [(self, layout)]), |x| {
            Pooling::max_pool2d(x, layout, window, format)
        })
    }

    /// Max pooling's input gradient; `self` is the forward's input, `output` its output,
    /// `grad` the output gradient (`Pooling::max_pool2d_backward`).
    pub(crate) fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Storage,
        output_layout: &Layout,
        grad: &Storage,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Storage> {
        let operands = [(self, layout), (output, output_layout), (grad, grad_layout)];
        let call = Call::new("max_pool2d_backward", operands).same_dtype(&[0, 1, 2]);
        run!(call, |x, y, g| Pooling::max_pool2d_backward(
            x,
            layout,
            y,
            output_layout,
            g,
            grad_layout,
            window
        ))
    }

    /// A contiguous copy of the view (`Copying::copy_strided`).
    pub fn copy_strided(&self, layout: &Layout) -> Result<Storage> {
        run!(Call::new("copy", [(self, layout)]).moves_bfloat16(), |x| {
            Copying::copy_strided(x, layout)
        })
    }

    /// The view converted to another dtype (`Copying::cast`).
    pub fn cast(&self, layout: &Layout, dtype: DType) -> Result<Storage> {
        run!(Call::new("cast", [(self, layout)]).moves_bfloat16(), |x| {
            Copying::cast(x, layout, dtype)
        })
    }

    /// Entries of `dim` picked by an index vector (`Indexing::index_select`).
    pub fn index_select(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let operands = [(self, layout), (indices, indices_layout)];
        let call = Call::new("index_select", operands).indices(1);
        run!(call, |x, i| Indexing::index_select(
            x,
            layout,
            i,
            indices_layout,
            dim
        ))
    }

    /// [`Storage::index_select`] counting signed indices in `[-size, 0)` from the end
    /// (`Indexing::index_select_wrapping`).
    pub fn index_select_wrapping(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let operands = [(self, layout), (indices, indices_layout)];
        let call = Call::new("index_select", operands).indices(1);
        run!(call, |x, i| Indexing::index_select_wrapping(
            x,
            layout,
            i,
            indices_layout,
            dim
        ))
    }

    /// `out = self[indices]` along `dim`, element by element (`Indexing::gather`).
    pub fn gather(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let operands = [(self, layout), (indices, indices_layout)];
        let call = Call::new("gather", operands).indices(1);
        run!(call, |x, i| Indexing::gather(
            x,
            layout,
            i,
            indices_layout,
            dim
        ))
    }

    /// Each row's weighted class score and weight (`Indexing::class_pick`).
    pub fn class_pick(
        &self,
        layout: &Layout,
        (target, target_layout): (&Storage, &Layout),
        weight: Option<(&Storage, &Layout)>,
        ignore: Option<i64>,
    ) -> Result<Storage> {
        const OP: &str = "class_pick";
        match weight {
            None => {
                let call = Call::new(OP, [(self, layout), (target, target_layout)]).indices(1);
                run!(call, |x, t| Indexing::class_pick(
                    x,
                    layout,
                    (t, target_layout),
                    None,
                    ignore
                ))
            }
            Some((weight, weight_layout)) => {
                let operands = [
                    (self, layout),
                    (target, target_layout),
                    (weight, weight_layout),
                ];
                let call = Call::new(OP, operands).indices(1).same_dtype(&[0, 2]);
                run!(call, |x, t, w| Indexing::class_pick(
                    x,
                    layout,
                    (t, target_layout),
                    Some((w, weight_layout)),
                    ignore
                ))
            }
        }
    }

    /// The dense gradient of [`Storage::class_pick`]'s picked row
    /// (`Indexing::class_pick_backward`); `self` holds the `[n]` gradient.
    pub fn class_pick_backward(
        &self,
        layout: &Layout,
        (target, target_layout): (&Storage, &Layout),
        weight: Option<(&Storage, &Layout)>,
        ignore: Option<i64>,
        classes: usize,
    ) -> Result<Storage> {
        const OP: &str = "class_pick_backward";
        match weight {
            None => {
                let call = Call::new(OP, [(self, layout), (target, target_layout)]).indices(1);
                run!(call, |g, t| Indexing::class_pick_backward(
                    g,
                    layout,
                    (t, target_layout),
                    None,
                    ignore,
                    classes
                ))
            }
            Some((weight, weight_layout)) => {
                let operands = [
                    (self, layout),
                    (target, target_layout),
                    (weight, weight_layout),
                ];
                let call = Call::new(OP, operands).indices(1).same_dtype(&[0, 2]);
                run!(call, |g, t, w| Indexing::class_pick_backward(
                    g,
                    layout,
                    (t, target_layout),
                    Some((w, weight_layout)),
                    ignore,
                    classes
                ))
            }
        }
    }

    /// A copy of `self` with `src` added at `indices` along `dim`
    /// (`Indexing::scatter_add`).
    pub fn scatter_add(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        src: &Storage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let operands = [(self, layout), (indices, indices_layout), (src, src_layout)];
        let call = Call::new("scatter_add", operands)
            .same_dtype(&[0, 2])
            .indices(1);
        run!(call, |b, i, s| Indexing::scatter_add(
            b,
            layout,
            i,
            indices_layout,
            s,
            src_layout,
            dim
        ))
    }

    /// A copy of `self` with `src` added at the 1-D `indices` along `dim`, deterministic on
    /// every backend (`Indexing::index_add`).
    pub fn index_add(
        &self,
        layout: &Layout,
        indices: &Storage,
        indices_layout: &Layout,
        src: &Storage,
        src_layout: &Layout,
        dim: usize,
    ) -> Result<Storage> {
        let operands = [(self, layout), (indices, indices_layout), (src, src_layout)];
        let call = Call::new("index_add", operands)
            .same_dtype(&[0, 2])
            .indices(1);
        run!(call, |b, i, s| Indexing::index_add(
            b,
            layout,
            i,
            indices_layout,
            s,
            src_layout,
            dim
        ))
    }

    /// The positions along `dim` that sort each row, stable (`Sorting::argsort`).
    pub fn argsort(&self, layout: &Layout, dim: usize, descending: bool) -> Result<Storage> {
        run!(
            Call::new("argsort", [(self, layout)]),
            |x| Sorting::argsort(x, layout, dim, descending)
        )
    }

    /// The inclusive running sum along `dim`, contiguous (`Scan::cumsum`).
    pub fn cumsum(&self, layout: &Layout, dim: usize) -> Result<Storage> {
        run!(Call::new("cumsum", [(self, layout)]), |x| Scan::cumsum(
            x, layout, dim
        ))
    }

    /// Whether the fused attention kernels cover this call on `device` (`Attention`; never on
    /// the CPU, whose reference is the composite in `tensor/attention.rs`).
    pub fn attention_supported(device: &Device, dtype: DType, shape: &AttentionShape) -> bool {
        match device {
            Device::Cpu => CpuStorage::attention_supported(&(), dtype, shape),
            Device::Gpu(gpu) => GpuStorage::attention_supported(gpu, dtype, shape),
        }
    }

    /// Whether the fused forward of this call on `device` reads its query, key and value
    /// through views ([`Storage::attention_forward_views`]): where the scalar forward runs
    /// (the cooperative one reads dense operands).
    pub fn attention_forward_takes_views(
        device: &Device,
        dtype: DType,
        shape: &AttentionShape,
    ) -> bool {
        match device {
            Device::Cpu => CpuStorage::attention_forward_takes_views(&(), dtype, shape),
            Device::Gpu(gpu) => GpuStorage::attention_forward_takes_views(gpu, dtype, shape),
        }
    }

    /// The fused forward reading the query (`self`), key and value through `[batch, heads,
    /// rows, width]` views whose rows are contiguous and whose offsets and strides are
    /// multiples of 4 (an inference call's heads split from a stacked projection, without
    /// dense copies); otherwise as [`Storage::attention_forward`].
    #[allow(clippy::too_many_arguments)]
    pub fn attention_forward_views(
        &self,
        query_layout: &Layout,
        key: &Storage,
        key_layout: &Layout,
        value: &Storage,
        value_layout: &Layout,
        key_bias: Option<&Storage>,
        shape: &AttentionShape,
    ) -> Result<(Storage, Storage)> {
        const OP: &str = "scaled_dot_product_attention";
        let query_shape = [shape.batch_heads, shape.query_length, shape.head_dim];
        profiler::record(
            OP,
            &[&query_shape],
            self.dtype(),
            &self.device(),
            |(output, _): &(Storage, Storage)| storage_bytes(output),
            || match operands(OP, [self, key, value])? {
                Operands::Cpu([q, k, v]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_cpu)?;
                    let views = (query_layout, key_layout, value_layout);
                    let pair =
                        q.attention_forward_views(views.0, k, views.1, v, views.2, bias, shape)?;
                    Ok((Storage::Cpu(pair.0), Storage::Cpu(pair.1)))
                }
                Operands::Gpu([q, k, v]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_gpu)?;
                    let views = (query_layout, key_layout, value_layout);
                    let pair =
                        q.attention_forward_views(views.0, k, views.1, v, views.2, bias, shape)?;
                    Ok((Storage::Gpu(pair.0), Storage::Gpu(pair.1)))
                }
            },
        )
    }

    /// Fused attention forward on dense storages (`Attention::attention_forward`), with the
    /// f32 key bias where `shape.key_bias_group` is set: the output and the f32 row
    /// log-sum-exp. A backend without the kernel (the CPU) refuses: `attention_supported` is
    /// false there.
    pub fn attention_forward(
        &self,
        key: &Storage,
        value: &Storage,
        key_bias: Option<&Storage>,
        shape: &AttentionShape,
    ) -> Result<(Storage, Storage)> {
        const OP: &str = "scaled_dot_product_attention";
        let query_shape = [shape.batch_heads, shape.query_length, shape.head_dim];
        profiler::record(
            OP,
            &[&query_shape],
            self.dtype(),
            &self.device(),
            |(output, _): &(Storage, Storage)| storage_bytes(output),
            || match operands(OP, [self, key, value])? {
                Operands::Cpu([q, k, v]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_cpu)?;
                    let (output, logsumexp) = q.attention_forward(k, v, bias, shape)?;
                    Ok((Storage::Cpu(output), Storage::Cpu(logsumexp)))
                }
                Operands::Gpu([q, k, v]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_gpu)?;
                    let (output, logsumexp) = q.attention_forward(k, v, bias, shape)?;
                    Ok((Storage::Gpu(output), Storage::Gpu(logsumexp)))
                }
            },
        )
    }

    /// Fused attention backward on dense storages: the query's gradient, and one storage
    /// holding the key's gradient followed by the value's.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(
        &self,
        key: &Storage,
        value: &Storage,
        output: &Storage,
        logsumexp: &Storage,
        grad_output: &Storage,
        key_bias: Option<&Storage>,
        shape: &AttentionShape,
    ) -> Result<(Storage, Storage)> {
        const OP: &str = "scaled_dot_product_attention_backward";
        let query_shape = [shape.batch_heads, shape.query_length, shape.head_dim];
        let all = [self, key, value, output, logsumexp, grad_output];
        profiler::record(
            OP,
            &[&query_shape],
            self.dtype(),
            &self.device(),
            |(q, kv): &(Storage, Storage)| storage_bytes(q) + storage_bytes(kv),
            || match operands(OP, all)? {
                Operands::Cpu([q, k, v, o, lse, g]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_cpu)?;
                    let (dq, dkv) = q.attention_backward(k, v, o, lse, g, bias, shape)?;
                    Ok((Storage::Cpu(dq), Storage::Cpu(dkv)))
                }
                Operands::Gpu([q, k, v, o, lse, g]) => {
                    let bias = optional_operand(OP, self, key_bias, Storage::as_gpu)?;
                    let (dq, dkv) = q.attention_backward(k, v, o, lse, g, bias, shape)?;
                    Ok((Storage::Gpu(dq), Storage::Gpu(dkv)))
                }
            },
        )
    }

    /// A user's WGSL kernel over `numel` F32 outputs (`CustomKernels`; `custom_op.rs` passes
    /// dense F32 inputs starting at element 0). Backends without user kernels (the CPU)
    /// refuse.
    pub(crate) fn custom_kernel(
        device: &Device,
        source: &str,
        inputs: &[&Storage],
        numel: usize,
    ) -> Result<Storage> {
        const OP: &str = "custom kernel";
        match device {
            Device::Cpu => {
                let inputs = same_backend(OP, device, inputs, Storage::as_cpu)?;
                CpuStorage::custom_kernel(&(), source, &inputs, numel).map(Storage::Cpu)
            }
            Device::Gpu(gpu) => {
                let inputs = same_backend(OP, device, inputs, Storage::as_gpu)?;
                GpuStorage::custom_kernel(gpu, source, &inputs, numel).map(Storage::Gpu)
            }
        }
    }

    /// Start downloading this storage's values from element `offset` into `staging`
    /// (`transfer::HostStaging`); a CPU storage is an error (the staging belongs to a GPU).
    pub(crate) fn start_staged_download(
        &self,
        staging: &mut GpuStaging,
        offset: usize,
    ) -> Result<()> {
        match self {
            Storage::Gpu(gpu) => staging.start_download(gpu, offset),
            Storage::Cpu(_) => Err(Error::invalid(
                "HostStaging::start_download",
                "internal: a GPU staging given CPU storage",
            )),
        }
    }

    /// Upload `parts` through `staging` into a new F32 storage on its GPU
    /// (`transfer::HostStaging::upload`).
    pub(crate) fn staged_upload(staging: &mut GpuStaging, parts: &[&[f32]]) -> Result<Storage> {
        staging.upload(parts).map(Storage::Gpu)
    }

    /// The CPU data, where this storage is on the CPU.
    fn as_cpu(&self) -> Option<&CpuStorage> {
        match self {
            Storage::Cpu(cpu) => Some(cpu),
            Storage::Gpu(_) => None,
        }
    }

    /// The GPU data, where this storage is on a GPU.
    fn as_gpu(&self) -> Option<&GpuStorage> {
        match self {
            Storage::Gpu(gpu) => Some(gpu),
            Storage::Cpu(_) => None,
        }
    }
}

/// An optional operand (`operand`) on the backend of `first`, picked by `pick`
/// (`Storage::as_cpu` or `Storage::as_gpu`); another device is `Error::DeviceMismatch`.
fn optional_operand<'a, S>(
    op: &'static str,
    first: &Storage,
    operand: Option<&'a Storage>,
    pick: fn(&'a Storage) -> Option<&'a S>,
) -> Result<Option<&'a S>> {
    match operand {
        None => Ok(None),
        Some(storage) => match pick(storage) {
            Some(data) => Ok(Some(data)),
            None => Err(Error::DeviceMismatch {
                op,
                lhs: first.device().to_string(),
                rhs: storage.device().to_string(),
            }),
        },
    }
}

/// Every storage of `inputs` on `device`'s backend, picked by `pick`; one elsewhere is
/// `Error::DeviceMismatch`.
fn same_backend<'a, S>(
    op: &'static str,
    device: &Device,
    inputs: &[&'a Storage],
    pick: fn(&'a Storage) -> Option<&'a S>,
) -> Result<Vec<&'a S>> {
    inputs
        .iter()
        .map(|storage| {
            pick(storage).ok_or_else(|| Error::DeviceMismatch {
                op,
                lhs: device.to_string(),
                rhs: storage.device().to_string(),
            })
        })
        .collect()
}

/// Values of a view on their way to the host ([`Storage::start_host_read`]).
#[derive(Debug)]
pub enum HostRead {
    /// CPU data: read when the read was asked for.
    Ready(CpuStorage),
    /// GPU data: the copy is in the queue.
    Gpu(GpuPendingRead),
}

impl HostRead {
    /// Wait for the copy; the values of the dense `shape` converted to f64, row-major.
    pub fn finish_f64(self, shape: &[usize]) -> Result<Vec<f64>> {
        let host = match self {
            HostRead::Ready(host) => host,
            HostRead::Gpu(pending) => pending.finish()?,
        };
        host.to_f64_vec(&Layout::contiguous(shape))
    }
}
