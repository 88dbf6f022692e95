//! The backend contract's `Copying` family: copies of views: dense copies, copies into other views,
//! dtype conversions. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{Layout, MemoryFormat};

/// Copies of views: dense copies, copies into other views, dtype conversions.
pub(crate) trait Copying: BackendStorage {
    /// A contiguous copy of the view.
    fn copy_strided(&self, layout: &Layout) -> Result<Self>;

    /// Copy the view `layout` of `self` into the view `dst_layout` of `dst` (same shape, same
    /// dtype). Used by `cat`, `assign`, view gradients and the optimizers' in-place updates.
    fn copy_into(&self, layout: &Layout, dst: &mut Self, dst_layout: &Layout) -> Result<()>;

    /// The view converted to `dtype` (contiguous output; float to integer truncates toward
    /// zero and saturates).
    fn cast(&self, layout: &Layout, dtype: DType) -> Result<Self>;
}

/// `storage`, a dense row-major `[n, c, h, w]` of `shape`, laid out in `format`: itself, or
/// its channels-last copy (for backends whose kernel writes only the row-major order).
pub(crate) fn into_format<S: Copying>(
    storage: S,
    shape: &[usize],
    format: MemoryFormat,
) -> Result<S> {
    match (format, shape) {
        (MemoryFormat::ChannelsLast, &[_, channels, height, width])
            if channels > 1 && height * width > 1 =>
        {
            storage.copy_strided(&Layout::contiguous(shape).permute(&[0, 2, 3, 1]))
        }
        (MemoryFormat::ChannelsLast | MemoryFormat::Contiguous, _) => Ok(storage),
    }
}
