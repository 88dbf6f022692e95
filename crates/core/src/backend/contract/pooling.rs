//! The backend contract's `Pooling` family: 2-D max pooling and its gradient. The rules every
//! primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::geometry::Window;
use crate::layout::{Layout, MemoryFormat};

/// 2-D max pooling and its gradient.
pub(crate) trait Pooling: BackendStorage {
    /// 2-D max pooling: `self` is the input `[n, c, h, w]` (any strides); output `[n, c, oh,
    /// ow]` dense in `format` (the geometry is `geometry::PoolShape`, the same on every
    /// backend). Padding reads `-inf` (never wins); a NaN in a window gives NaN, like
    /// PyTorch. Float dtypes only.
    fn max_pool2d(&self, layout: &Layout, window: &Window, format: MemoryFormat) -> Result<Self>;

    /// Max pooling's input gradient: `self` is the forward's input, `output` the forward's
    /// output and `grad` the output gradient (both of the output's shape, any strides; the
    /// three share one dtype). Each output's gradient goes to the first tap of its window, in
    /// row-major kernel order, whose input equals the output (NaN matching NaN), as PyTorch
    /// routes ties. Returns `[n, c, h, w]` dense in the input's memory format
    /// (`MemoryFormat::of(layout)`: channels-last activations get a channels-last gradient);
    /// no atomics: deterministic.
    fn max_pool2d_backward(
        &self,
        layout: &Layout,
        output: &Self,
        output_layout: &Layout,
        grad: &Self,
        grad_layout: &Layout,
        window: &Window,
    ) -> Result<Self>;
}
