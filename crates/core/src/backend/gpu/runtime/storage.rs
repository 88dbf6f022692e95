//! `GpuStorage`: a tensor's data in one GPU buffer, plus its creation and transfers
//! (`arange`, uploads, readbacks, GPU-to-GPU copies). The primitives that run kernels live
//! with their kernel families (`full` in `fill/`, `random` in `random/`; see `../mod.rs`). The element encoding is described in `runtime/wgsl.rs`
//! (U8 and Bool take one u32 each).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use super::buffers::{self, BufferSlot};
use super::context::WORKGROUP_SIZE;
use super::kernel::KernelId;
use super::params::Params;
use super::wgsl::gpu_element_size;
use crate::backend::contract::BackendStorage;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// Tensor data in a GPU buffer.
pub struct GpuStorage {
    /// The buffer (empty while the storage is the pending result of a deferred op).
    pub(crate) slot: BufferSlot,
    /// Unique per storage; deferred work keeps a `Weak` of it to learn whether this storage
    /// (the only way to read the buffer later) still exists.
    pub(crate) loan: Arc<u64>,
    pub(crate) dtype: DType,
    pub(crate) len: usize,
    pub(crate) device: GpuDevice,
    /// For a tensor larger than one binding: its pieces (`runtime/parts.rs`); `slot` then stays empty.
    pub(crate) parts: Option<Arc<super::parts::Parts>>,
}

/// A storage a kernel binds: the caller's own where its view is already in the form the kernel
/// reads, else a copy made for the call (a dense, channels-last or padded form of it).
pub(crate) enum StorageRef<'a> {
    Borrowed(&'a GpuStorage),
    Copied(GpuStorage),
}

impl std::ops::Deref for StorageRef<'_> {
    type Target = GpuStorage;

    fn deref(&self) -> &GpuStorage {
        match self {
            StorageRef::Borrowed(storage) => storage,
            StorageRef::Copied(storage) => storage,
        }
    }
}

/// A fresh storage token.
pub(crate) fn next_loan() -> Arc<u64> {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    Arc::new(COUNTER.fetch_add(1, Ordering::Relaxed))
}

impl std::fmt::Debug for GpuStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuStorage({} x {} on gpu:{})",
            self.len,
            self.dtype,
            self.device.ordinal()
        )
    }
}

/// `Err(Unsupported)` when `device` cannot hold `dtype`.
pub(crate) fn check_dtype(device: &GpuDevice, op: &'static str, dtype: DType) -> Result<()> {
    let unsupported = |hint: &str| Error::Unsupported {
        op,
        dtype,
        device: format!("gpu:{}", device.ordinal()),
        hint: hint.to_string(),
    };
    match dtype {
        DType::F64 => Err(unsupported(
            "; GPUs compute in f32 or f16: convert with .to_dtype(DType::F32), or keep f64 work on the CPU",
        )),
        DType::F16 if !device.supports_f16() => Err(unsupported(
            "; this adapter lacks SHADER_F16: use f32, or a GPU/driver with 16-bit shader support",
        )),
        DType::F16 | DType::BF16 | DType::F32 | DType::I32 | DType::U32 | DType::U8 | DType::Bool => Ok(()),
    }
}

impl BackendStorage for GpuStorage {
    type Device = GpuDevice;
    const NAME: &'static str = "gpu";

    fn dtype(&self) -> DType {
        GpuStorage::dtype(self)
    }
}

impl GpuStorage {
    /// A new uninitialised storage of `len` elements.
    pub(crate) fn allocate(
        device: &GpuDevice,
        op: &'static str,
        len: usize,
        dtype: DType,
    ) -> Result<GpuStorage> {
        check_dtype(device, op, dtype)?;
        let context = device.context();
        let bytes = (len as u64)
            .checked_mul(gpu_element_size(dtype))
            .ok_or_else(|| Error::OutOfMemory {
                requested: u64::MAX,
                in_use: context
                    .pool
                    .lock()
                    .map(|state| state.stats().allocated_bytes)
                    .unwrap_or(0),
                limit: context.limits.max_buffer_size,
            })?;
        buffers::check_size(op, bytes, &context.limits)?;
        let buffer = context.allocate(bytes)?;
        Ok(GpuStorage {
            slot: Arc::new(OnceLock::from(buffer)),
            loan: next_loan(),
            dtype,
            len,
            device: device.clone(),
            parts: None,
        })
    }

    /// A storage of `len` elements whose buffer is allocated later, if ever (the result of a
    /// deferred op: see `fusion/`). The size is checked against the device's limits now.
    pub(crate) fn deferred(
        device: &GpuDevice,
        op: &'static str,
        len: usize,
        dtype: DType,
    ) -> Result<GpuStorage> {
        check_dtype(device, op, dtype)?;
        let context = device.context();
        let bytes = (len as u64).saturating_mul(gpu_element_size(dtype));
        buffers::check_size(op, bytes, &context.limits)?;
        Ok(GpuStorage {
            slot: Arc::new(OnceLock::new()),
            loan: next_loan(),
            dtype,
            len,
            device: device.clone(),
            parts: None,
        })
    }

    /// This storage's id (equal ids: the same storage).
    pub(crate) fn loan_id(&self) -> u64 {
        *self.loan
    }

    /// The name the mutation log records in-place writes into this storage by
    /// (`mutation::note_write`): its id.
    pub(crate) fn write_token(&self) -> Option<u64> {
        Some(*self.loan)
    }

    /// A handle that stops upgrading once this storage is dropped.
    pub(crate) fn liveness(&self) -> Weak<u64> {
        Arc::downgrade(&self.loan)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device holding the data.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// Number of stored elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of data (without the size-class padding).
    pub(crate) fn byte_len(&self) -> u64 {
        self.len as u64 * gpu_element_size(self.dtype)
    }

    /// The buffer; a pending result is computed first (the deferred ops are recorded).
    /// This storage itself where `layout` reads it densely from element 0 (a kernel can index
    /// it as `[0, numel)`), else a dense copy of the view kept in `copy`.
    pub(crate) fn dense_from_start<'a>(
        &'a self,
        layout: &Layout,
        copy: &'a mut Option<GpuStorage>,
    ) -> Result<&'a GpuStorage> {
        if layout.is_contiguous() && layout.offset == 0 {
            Ok(self)
        } else {
            Ok(copy.insert(self.copy_strided(layout)?))
        }
    }

    pub(crate) fn raw(&self) -> Result<&wgpu::Buffer> {
        if self.parts.is_some() {
            // Kernels bind one buffer; `runtime/sliced.rs` gives them pieces, never the whole.
            return Err(buffers::too_large(
                "",
                self.byte_len(),
                self.device.context().binding_limit(),
            ));
        }
        if self.slot.get().is_none() {
            self.device.context().drain()?;
        }
        match self.slot.get() {
            Some(buffer) => Ok(buffer.buffer()),
            None => Err(Error::DeviceLost {
                message: "the GPU work that computes this tensor failed earlier (see the first \
                          error this device returned)"
                    .into(),
            }),
        }
    }

    /// Record a 1-D kernel over `count` elements (256 per workgroup, 2-D grid when large).
    pub(crate) fn launch(
        device: &GpuDevice,
        key: &dyn KernelId,
        params: &Params,
        buffers: &[&wgpu::Buffer],
        count: usize,
    ) -> Result<()> {
        GpuStorage::launch_checked(device, key, params, buffers, count, None)
    }

    /// `launch` of an index kernel of `index_op` (see `GpuContext::dispatch_checked`).
    pub(crate) fn launch_checked(
        device: &GpuDevice,
        key: &dyn KernelId,
        params: &Params,
        buffers: &[&wgpu::Buffer],
        count: usize,
        index_op: Option<&'static str>,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let context = device.context();
        let workgroups = u32::try_from(count.div_ceil(WORKGROUP_SIZE as usize)).map_err(|_| {
            Error::InvalidArgument {
                op: "gpu kernel",
                message: format!("{count} elements exceed the GPU's 32-bit indexing"),
            }
        })?;
        context.dispatch_checked(
            key,
            params.words(),
            buffers,
            context.grid(workgroups),
            index_op,
        )
    }

    /// `start + i * step` computed on the host in f64 (exactly the CPU's numbers) and uploaded;
    /// aranges are small and this keeps integer and float results identical to the CPU.
    pub fn arange(
        device: &GpuDevice,
        start: f64,
        step: f64,
        numel: usize,
        dtype: DType,
    ) -> Result<GpuStorage> {
        check_dtype(device, "arange", dtype)?;
        GpuStorage::from_cpu(device, &CpuStorage::arange(start, step, numel, dtype)?)
    }

    /// Upload a CPU storage (in pieces when it exceeds one binding: `runtime/parts.rs`).
    pub fn from_cpu(device: &GpuDevice, cpu: &CpuStorage) -> Result<GpuStorage> {
        check_dtype(device, "to_device", cpu.dtype())?;
        if GpuStorage::exceeds_binding(device, cpu.len(), cpu.dtype()) {
            return GpuStorage::upload_in_pieces(device, cpu);
        }
        let storage = GpuStorage::allocate(device, "to_device", cpu.len(), cpu.dtype())?;
        storage.write_bytes(super::parts::host_bytes(cpu, 0, cpu.len()))?;
        Ok(storage)
    }

    /// Queue a write of `bytes` (a multiple of 4) at the start of this single-buffer storage.
    pub(crate) fn write_bytes(&self, bytes: Vec<u8>) -> Result<()> {
        if !bytes.is_empty() {
            self.device.context().ensure_alive()?;
            self.device.context().write_buffer(self.raw()?, 0, &bytes);
        }
        Ok(())
    }

    /// Read the whole storage back to the host (blocks until pending work is done).
    pub fn to_cpu(&self) -> Result<CpuStorage> {
        Ok(super::pending_read::host_storage(
            self.dtype,
            &self.read_all_bytes()?,
        ))
    }

    /// Copy to `device`: a buffer copy on the same device, through the host otherwise (exact).
    pub fn to_gpu(&self, device: &GpuDevice) -> Result<GpuStorage> {
        if *device == self.device {
            if let Some(parts) = self.parts() {
                return self.copy_parts(parts);
            }
            let copy = GpuStorage::allocate(device, "to_device", self.len, self.dtype)?;
            device.context().copy_buffer(
                self.raw()?,
                copy.raw()?,
                self.byte_len().div_ceil(4) * 4,
            )?;
            return Ok(copy);
        }
        GpuStorage::from_cpu(device, &self.to_cpu()?)
    }
}

// Tensors move between threads (data loaders, data-parallel workers): the storage must be
// `Send + Sync`. This fails to compile if a field ever breaks that.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GpuStorage>();
    assert_send_sync::<GpuDevice>();
};
