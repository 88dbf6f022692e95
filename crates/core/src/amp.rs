//! Automatic mixed precision: inside an `autocast(DType::F16)` or `autocast(DType::BF16)`
//! scope, matrix products and convolutions run in the low dtype (their inputs are cast on the
//! way in; the casts are recorded, so gradients flow back to f32 master weights), while
//! numerically touchy ops — softmax, log_softmax, logsumexp and reductions — compute in f32.
//! Elementwise ops between a low-precision and an f32 operand promote to f32, as in PyTorch.
//!
//! | runs in the low dtype under autocast | stays in f32 |
//! |---|---|
//! | `matmul` (so `Linear`), `conv2d` | `softmax`, `log_softmax`, `logsumexp`, `sum`, `mean`, `var`, losses, norms |
//!
//! BF16 keeps f32's exponent range, so its gradients need no loss scaling (no `GradScaler`),
//! and every device runs it: BF16 is stored as 16 bits and computed in f32 (`storage.rs`).
//! F16 needs f16 support: on a device without it, entering autocast fails with
//! `Error::Unsupported`, unless the caller opts in with [`autocast_or_f32`], which then runs
//! everything in f32 and says so with a warning.

use std::cell::Cell;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The dtype matmul and conv use in the current scope (`None` outside autocast).
pub fn autocast_dtype() -> Option<DType> {
    AUTOCAST.with(Cell::get)
}

/// While alive, this thread runs matmul/conv in the autocast dtype. Dropping it restores the
/// previous state (scopes nest).
pub struct AutocastGuard {
    previous: Option<DType>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|state| state.set(self.previous));
    }
}

/// Leave autocast for the rest of the scope (ops that already chose their precision run their
/// parts without re-casting).
pub(crate) fn suspend() -> AutocastGuard {
    enter(None)
}

fn enter(dtype: Option<DType>) -> AutocastGuard {
    let previous = AUTOCAST.with(|state| state.replace(dtype));
    AutocastGuard { previous }
}

/// Enter an autocast scope for `device` in `DType::F16` or `DType::BF16`. Errors for another
/// dtype, and for F16 when the device cannot compute in f16 (every device runs BF16).
pub fn autocast(dtype: DType, device: &Device) -> Result<AutocastGuard> {
    if !matches!(dtype, DType::F16 | DType::BF16) {
        return Err(Error::invalid(
            "autocast",
            format!("only float16 and bfloat16 are supported, got {dtype}"),
        ));
    }
    if dtype == DType::F16 && !device.supports_f16() {
        return Err(Error::Unsupported {
            op: "autocast",
            dtype,
            device: device.to_string(),
            hint: "; this adapter lacks SHADER_F16 (use autocast_or_f32 to run in f32 instead)"
                .into(),
        });
    }
    Ok(enter(Some(dtype)))
}

/// Like [`autocast`], but on a device without f16 it runs in f32 and logs a warning instead
/// of failing (an explicit opt-in).
pub fn autocast_or_f32(dtype: DType, device: &Device) -> Result<AutocastGuard> {
    match autocast(dtype, device) {
        Ok(guard) => Ok(guard),
        Err(Error::Unsupported { .. }) => {
            tracing::warn!("autocast: {device} has no f16 support; running in float32");
            Ok(enter(None))
        }
        Err(other) => Err(other),
    }
}

/// Run `work` inside an autocast scope (the closure form).
pub fn with_autocast<T>(
    dtype: DType,
    device: &Device,
    work: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let _guard = autocast(dtype, device)?;
    work()
}
