//! [`GpuPendingRead`]: a readback of a whole storage started now and finished later
//! (`Tensor::read_later`). Starting records one copy into a host-mappable buffer after the
//! work recorded so far and submits it; finishing submits what was recorded after it and
//! waits only for that copy, so the GPU keeps running the later work meanwhile. Mixed precision reads its inf/NaN flag this way (the
//! gradient scaler's step needs no synchronization). Also the decoding of the GPU's bytes
//! into a CPU storage that every readback shares.

use half::f16;

use super::context::PendingBytes;
use crate::backend::cpu::CpuStorage;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::dtype::DType;
use crate::error::Result;

/// A readback of one storage, started and not yet waited for.
pub struct GpuPendingRead {
    device: GpuDevice,
    dtype: DType,
    state: State,
}

enum State {
    /// A storage in parts was read at once (it is never a flag or a scalar).
    Done(CpuStorage),
    /// The copy is submitted; its mapping was requested.
    Copying(PendingBytes),
}

impl std::fmt::Debug for GpuPendingRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPendingRead")
            .field("device", &self.device.ordinal())
            .field("dtype", &self.dtype)
            .finish()
    }
}

impl GpuStorage {
    /// Start reading the whole storage back to the host (see the module header).
    pub(crate) fn start_read(&self) -> Result<GpuPendingRead> {
        let state = match self.parts() {
            Some(_) => State::Done(self.to_cpu()?),
            None => State::Copying(
                self.device
                    .context()
                    .start_read_bytes(self.raw()?, self.byte_len())?,
            ),
        };
        Ok(GpuPendingRead {
            device: self.device.clone(),
            dtype: self.dtype,
            state,
        })
    }
}

impl GpuPendingRead {
    /// Wait for the copy and return the values.
    pub(crate) fn finish(self) -> Result<CpuStorage> {
        match self.state {
            State::Done(values) => Ok(values),
            State::Copying(pending) => {
                let bytes = self.device.context().finish_read_bytes(pending)?;
                Ok(host_storage(self.dtype, &bytes))
            }
        }
    }
}

/// A CPU storage of `dtype` from the bytes of its GPU encoding (`runtime/wgsl.rs`: F64 is stored as
/// f32, U8 and Bool as 32-bit words).
pub(crate) fn host_storage(dtype: DType, bytes: &[u8]) -> CpuStorage {
    let words = || {
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
    };
    match dtype {
        DType::F32 | DType::F64 => CpuStorage::F32(words().map(f32::from_bits).collect()),
        DType::F16 => CpuStorage::F16(
            bytes
                .chunks_exact(2)
                .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        DType::BF16 => CpuStorage::BF16(
            bytes
                .chunks_exact(2)
                .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        DType::I32 => CpuStorage::I32(words().map(|w| w as i32).collect()),
        DType::U32 => CpuStorage::U32(words().collect()),
        DType::U8 => CpuStorage::U8(words().map(|w| w as u8).collect()),
        DType::Bool => CpuStorage::Bool(words().map(|w| w != 0).collect()),
    }
}
