//! Whether a profile is being recorded: one flag in a leaf module, so that the GPU backend can
//! read it (elementwise fusion defers nothing while profiling, so each op is timed on its own)
//! without importing the profiler, which sits above the backends.

use std::sync::atomic::{AtomicBool, Ordering};

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// True while a profile is being recorded.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Turn recording on; returns whether it already was on.
pub(crate) fn start() -> bool {
    ACTIVE.swap(true, Ordering::SeqCst)
}

/// Turn recording off.
pub(crate) fn stop() {
    ACTIVE.store(false, Ordering::SeqCst);
}
