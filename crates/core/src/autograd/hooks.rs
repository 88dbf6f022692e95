//! Gradient hooks on tensors (`Tensor::register_hook`, PyTorch's `register_hook`): functions
//! called with a tensor's gradient once backward has summed every contribution to it, before
//! the gradient flows on (a non-leaf's into its op's rule, a leaf's into `.grad`); a hook may
//! return a replacement of the same shape. A non-leaf's hooks live with its op record (shared
//! by the storage-less graph twins that later ops hold, so a hook registered after the forward
//! still runs); a leaf's live on the leaf itself. Hooks run in the order they were added, under
//! `no_grad`, on the thread that runs backward.

use std::sync::{Arc, Mutex, Weak};

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A gradient hook: the gradient in, `Some(replacement)` or `None` (keep it) out.
pub type GradientHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// The hooks of one tensor (or op record), in registration order, with the number the next
/// one gets.
#[derive(Default)]
pub(crate) struct HookList {
    hooks: Mutex<(u64, Vec<(u64, GradientHook)>)>,
}

impl HookList {
    /// Add `hook`; its number, for removal.
    pub(crate) fn add(&self, hook: GradientHook) -> u64 {
        let mut hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner());
        hooks.0 += 1;
        let id = hooks.0;
        hooks.1.push((id, hook));
        id
    }

    /// Remove hook number `id` (nothing when it is gone already).
    pub(crate) fn remove(&self, id: u64) {
        self.hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .retain(|(number, _)| *number != id);
    }

    /// `grad` passed through every hook in order (a hook's replacement is the next one's
    /// input); a replacement of another shape is an error.
    pub(crate) fn apply(&self, grad: Tensor) -> Result<Tensor> {
        let hooks: Vec<GradientHook> = self
            .hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .iter()
            .map(|(_, hook)| hook.clone())
            .collect();
        let mut grad = grad;
        for hook in hooks {
            if let Some(replacement) = hook(&grad)? {
                if replacement.shape() != grad.shape() {
                    return Err(Error::ShapeMismatch {
                        op: "register_hook",
                        lhs: grad.shape().to_vec(),
                        rhs: replacement.shape().to_vec(),
                        reason: "a gradient hook must return a gradient of the tensor's shape"
                            .into(),
                    });
                }
                grad = if replacement.dtype() == grad.dtype() {
                    replacement
                } else {
                    replacement.to_dtype(grad.dtype())?
                };
            }
        }
        Ok(grad)
    }
}

/// The handle [`Tensor::register_hook`] returns: `remove` takes the hook off again (like
/// PyTorch's `RemovableHandle`). Dropping the handle keeps the hook.
pub struct HookHandle {
    /// The list the hook is in (a leaf's own, or a non-leaf's op record's).
    pub(crate) list: Weak<HookList>,
    pub(crate) id: u64,
}

impl HookHandle {
    /// Take the hook off its tensor.
    pub fn remove(&self) {
        if let Some(list) = self.list.upgrade() {
            list.remove(self.id);
        }
    }
}

impl std::fmt::Debug for HookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HookHandle({})", self.id)
    }
}
