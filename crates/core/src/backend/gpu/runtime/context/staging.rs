//! Reusable host-visible staging for repeated transfers of one f32 vector between a GPU and
//! host memory (the data-parallel gradient exchange moves every bucket twice per step). Unlike
//! `read_bytes`, nothing is allocated per transfer and nothing waits for the whole queue:
//! a download records one buffer copy into a mappable buffer kept for the staging's lifetime,
//! submits it and asks for the mapping, and the host waits later, only for that mapping
//! (polling, so other threads keep recording and submitting meanwhile). An upload writes into
//! a second mappable buffer that is mapped again as soon as its copy to the device has been
//! submitted, so it is ready by the next step.

use super::super::storage::GpuStorage;
use super::readback::{request_map, wait_for_map, MapSignal};
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A download buffer and an upload buffer of `len` f32 values on one GPU.
pub(crate) struct GpuStaging {
    device: GpuDevice,
    len: usize,
    /// `MAP_READ | COPY_DST`: the device copies into it, the host reads it mapped.
    download: wgpu::Buffer,
    /// The mapping requested after the last download's copy was submitted.
    download_pending: Option<MapSignal>,
    /// `MAP_WRITE | COPY_SRC`: the host writes it mapped, the device copies out of it.
    upload: wgpu::Buffer,
    /// The mapping requested after the last upload's copy was submitted (`None`: mapped).
    upload_pending: Option<MapSignal>,
}

impl std::fmt::Debug for GpuStaging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuStaging")
            .field("device", &self.device.ordinal())
            .field("len", &self.len)
            .finish()
    }
}

impl GpuStaging {
    /// Staging for `len` f32 values on `device` (the upload buffer starts mapped).
    pub(crate) fn new(device: &GpuDevice, len: usize) -> Result<GpuStaging> {
        let context = device.context();
        context.ensure_alive()?;
        let bytes = (len.max(1) as u64) * 4;
        let limit = context.limits.max_buffer_size;
        if bytes > limit {
            return Err(Error::OutOfMemory {
                requested: bytes,
                in_use: 0,
                limit,
            });
        }
        let download = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("anygrad staging download"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let upload = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("anygrad staging upload"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        });
        Ok(GpuStaging {
            device: device.clone(),
            len,
            download,
            download_pending: None,
            upload,
            upload_pending: None,
        })
    }

    /// Record a copy of `len` values of `source`, starting at element `offset`, into the
    /// download buffer, submit it (with everything recorded before it) and request the
    /// mapping. Returns without waiting.
    pub(crate) fn start_download(&mut self, source: &GpuStorage, offset: usize) -> Result<()> {
        if source.dtype() != DType::F32 || offset + self.len > source.len() {
            return Err(Error::invalid(
                "HostStaging::start_download",
                format!(
                    "needs {} f32 values from element {offset}; the source holds {} {:?}",
                    self.len,
                    source.len(),
                    source.dtype()
                ),
            ));
        }
        if source.device() != &self.device {
            return Err(Error::DeviceMismatch {
                op: "HostStaging::start_download",
                lhs: format!("gpu:{}", source.device().ordinal()),
                rhs: format!("gpu:{}", self.device.ordinal()),
            });
        }
        // A download nobody finished: wait for it, so the buffer is unmapped again.
        if self.download_pending.is_some() {
            self.wait_download()?;
            self.download.unmap();
        }
        if self.len == 0 {
            return Ok(());
        }
        // Before the recording lock: a pending result is computed (recorded) here.
        let raw = source.raw()?;
        let context = self.device.context();
        context.ensure_alive()?;
        {
            let mut recording = context.recording.lock().unwrap_or_else(|p| p.into_inner());
            context.drain_locked(&mut recording)?;
            recording.encoder(&context.device).copy_buffer_to_buffer(
                raw,
                offset as u64 * 4,
                &self.download,
                0,
                self.len as u64 * 4,
            );
            context.flush_locked(&mut recording)?;
        }
        self.download_pending = Some(request_map(&self.download, wgpu::MapMode::Read));
        Ok(())
    }

    /// Wait for the download started last and copy it into `out` (`len` values).
    pub(crate) fn finish_download(&mut self, out: &mut [f32]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::invalid(
                "HostStaging::finish_download",
                format!(
                    "the output holds {} values, the staging {}",
                    out.len(),
                    self.len
                ),
            ));
        }
        if self.len == 0 {
            return Ok(());
        }
        if self.download_pending.is_none() {
            return Err(Error::invalid(
                "HostStaging::finish_download",
                "no download was started",
            ));
        }
        self.wait_download()?;
        let copied = {
            let view = self
                .download
                .get_mapped_range(..)
                .map_err(|error| Error::DeviceLost {
                    message: format!("mapping the staging buffer failed: {error}"),
                })?;
            copy_bytes_into(&view[..self.len * 4], out)
        };
        self.download.unmap();
        copied
    }

    fn wait_download(&mut self) -> Result<()> {
        match self.download_pending.take() {
            Some(signal) => {
                wait_for_map(self.device.context(), &signal, "reading a staging buffer")
            }
            None => Ok(()),
        }
    }

    /// Write `parts` (concatenated: `len` values in all) into the upload buffer, copy it into
    /// a new device buffer and submit the copy. Returns the new storage at once.
    pub(crate) fn upload(&mut self, parts: &[&[f32]]) -> Result<GpuStorage> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total != self.len {
            return Err(Error::invalid(
                "HostStaging::upload",
                format!("got {total} values for a staging of {}", self.len),
            ));
        }
        let storage =
            GpuStorage::allocate(&self.device, "HostStaging::upload", self.len, DType::F32)?;
        if self.len == 0 {
            return Ok(storage);
        }
        if let Some(signal) = self.upload_pending.take() {
            wait_for_map(
                self.device.context(),
                &signal,
                "mapping an upload staging buffer",
            )?;
        }
        {
            let mut view =
                self.upload
                    .get_mapped_range_mut(..)
                    .map_err(|error| Error::DeviceLost {
                        message: format!("mapping the staging buffer failed: {error}"),
                    })?;
            let mut start = 0;
            for part in parts {
                let bytes: &[u8] = bytemuck::cast_slice(part);
                // Mapped memory is write-only here (it may be write-combined).
                view.slice(start..start + bytes.len())
                    .copy_from_slice(bytes);
                start += bytes.len();
            }
        }
        self.upload.unmap();
        let raw = storage.raw()?;
        let context = self.device.context();
        context.ensure_alive()?;
        {
            let mut recording = context.recording.lock().unwrap_or_else(|p| p.into_inner());
            context.drain_locked(&mut recording)?;
            recording.encoder(&context.device).copy_buffer_to_buffer(
                &self.upload,
                0,
                raw,
                0,
                self.len as u64 * 4,
            );
            context.flush_locked(&mut recording)?;
        }
        // Submitted: the mapping resolves once the copy has run, well before the next upload.
        self.upload_pending = Some(request_map(&self.upload, wgpu::MapMode::Write));
        Ok(storage)
    }
}

/// Copy little-endian f32 bytes into `out` (a plain cast when the view is aligned).
fn copy_bytes_into(bytes: &[u8], out: &mut [f32]) -> Result<()> {
    match bytemuck::try_cast_slice::<u8, f32>(bytes) {
        Ok(values) => out.copy_from_slice(values),
        Err(_) => {
            for (value, word) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *value = f32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            }
        }
    }
    Ok(())
}
