//! Device loss: the GPU stops answering (a driver reset, an external GPU unplugged, a
//! Windows TDR). wgpu reports it through the device-lost callback and through errors of
//! `poll`, `submit` and `map_async`; the context then keeps a *lost* flag that every entry
//! point checks first ([`GpuContext::ensure_alive`]): allocating, dispatching, deferring,
//! flushing, uploading and reading all return `Error::DeviceLost` from then on, and waits
//! (readbacks included) poll in slices and give up as soon as the flag is set, so nothing
//! waits on a device that will never answer.
//!
//! Tests lose a device on purpose with [`GpuContext::simulate_loss`] (public as
//! `anygrad_core::gpu::simulate_device_loss`), which destroys the wgpu device as a driver
//! reset would.

use std::sync::atomic::Ordering;

use super::GpuContext;
use crate::error::{Error, Result};

impl GpuContext {
    /// Mark the device lost with `message` (the first report wins).
    pub(super) fn mark_lost(&self, message: String) {
        let mut kept = self.lost_message.lock().unwrap_or_else(|p| p.into_inner());
        if !self.lost.swap(true, Ordering::SeqCst) {
            *kept = message;
        }
    }

    /// `Err(DeviceLost)` once the device has been reported lost.
    pub(crate) fn ensure_alive(&self) -> Result<()> {
        if self.is_lost() {
            return Err(self.lost_error());
        }
        Ok(())
    }

    /// The error every call on a lost device returns.
    fn lost_error(&self) -> Error {
        let message = self
            .lost_message
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Error::DeviceLost {
            message: format!(
                "gpu:{} was lost ({message}); recreate tensors on a new device",
                self.ordinal
            ),
        }
    }

    /// Whether the device has been reported lost.
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Lose the device now, as a driver reset would: mark it lost and destroy the wgpu
    /// device (its memory is freed once the GPU has finished what was submitted). Every
    /// later call on it returns `Error::DeviceLost`.
    pub(crate) fn simulate_loss(&self) {
        self.mark_lost("destroyed on purpose (simulated device loss)".to_string());
        self.device.destroy();
    }
}

impl GpuContext {
    /// `device.poll`, with a device found lost turned into `Error::DeviceLost` (and the flag
    /// set). wgpu treats a device lost *during* a poll as fatal and panics; the panic is
    /// caught here so that the caller gets the error.
    pub(super) fn poll(
        &self,
        poll_type: wgpu::PollType,
    ) -> Result<std::result::Result<wgpu::PollStatus, wgpu::PollError>> {
        self.ensure_alive()?;
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.device.poll(poll_type)));
        match polled {
            Ok(status) => {
                // A loss reported by the callback during this poll.
                self.ensure_alive()?;
                Ok(status)
            }
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "waiting for the GPU failed".to_string());
                self.mark_lost(reason);
                Err(self.lost_error())
            }
        }
    }
}
