//! [`HostStaging`]: reusable staging for moving one f32 vector of fixed length between a device
//! and host memory again and again (the data-parallel gradient exchange moves every bucket
//! down and back up each step). On a GPU it keeps two host-mappable buffers for its whole
//! life, so a transfer allocates nothing; a download is started (one buffer copy, submitted,
//! no wait) and finished later, so the copy overlaps whatever the host records in between;
//! an upload writes straight into mapped memory from several slices and is one buffer copy.
//! On the CPU the same calls are plain copies.

use crate::backend::gpu::GpuStaging;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::tensor::Tensor;

#[derive(Debug)]
enum Inner {
    Cpu { downloaded: Vec<f32> },
    Gpu(GpuStaging),
}

/// Staging for transfers of `len` f32 values between one device and the host.
///
/// ```
/// use anygrad_core::{transfer::HostStaging, Device, Tensor};
/// let device = Device::Cpu;
/// let mut staging = HostStaging::new(&device, 3)?;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], &device)?;
/// staging.start_download(&x)?;
/// let mut host = vec![0.0f32; 3];
/// staging.finish_download(&mut host)?;
/// assert_eq!(host, [1.0, 2.0, 3.0]);
/// let back = staging.upload(&[&host[..1], &host[1..]])?;
/// assert_eq!(back.to_vec::<f32>()?, [1.0, 2.0, 3.0]);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Debug)]
pub struct HostStaging {
    device: Device,
    len: usize,
    inner: Inner,
}

impl HostStaging {
    /// Staging for `len` f32 values on `device` (on a GPU: two mappable buffers of `4·len`
    /// bytes, kept until the staging is dropped).
    pub fn new(device: &Device, len: usize) -> Result<HostStaging> {
        let inner = match device {
            Device::Cpu => Inner::Cpu {
                downloaded: Vec::new(),
            },
            Device::Gpu(gpu) => Inner::Gpu(GpuStaging::new(gpu, len)?),
        };
        Ok(HostStaging {
            device: device.clone(),
            len,
            inner,
        })
    }

    /// Number of f32 values per transfer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a staging of zero values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device this staging transfers to and from.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Start reading `tensor` (f32, `len` elements, on this staging's device) into host
    /// memory. On a GPU this records one buffer copy and submits it with the work recorded
    /// before, then returns without waiting; [`HostStaging::finish_download`] waits for it.
    /// A non-contiguous view is made contiguous first.
    pub fn start_download(&mut self, tensor: &Tensor) -> Result<()> {
        if tensor.dtype() != DType::F32 || tensor.numel() != self.len {
            return Err(Error::invalid(
                "HostStaging::start_download",
                format!(
                    "needs an f32 tensor of {} elements, got {:?} of shape {:?}",
                    self.len,
                    tensor.dtype(),
                    tensor.shape()
                ),
            ));
        }
        if tensor.device() != &self.device {
            return Err(Error::DeviceMismatch {
                op: "HostStaging::start_download",
                lhs: tensor.device().to_string(),
                rhs: self.device.to_string(),
            });
        }
        let tensor = tensor.contiguous()?;
        match &mut self.inner {
            Inner::Cpu { downloaded } => {
                *downloaded = tensor.to_vec::<f32>()?;
                Ok(())
            }
            Inner::Gpu(staging) => {
                let offset = tensor.layout().offset;
                let storage = tensor.storage();
                storage.start_staged_download(staging, offset)
            }
        }
    }

    /// Wait for the download started last and copy its values into `out` (`len` values).
    pub fn finish_download(&mut self, out: &mut [f32]) -> Result<()> {
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
        match &mut self.inner {
            Inner::Cpu { downloaded } => {
                if downloaded.len() != self.len {
                    return Err(Error::invalid(
                        "HostStaging::finish_download",
                        "no download was started",
                    ));
                }
                out.copy_from_slice(downloaded);
                downloaded.clear();
                Ok(())
            }
            Inner::Gpu(staging) => staging.finish_download(out),
        }
    }

    /// Upload `parts` (concatenated they hold `len` values) as a new f32 tensor of shape
    /// `[len]` on the device. On a GPU the values are written into mapped memory and copied
    /// to the device by one submitted buffer copy; the call returns without waiting for it.
    pub fn upload(&mut self, parts: &[&[f32]]) -> Result<Tensor> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total != self.len {
            return Err(Error::invalid(
                "HostStaging::upload",
                format!("got {total} values for a staging of {}", self.len),
            ));
        }
        match &mut self.inner {
            Inner::Cpu { .. } => Tensor::from_vec(parts.concat(), &[self.len], &self.device),
            Inner::Gpu(staging) => {
                let storage = Storage::staged_upload(staging, parts)?;
                Ok(Tensor::from_storage(storage, &[self.len], None))
            }
        }
    }
}
