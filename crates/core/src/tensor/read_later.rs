//! `Tensor::read_later`: a readback that does not stop the GPU. PyTorch overlaps a copy to
//! the host with later work by `tensor.to("cpu", non_blocking=True)` and an event; here the
//! copy is queued after the work recorded so far and [`PendingRead::wait`] waits for that copy
//! alone, so work recorded after `read_later` keeps the GPU busy while the host waits. Mixed
//! precision's gradient scaler reads its inf/NaN flag this way, one step late, instead of
//! synchronizing every step.

use super::Tensor;
use crate::error::Result;
use crate::storage::HostRead;

/// Values on their way to the host ([`Tensor::read_later`]).
#[derive(Debug)]
pub struct PendingRead {
    shape: Vec<usize>,
    read: HostRead,
}

impl Tensor {
    /// Start copying this tensor's values to the host and return at once; the values are
    /// those the tensor holds after the work recorded so far (later writes do not change
    /// them). [`PendingRead::wait`] returns them, waiting only for this copy. On the CPU the
    /// values are read now. An out-of-range index seen by an earlier index op shows at the
    /// next synchronizing read, not here.
    ///
    /// ```
    /// use anygrad_core::{Device, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu)?;
    /// let pending = x.read_later()?;
    /// x.assign(&x.mul_scalar(10.0)?)?; // later work does not change what is read
    /// assert_eq!(pending.wait()?, [1.0, 2.0]);
    /// # Ok::<(), anygrad_core::Error>(())
    /// ```
    pub fn read_later(&self) -> Result<PendingRead> {
        let read = self.storage().start_host_read(self.layout())?;
        Ok(PendingRead {
            shape: self.shape().to_vec(),
            read,
        })
    }
}

impl PendingRead {
    /// The shape of the tensor being read.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Wait for the copy and return the values converted to f64, in row-major order.
    pub fn wait(self) -> Result<Vec<f64>> {
        self.read.finish_f64(&self.shape)
    }
}
