//! Forward and backward hooks, like PyTorch's `register_forward_pre_hook`,
//! `register_forward_hook` and `register_full_backward_hook` (output side).
//!
//! A Rust module has no slot for hooks, so they live on a wrapper: [`Hooked<M>`] holds a
//! module and its hooks, and is itself a module that reports the inner module's tensors
//! under the same names (wrapping a field keeps the state dict unchanged). Hooks are
//! registered through `&self` (modules are shared immutably) and removed with the
//! [`HookHandle`] registration returns.
//!
//! - A **forward pre-hook** sees the input and may replace it.
//! - A **forward hook** sees the module, the input and the output, and may replace the output
//!   (feature extraction, activation statistics).
//! - A **backward hook** sees the gradient of the module's output when backward reaches it
//!   and may replace it (gradient inspection or clipping per layer). It is put in place by
//!   passing the output through an identity custom op (`anygrad_core::custom_op`) whose
//!   backward runs the hooks, so it costs one copy of the output and needs an f32 output;
//!   outputs that do not require a gradient (evaluation, `no_grad`) are left untouched.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anygrad_core::custom_op::{apply, CustomOp};
use anygrad_core::{Result, Tensor};

use crate::module::{Kind, Module, Parameter};

/// `fn(module, input) -> replacement input`.
type PreHook<M> = Arc<dyn Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// `fn(module, input, output) -> replacement output`.
type ForwardHook<M> = Arc<dyn Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// `fn(grad_output) -> replacement grad_output`.
type BackwardHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// Returned by registration; pass it to [`Hooked::remove_hook`] to remove that hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HookHandle(u64);

/// A registry of hooks of one kind, in registration order.
struct Registry<H> {
    hooks: Mutex<Vec<(u64, H)>>,
}

impl<H: Clone> Registry<H> {
    fn new() -> Self {
        Registry {
            hooks: Mutex::new(Vec::new()),
        }
    }

    fn add(&self, id: u64, hook: H) {
        self.hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, hook));
    }

    fn remove(&self, id: u64) -> bool {
        let mut hooks = self.hooks.lock().unwrap_or_else(|p| p.into_inner());
        let before = hooks.len();
        hooks.retain(|(i, _)| *i != id);
        hooks.len() != before
    }

    /// A copy of the hooks, so that none is called under the lock (a hook may register
    /// another).
    fn snapshot(&self) -> Vec<H> {
        self.hooks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(_, h)| h.clone())
            .collect()
    }
}

/// A module with forward and backward hooks; a module itself, with the inner module's
/// parameter names, mode and children.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use anygrad_core::{Device, DType, Tensor};
/// use anygrad_nn::{Hooked, Linear, Module};
/// let layer = Hooked::new(Linear::new(3, 2, true, &Device::Cpu)?);
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let record = seen.clone();
/// let handle = layer.register_forward_hook(move |_, _, output| {
///     record.lock().unwrap().push(output.shape().to_vec());
///     Ok(None)
/// });
/// layer.forward(&Tensor::ones(&[4, 3], DType::F32, &Device::Cpu)?)?;
/// assert_eq!(*seen.lock().unwrap(), vec![vec![4, 2]]);
/// assert!(layer.remove_hook(handle));
/// assert_eq!(layer.named_parameters()[0].0, "weight");
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub struct Hooked<M> {
    inner: M,
    next_id: AtomicU64,
    pre: Registry<PreHook<M>>,
    forward: Registry<ForwardHook<M>>,
    backward: Registry<BackwardHook>,
}

impl<M> std::fmt::Debug for Hooked<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooked")
            .field("module", &std::any::type_name::<M>())
            .field("forward_pre_hooks", &self.pre.snapshot().len())
            .field("forward_hooks", &self.forward.snapshot().len())
            .field("backward_hooks", &self.backward.snapshot().len())
            .finish()
    }
}

impl<M: Module> Hooked<M> {
    /// Wrap `module` (no hooks yet).
    pub fn new(module: M) -> Hooked<M> {
        Hooked {
            inner: module,
            next_id: AtomicU64::new(0),
            pre: Registry::new(),
            forward: Registry::new(),
            backward: Registry::new(),
        }
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Unwrap (dropping the hooks).
    pub fn into_inner(self) -> M {
        self.inner
    }

    fn next_handle(&self) -> HookHandle {
        HookHandle(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Run `hook(module, input)` before every forward; returning `Some(tensor)` replaces the
    /// input (PyTorch's `register_forward_pre_hook`).
    pub fn register_forward_pre_hook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        let handle = self.next_handle();
        self.pre.add(handle.0, Arc::new(hook));
        handle
    }

    /// Run `hook(module, input, output)` after every forward; returning `Some(tensor)`
    /// replaces the output (PyTorch's `register_forward_hook`).
    pub fn register_forward_hook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        let handle = self.next_handle();
        self.forward.add(handle.0, Arc::new(hook));
        handle
    }

    /// Run `hook(grad_output)` when backward reaches the gradient of this module's output;
    /// returning `Some(tensor)` (same shape) replaces the gradient passed on to the module's
    /// backward (the output side of PyTorch's `register_full_backward_hook`). Applies to
    /// outputs produced after registration; needs an f32 output (see the module docs).
    pub fn register_backward_hook<F>(&self, hook: F) -> HookHandle
    where
        F: Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    {
        let handle = self.next_handle();
        self.backward.add(handle.0, Arc::new(hook));
        handle
    }

    /// Remove the hook registered under `handle`; false when it was already removed.
    pub fn remove_hook(&self, handle: HookHandle) -> bool {
        self.pre.remove(handle.0) || self.forward.remove(handle.0) || self.backward.remove(handle.0)
    }
}

/// The identity op whose backward runs the backward hooks on the output gradient.
struct GradientHooks {
    hooks: Vec<BackwardHook>,
}

impl CustomOp for GradientHooks {
    fn name(&self) -> &str {
        "backward_hook"
    }

    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(shapes[0].to_vec())
    }

    fn cpu_forward(&self, inputs: &[&[f32]], _shapes: &[&[usize]]) -> Result<Vec<f32>> {
        Ok(inputs[0].to_vec())
    }

    fn wgsl(&self) -> Option<String> {
        Some("fn compute(i: u32) -> f32 {\n    return input0[i];\n}\n".to_string())
    }

    fn backward(&self, _inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let mut grad = grad_output.clone();
        for hook in &self.hooks {
            if let Some(replacement) = hook(&grad)? {
                if replacement.shape() != grad.shape() {
                    return Err(anygrad_core::Error::invalid(
                        "backward hook",
                        format!(
                            "a hook returned a gradient of shape {:?} for an output of shape {:?}",
                            replacement.shape(),
                            grad.shape()
                        ),
                    ));
                }
                grad = replacement;
            }
        }
        Ok(vec![Some(grad)])
    }
}

impl<M: Module> Module for Hooked<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut input = x.clone();
        for hook in self.pre.snapshot() {
            if let Some(replacement) = hook(&self.inner, &input)? {
                input = replacement;
            }
        }
        let mut output = self.inner.forward(&input)?;
        for hook in self.forward.snapshot() {
            if let Some(replacement) = hook(&self.inner, &input, &output)? {
                output = replacement;
            }
        }
        let backward = self.backward.snapshot();
        if !backward.is_empty() && output.requires_grad() {
            output = apply(Arc::new(GradientHooks { hooks: backward }), &[&output])?;
        }
        Ok(output)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.inner.visit(prefix, visitor)
    }

    fn set_training(&self, training: bool) {
        self.inner.set_training(training)
    }

    fn is_training(&self) -> bool {
        self.inner.is_training()
    }

    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        self.inner.visit_children(visitor)
    }
}
