//! Tensors above one buffer: a `GpuStorage` whose elements live in several consecutive
//! pieces, each an ordinary storage no larger than the adapter's largest storage binding
//! (`GpuContext::binding_limit`). Kernels never see such a storage (its `raw()` is an error):
//! `runtime/sliced.rs` runs every primitive on slices whose operands each fit one binding, and this
//! file creates, uploads, reads back and copies the pieces, and finds the piece (or a merged
//! temporary copy) that holds a given element range.

use std::sync::{Arc, OnceLock};

use super::wgsl::gpu_element_size;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

/// The pieces of a storage above the per-binding limit.
#[derive(Debug)]
pub(crate) struct Parts {
    /// The pieces in element order; each is an ordinary (single-buffer) storage.
    pub(crate) pieces: Vec<GpuStorage>,
    /// The element index at which each piece starts.
    pub(crate) starts: Vec<usize>,
}

/// Pieces made here are cut at multiples of this many elements (4-byte aligned starts for
/// every dtype, so uploads and readbacks stay whole words).
const PIECE_ALIGNMENT: usize = 64;

/// A storage for a range of elements: either borrowed (a piece, or the storage itself) or a
/// merged temporary copy. `start` is the element index (in the whole storage) of the window's
/// element 0.
pub(crate) enum Window<'a> {
    Borrowed(&'a GpuStorage, usize),
    Owned(GpuStorage, usize),
}

impl Window<'_> {
    /// The storage to bind.
    pub(crate) fn storage(&self) -> &GpuStorage {
        match self {
            Window::Borrowed(storage, _) => storage,
            Window::Owned(storage, _) => storage,
        }
    }

    /// The whole storage's element index of the window's first element.
    pub(crate) fn start(&self) -> usize {
        match self {
            Window::Borrowed(_, start) | Window::Owned(_, start) => *start,
        }
    }
}

impl GpuStorage {
    /// The pieces, when this storage is larger than one binding.
    pub(crate) fn parts(&self) -> Option<&Parts> {
        self.parts.as_deref()
    }

    /// The most elements of `dtype` one piece holds on `device` (a multiple of
    /// `PIECE_ALIGNMENT`, at least one alignment unit).
    pub(crate) fn piece_elements(device: &GpuDevice, dtype: DType) -> usize {
        let limit = device.context().binding_limit();
        let elements = (limit / gpu_element_size(dtype)) as usize;
        (elements / PIECE_ALIGNMENT * PIECE_ALIGNMENT).max(PIECE_ALIGNMENT)
    }

    /// Whether `numel` elements of `dtype` exceed one binding on `device`.
    pub(crate) fn exceeds_binding(device: &GpuDevice, numel: usize, dtype: DType) -> bool {
        (numel as u64).saturating_mul(gpu_element_size(dtype)) > device.context().binding_limit()
    }

    /// Build a storage of `numel` elements from pieces made by `make(start, len)`, cut at
    /// `piece_elements`. Used when `numel` exceeds one binding.
    pub(crate) fn build_in_pieces(
        device: &GpuDevice,
        numel: usize,
        dtype: DType,
        mut make: impl FnMut(usize, usize) -> Result<GpuStorage>,
    ) -> Result<GpuStorage> {
        check_total(device, numel, dtype)?;
        let step = GpuStorage::piece_elements(device, dtype);
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < numel {
            let len = step.min(numel - start);
            // A piece the device cannot hold means the tensor does not fit: say so for the
            // whole request (the pieces made so far go back to the pool).
            let piece = make(start, len).map_err(|error| match error {
                Error::OutOfMemory { in_use, limit, .. } => Error::OutOfMemory {
                    requested: (numel as u64).saturating_mul(gpu_element_size(dtype)),
                    in_use,
                    limit,
                },
                other => other,
            })?;
            pieces.push(piece);
            start += len;
        }
        GpuStorage::from_pieces(device, dtype, pieces)
    }

    /// The storage made of `pieces` in order: a piece alone is returned as it is; pieces that
    /// fit one binding together are merged into one buffer; otherwise a storage in parts.
    pub(crate) fn from_pieces(
        device: &GpuDevice,
        dtype: DType,
        mut pieces: Vec<GpuStorage>,
    ) -> Result<GpuStorage> {
        if pieces.len() == 1 {
            return Ok(pieces.remove(0));
        }
        let numel: usize = pieces.iter().map(GpuStorage::len).sum();
        if !GpuStorage::exceeds_binding(device, numel, dtype) {
            let mut merged = GpuStorage::allocate(device, "concatenate pieces", numel, dtype)?;
            let mut start = 0;
            for piece in &pieces {
                copy_elements(piece, 0, &mut merged, start, piece.len())?;
                start += piece.len();
            }
            return Ok(merged);
        }
        // A piece that is itself in parts (a slice result spanning pieces) is flattened.
        let mut flat = Vec::with_capacity(pieces.len());
        for piece in pieces {
            match piece.parts {
                Some(parts) => match Arc::try_unwrap(parts) {
                    Ok(parts) => flat.extend(parts.pieces),
                    Err(_) => {
                        return Err(Error::invalid(
                            "concatenate pieces",
                            "a shared storage in parts cannot be re-cut",
                        ))
                    }
                },
                None => flat.push(piece),
            }
        }
        let mut starts = Vec::with_capacity(flat.len());
        let mut start = 0;
        for piece in &flat {
            starts.push(start);
            start += piece.len();
        }
        let mut storage = GpuStorage::deferred_parts(device, dtype, numel);
        storage.parts = Some(Arc::new(Parts {
            pieces: flat,
            starts,
        }));
        Ok(storage)
    }

    /// A storage header of `numel` elements whose data the caller attaches as parts.
    fn deferred_parts(device: &GpuDevice, dtype: DType, numel: usize) -> GpuStorage {
        GpuStorage {
            slot: Arc::new(OnceLock::new()),
            loan: super::storage::next_loan(),
            dtype,
            len: numel,
            device: device.clone(),
            parts: None,
        }
    }

    /// The storage holding elements `low..high`: this storage itself when it is one buffer,
    /// the piece that holds the whole range, or a merged copy of the range (an error when
    /// the range exceeds one binding). `op` names the caller in errors.
    pub(crate) fn window(&self, op: &'static str, low: usize, high: usize) -> Result<Window<'_>> {
        let Some(parts) = self.parts() else {
            return Ok(Window::Borrowed(self, 0));
        };
        let index = parts
            .starts
            .partition_point(|&start| start <= low)
            .saturating_sub(1);
        let piece = &parts.pieces[index];
        let piece_start = parts.starts[index];
        if high <= piece_start + piece.len() {
            return Ok(Window::Borrowed(piece, piece_start));
        }
        // Copy the range into one buffer.
        if GpuStorage::exceeds_binding(&self.device, high - low, self.dtype) {
            return Err(too_large(&self.device, op, high - low, self.dtype));
        }
        let mut merged = GpuStorage::allocate(&self.device, op, high - low, self.dtype)?;
        for (piece, &start) in parts.pieces.iter().zip(&parts.starts) {
            let end = start + piece.len();
            let (from, to) = (low.max(start), high.min(end));
            if from < to {
                copy_elements(piece, from - start, &mut merged, from - low, to - from)?;
            }
        }
        Ok(Window::Owned(merged, low))
    }

    /// The storage in pieces of at most one binding each, uploaded from `cpu`.
    pub(crate) fn upload_in_pieces(device: &GpuDevice, cpu: &CpuStorage) -> Result<GpuStorage> {
        GpuStorage::build_in_pieces(device, cpu.len(), cpu.dtype(), |start, len| {
            let piece = GpuStorage::allocate(device, "to_device", len, cpu.dtype())?;
            let bytes = host_bytes(cpu, start, start + len);
            piece.write_bytes(bytes)?;
            Ok(piece)
        })
    }

    /// The bytes of every element in the GPU encoding (`runtime/wgsl.rs`), piece by piece when in
    /// parts (blocks until pending work is done).
    pub(crate) fn read_all_bytes(&self) -> Result<Vec<u8>> {
        match self.parts() {
            None => self
                .device
                .context()
                .read_bytes(self.raw()?, self.byte_len()),
            Some(parts) => {
                let mut bytes = Vec::new();
                bytes
                    .try_reserve_exact(self.byte_len() as usize)
                    .map_err(|_| Error::OutOfMemory {
                        requested: self.byte_len(),
                        in_use: 0,
                        limit: 0,
                    })?;
                for piece in &parts.pieces {
                    bytes.extend(piece.read_all_bytes()?);
                }
                Ok(bytes)
            }
        }
    }

    /// A copy of a storage in parts on the same device, piece by piece.
    pub(crate) fn copy_parts(&self, parts: &Parts) -> Result<GpuStorage> {
        let pieces = parts
            .pieces
            .iter()
            .map(|piece| piece.to_gpu(&self.device))
            .collect::<Result<Vec<_>>>()?;
        GpuStorage::from_pieces(&self.device, self.dtype, pieces)
    }
}

/// Copy `len` elements from `source[source_start..]` to `destination[destination_start..]`
/// (both single buffers) with the strided-copy kernel, which takes any element offset.
fn copy_elements(
    source: &GpuStorage,
    source_start: usize,
    destination: &mut GpuStorage,
    destination_start: usize,
    len: usize,
) -> Result<()> {
    let view = |start: usize| Layout {
        shape: vec![len],
        strides: vec![1],
        offset: start,
    };
    GpuStorage::copy_into(
        source,
        &view(source_start),
        destination,
        &view(destination_start),
    )
}

/// No adapter holds more than this in one tensor (a bound that keeps absurd requests from
/// being attempted piece by piece).
const MAX_TENSOR_BYTES: u64 = 1 << 48;

/// Refuse, before any piece is made, a tensor that no memory could hold: a byte count that
/// overflows or exceeds `MAX_TENSOR_BYTES`, or, on a software adapter (whose memory is the
/// host's, handed out by an overcommitting kernel that would later kill the process), more
/// than the host's RAM plus swap. A real GPU's driver refuses what its memory cannot hold.
fn check_total(device: &GpuDevice, numel: usize, dtype: DType) -> Result<()> {
    let requested = (numel as u64).checked_mul(gpu_element_size(dtype));
    let context = device.context();
    let host = if crate::backend::gpu_facts::is_software(&context.info) {
        crate::backend::cpu::alloc::total_memory()
    } else {
        None
    };
    let limit = host.unwrap_or(MAX_TENSOR_BYTES).min(MAX_TENSOR_BYTES);
    match requested {
        Some(bytes) if bytes <= limit => Ok(()),
        _ => Err(Error::OutOfMemory {
            requested: requested.unwrap_or(u64::MAX),
            in_use: context
                .pool
                .lock()
                .map(|state| state.stats().allocated_bytes)
                .unwrap_or(0),
            limit,
        }),
    }
}

/// The error for a range of `numel` elements that no slicing can bring under one binding.
pub(crate) fn too_large(device: &GpuDevice, op: &'static str, numel: usize, dtype: DType) -> Error {
    let requested = (numel as u64).saturating_mul(gpu_element_size(dtype));
    tracing::debug!("{op}: {numel} elements of {dtype} cannot be split under one binding");
    super::buffers::too_large(op, requested, device.context().binding_limit())
}

/// The GPU encoding (`runtime/wgsl.rs`) of elements `start..end` of a CPU storage: U8 and Bool widen
/// to one u32 each; the result is padded to a multiple of 4 bytes.
pub(crate) fn host_bytes(cpu: &CpuStorage, start: usize, end: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = match cpu {
        CpuStorage::F32(values) => bytemuck::cast_slice(&values[start..end]).to_vec(),
        CpuStorage::F16(values) => bytemuck::cast_slice(&values[start..end]).to_vec(),
        CpuStorage::BF16(values) => bytemuck::cast_slice(&values[start..end]).to_vec(),
        CpuStorage::I32(values) => bytemuck::cast_slice(&values[start..end]).to_vec(),
        CpuStorage::U32(values) => bytemuck::cast_slice(&values[start..end]).to_vec(),
        CpuStorage::U8(values) => values[start..end]
            .iter()
            .flat_map(|&v| (v as u32).to_le_bytes())
            .collect(),
        CpuStorage::Bool(values) => values[start..end]
            .iter()
            .flat_map(|&v| (v as u32).to_le_bytes())
            .collect(),
        // GPUs refuse F64 storages before any upload; kept exhaustive.
        CpuStorage::F64(_) => Vec::new(),
    };
    // Queue writes must be a multiple of 4 bytes (an odd number of 16-bit values is padded).
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes
}
