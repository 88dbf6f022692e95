//! Gradient mode: whether ops record the autograd graph on this thread (`no_grad`,
//! `enable_grad`, like PyTorch's). A leaf of the crate: autograd and the tensor layer read it,
//! and so does the GPU backend (a convolution keeps a channels-last copy of its input for the
//! weight gradient only while a graph is being recorded); `autograd` re-exports it.

use std::cell::Cell;

thread_local! {
    static GRAD_DISABLED_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// True unless inside a `no_grad` scope on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_DISABLED_DEPTH.with(|depth| depth.get() == 0)
}

/// While alive, ops record no graph (inference, optimizer updates). Like `torch.no_grad()`.
pub struct NoGradGuard {
    _private: (),
}

/// Disable gradient recording until the returned guard is dropped.
pub fn no_grad() -> NoGradGuard {
    GRAD_DISABLED_DEPTH.with(|depth| depth.set(depth.get() + 1));
    NoGradGuard { _private: () }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        GRAD_DISABLED_DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// While alive, ops record the graph again even inside a `no_grad` scope (or a backward
/// pass, which runs under `no_grad`). Like `torch.enable_grad()`; gradient checkpointing uses
/// it to recompute a forward during backward.
pub struct EnableGradGuard {
    saved_depth: usize,
}

/// Enable gradient recording until the returned guard is dropped, which restores the previous
/// `no_grad` depth.
pub fn enable_grad() -> EnableGradGuard {
    let saved_depth = GRAD_DISABLED_DEPTH.with(|depth| depth.replace(0));
    EnableGradGuard { saved_depth }
}

impl Drop for EnableGradGuard {
    fn drop(&mut self) {
        GRAD_DISABLED_DEPTH.with(|depth| depth.set(self.saved_depth));
    }
}
