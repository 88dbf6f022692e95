//! Closing the opened GPUs before the process exits.
//!
//! Why: a Vulkan driver runs submitted work on threads of its own. Mesa's lavapipe, for one,
//! compiles each kernel with LLVM on its queue thread when the kernel first runs. When `main`
//! returns while such work is still queued (an error right after the first kernels were
//! submitted: a model initialized, then a checkpoint refused), the C runtime's exit handlers
//! destroy LLVM's global objects under that thread, and the process dies of a segmentation
//! fault or a heap-corruption abort after printing its error. [`GpuDevice::close_all`] waits
//! until every opened device has finished its submitted work and drops the contexts that no
//! tensor holds any more (wgpu then destroys the device, which joins the driver's threads),
//! so nothing of the driver runs while the process exits.

use std::time::Duration;

use super::GpuContext;
use crate::backend::gpu::runtime::device::{GpuDevice, OPEN_DEVICES};

/// How long closing waits for one device's submitted work before giving up on it (a device
/// that hangs must not keep the process from exiting).
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl GpuDevice {
    /// Wait until every device opened through [`GpuDevice::open`] has finished the work
    /// submitted to it, then forget them (a later `open` creates a fresh context; work that
    /// was recorded but never submitted goes with the context). A context that nothing else holds is dropped here; one still
    /// held elsewhere (a tensor kept in a static) stays open, idle.
    pub(crate) fn close_all() {
        let devices: Vec<GpuDevice> = OPEN_DEVICES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .map(|devices| devices.into_values().collect())
            .unwrap_or_default();
        for device in &devices {
            device.context.quiesce();
        }
    }
}

impl GpuContext {
    /// Wait, for [`CLOSE_WAIT`] at most, until the GPU has finished everything submitted
    /// (work only recorded stays recorded: it is dropped with the context). A lost device has
    /// nothing to wait for; a timeout is logged.
    pub(super) fn quiesce(&self) {
        self.save_pipelines();
        // The last submission handed to the driver (see `GpuContext::wait`).
        let Some(target) = self.last_submission() else {
            return;
        };
        let waited = self.poll(wgpu::PollType::Wait {
            submission_index: Some(target),
            timeout: Some(CLOSE_WAIT),
        });
        if let Ok(Err(error)) = waited {
            tracing::warn!(
                "gpu:{}: closing without the GPU idle: {error}",
                self.ordinal
            );
        }
    }
}
