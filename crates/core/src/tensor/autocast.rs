//! Autocast's rule for the ops it keeps in f32 (reductions such as `sum` and `mean`, softmax,
//! layer norm, the losses): under autocast (`amp.rs` holds its per-thread state) an F16 or
//! BF16 operand is widened to f32 first, as PyTorch's autocast does for its "fp32" op list.

use super::Tensor;
use crate::dtype::DType;
use crate::error::Result;

impl Tensor {
    /// Under autocast, the f32 version of an F16 or BF16 tensor; `None` otherwise (the op runs
    /// on the tensor as it is).
    pub(crate) fn upcast_if_autocast(&self) -> Result<Option<Tensor>> {
        if crate::amp::autocast_dtype().is_some()
            && matches!(self.dtype(), DType::F16 | DType::BF16)
        {
            Ok(Some(self.to_dtype(DType::F32)?))
        } else {
            Ok(None)
        }
    }
}
