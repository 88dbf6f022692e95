//! The `Module` trait and `Parameter`, the slot that holds a module's learnable tensors and
//! buffers.
//!
//! # Design
//!
//! A core [`Tensor`] is an immutable handle (`Arc`) to storage. A module must nevertheless be
//! able to *replace* its tensors: moving to another device creates new storage, and loading a
//! checkpoint may too. So every learnable tensor and every buffer lives in a [`Parameter`]: a
//! shared, swappable slot (`Arc<RwLock<Tensor>>`). Cloning a `Parameter` clones the handle to
//! the same slot, which is how optimizers refer to the parameters they update: after
//! `module.to_device(..)` the optimizer's handles see the moved tensors.
//!
//! Updates that keep the storage (optimizer steps, checkpoint loads, BatchNorm's running
//! statistics) go through [`Tensor::assign`], which copies values in place; so even a plain
//! `Tensor` taken from `parameter.tensor()` stays valid across them. Only `to_device` swaps
//! the tensor (create optimizers after moving the model, as in PyTorch).
//!
//! Names follow PyTorch's `state_dict` exactly: a module reports its own tensors under
//! `prefix + name` and its children under `prefix + child_name + "."`, so a ResNet yields
//! `layer1.0.conv1.weight` and a `Sequential` yields `0.weight`.

use std::any::Any;
use std::sync::{Arc, RwLock};

use anygrad_core::{Device, Error, Result, Tensor};

/// Whether a visited tensor is learnable or a buffer (running statistics, counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A learnable tensor (`requires_grad`), updated by optimizers.
    Parameter,
    /// State that is saved and moved with the module but not learned (BatchNorm's
    /// `running_mean`, `running_var`, `num_batches_tracked`).
    Buffer,
}

/// A shared, swappable slot holding one tensor of a module (a parameter or a buffer).
#[derive(Clone)]
pub struct Parameter {
    slot: Arc<RwLock<Tensor>>,
}

impl std::fmt::Debug for Parameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tensor = self.tensor();
        f.debug_struct("Parameter")
            .field("shape", &tensor.shape())
            .field("dtype", &tensor.dtype())
            .field("device", &tensor.device().to_string())
            .field("requires_grad", &tensor.requires_grad())
            .finish()
    }
}

impl Parameter {
    /// A learnable parameter: the tensor is detached from any graph and marked
    /// `requires_grad`.
    pub fn new(tensor: Tensor) -> Parameter {
        Parameter {
            slot: Arc::new(RwLock::new(tensor.detach().requires_grad_(true))),
        }
    }

    /// A buffer: saved and moved with the module, never given a gradient.
    pub fn buffer(tensor: Tensor) -> Parameter {
        Parameter {
            slot: Arc::new(RwLock::new(tensor.detach())),
        }
    }

    /// The current tensor (a cheap handle clone). Use it in `forward`.
    pub fn tensor(&self) -> Tensor {
        self.slot.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replace the tensor in the slot (keeps the `requires_grad` flag of the old tensor).
    pub fn set(&self, tensor: Tensor) {
        let mut guard = self.slot.write().unwrap_or_else(|p| p.into_inner());
        let requires_grad = guard.requires_grad();
        *guard = tensor.detach().requires_grad_(requires_grad);
    }

    /// Copy `values` into the current tensor's storage, in place and outside autograd
    /// (shape, dtype and device must match).
    pub fn assign(&self, values: &Tensor) -> Result<()> {
        self.tensor().assign(values)
    }

    /// The accumulated gradient, if any.
    pub fn grad(&self) -> Option<Tensor> {
        self.tensor().grad()
    }

    /// Replace the accumulated gradient.
    pub fn set_grad(&self, grad: Option<Tensor>) {
        self.tensor().set_grad(grad)
    }

    /// Clear the accumulated gradient.
    pub fn zero_grad(&self) {
        self.tensor().zero_grad()
    }

    /// The tensor's shape.
    pub fn shape(&self) -> Vec<usize> {
        self.tensor().shape().to_vec()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.tensor().numel()
    }

    /// Move to `device` (swaps the tensor; the gradient is dropped). A no-op when already
    /// there.
    pub fn to_device(&self, device: &Device) -> Result<()> {
        let current = self.tensor();
        if current.device() == device {
            return Ok(());
        }
        let moved = current.detach().to_device(device)?;
        self.set(moved);
        Ok(())
    }

    /// True when two handles refer to the same slot.
    pub fn same_slot(&self, other: &Parameter) -> bool {
        Arc::ptr_eq(&self.slot, &other.slot)
    }
}

/// Join a dotted prefix and a name (`("layer1.0.", "conv1")` → `layer1.0.conv1`).
pub fn join_name(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// Prefix for a child module (`("layer1.", "0")` → `layer1.0.`).
pub fn child_prefix(prefix: &str, child: &str) -> String {
    format!("{prefix}{child}.")
}

/// A neural-network building block, like `torch.nn.Module`.
///
/// Implementors provide `forward` and `visit` (their own tensors plus their children's);
/// containers and layers with train/eval behaviour also override `set_training`, and
/// containers override `visit_children` so that [`Module::named_modules`] and
/// [`Module::apply`] reach their submodules. Every other helper (`named_parameters`,
/// `to_device`, `zero_grad`, ...) is provided. `#[derive(Module)]` (see
/// [`crate::ModuleField`]) writes `visit`, `set_training`, `is_training` and
/// `visit_children` from a struct's fields, so a custom module only writes `forward`.
///
/// Modules are `Any`, so a `&dyn Module` met in [`Module::apply`] can be inspected with
/// [`downcast_module`].
pub trait Module: Any + Send + Sync {
    /// Apply the module to one input.
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// Call `visitor(full_name, slot, kind)` for every parameter and buffer, in
    /// registration order, with names starting with `prefix` (`""` at the top; children get
    /// `"child."` appended, see [`child_prefix`]).
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind));

    /// Switch train/eval behaviour (Dropout, BatchNorm). Containers forward it to children;
    /// the default does nothing (layers without mode-dependent behaviour).
    fn set_training(&self, training: bool) {
        let _ = training;
    }

    /// Whether the module is in training mode (default `true` for stateless layers).
    fn is_training(&self) -> bool {
        true
    }

    /// Call `visitor(name, child)` for every direct submodule, in registration order (PyTorch's
    /// `named_children`). Leaves keep the default, which visits nothing.
    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        let _ = visitor;
    }

    /// The direct submodules with their names (PyTorch's `named_children()`).
    fn named_children(&self) -> Vec<(String, &dyn Module)> {
        let mut out = Vec::new();
        self.visit_children(&mut |name, child| out.push((name.to_string(), child)));
        out
    }

    /// This module (named `""`) and every submodule below it with dotted names, parents
    /// before their children (PyTorch's `named_modules()`): a ResNet yields `""`, `conv1`,
    /// ..., `layer1`, `layer1.0`, `layer1.0.conv1`, ...
    fn named_modules(&self) -> Vec<(String, &dyn Module)>
    where
        Self: Sized,
    {
        named_modules_of(self)
    }

    /// Call `f(name, module)` for every submodule and then for this module itself (named
    /// `""`), children before parents like PyTorch's `model.apply(fn)`; the first error stops
    /// the walk and is returned. Use [`downcast_module`] to act on one layer type (custom
    /// initialization of every `Linear`, say).
    fn apply(&self, f: &mut dyn FnMut(&str, &dyn Module) -> Result<()>) -> Result<()>
    where
        Self: Sized,
    {
        apply_to(self, f)
    }

    /// Training mode (PyTorch's `model.train()`).
    fn train(&self) {
        self.set_training(true)
    }

    /// Evaluation mode (PyTorch's `model.eval()`).
    fn eval(&self) {
        self.set_training(false)
    }

    /// `(name, slot, kind)` for every parameter and buffer (the state dict's entries).
    fn named_slots(&self) -> Vec<(String, Parameter, Kind)> {
        let mut out = Vec::new();
        self.visit("", &mut |name, slot, kind| {
            out.push((name.to_string(), slot.clone(), kind))
        });
        out
    }

    /// Learnable parameters with their dotted names, as slots (what optimizers take).
    fn named_parameter_slots(&self) -> Vec<(String, Parameter)> {
        self.named_slots()
            .into_iter()
            .filter(|(_, _, kind)| *kind == Kind::Parameter)
            .map(|(name, slot, _)| (name, slot))
            .collect()
    }

    /// Learnable parameters with their dotted names.
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.named_parameter_slots()
            .into_iter()
            .map(|(name, slot)| (name, slot.tensor()))
            .collect()
    }

    /// Learnable parameters (tensor handles).
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// Buffers with their dotted names.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.named_slots()
            .into_iter()
            .filter(|(_, _, kind)| *kind == Kind::Buffer)
            .map(|(name, slot, _)| (name, slot.tensor()))
            .collect()
    }

    /// Every parameter and buffer by name (PyTorch's `state_dict()`, as tensor handles).
    fn state_dict(&self) -> Vec<(String, Tensor)> {
        self.named_slots()
            .into_iter()
            .map(|(name, slot, _)| (name, slot.tensor()))
            .collect()
    }

    /// Total number of learnable scalars.
    fn parameter_count(&self) -> usize {
        self.named_parameter_slots()
            .iter()
            .map(|(_, p)| p.numel())
            .sum()
    }

    /// Clear every parameter's gradient.
    fn zero_grad(&self) {
        self.visit("", &mut |_, slot, kind| {
            if kind == Kind::Parameter {
                slot.zero_grad();
            }
        });
    }

    /// Move every parameter and buffer to `device` (swaps the tensors in their slots).
    fn to_device(&self, device: &Device) -> Result<()> {
        let mut first_error: Option<Error> = None;
        self.visit("", &mut |name, slot, _| {
            if first_error.is_none() {
                if let Err(error) = slot.to_device(device) {
                    first_error = Some(Error::invalid(
                        "Module::to_device",
                        format!("moving `{name}` to {device} failed: {error}"),
                    ));
                }
            }
        });
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl<M: Module + ?Sized> Module for Box<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        (**self).forward(x)
    }
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        (**self).visit(prefix, visitor)
    }
    fn set_training(&self, training: bool) {
        (**self).set_training(training)
    }
    fn is_training(&self) -> bool {
        (**self).is_training()
    }
    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        (**self).visit_children(visitor)
    }
}

impl<M: Module + ?Sized> Module for Arc<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        (**self).forward(x)
    }
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        (**self).visit(prefix, visitor)
    }
    fn set_training(&self, training: bool) {
        (**self).set_training(training)
    }
    fn is_training(&self) -> bool {
        (**self).is_training()
    }
    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        (**self).visit_children(visitor)
    }
}

/// [`Module::named_modules`] for any module, trait objects included: `(name, module)` for
/// `root` (named `""`) and every submodule, parents first.
pub fn named_modules_of(root: &dyn Module) -> Vec<(String, &dyn Module)> {
    fn walk<'a>(prefix: &str, module: &'a dyn Module, out: &mut Vec<(String, &'a dyn Module)>) {
        out.push((prefix.to_string(), module));
        let mut children: Vec<(String, &'a dyn Module)> = Vec::new();
        module.visit_children(&mut |name, child| children.push((name.to_string(), child)));
        for (name, child) in children {
            let full = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            walk(&full, child, out);
        }
    }
    let mut out = Vec::new();
    walk("", root, &mut out);
    out
}

/// [`Module::apply`] for any module, trait objects included: `f(name, module)` for every
/// submodule, each module's children (in order) before the module itself, `root` last
/// (named `""`), like PyTorch's `apply`.
pub fn apply_to(
    root: &dyn Module,
    f: &mut dyn FnMut(&str, &dyn Module) -> Result<()>,
) -> Result<()> {
    fn walk(
        prefix: &str,
        module: &dyn Module,
        f: &mut dyn FnMut(&str, &dyn Module) -> Result<()>,
    ) -> Result<()> {
        for (name, child) in module.named_children() {
            let full = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}.{name}")
            };
            walk(&full, child, f)?;
        }
        f(prefix, module)
    }
    walk("", root, f)
}

/// `module` as a `T` when it is one (through any number of `Box`/`Arc` layers it is not: pass
/// the module itself, as [`Module::visit_children`] does).
///
/// ```
/// use anygrad_core::Device;
/// use anygrad_nn::module::downcast_module;
/// use anygrad_nn::{Linear, Module, ReLU, Sequential};
/// let model = Sequential::new().add(Linear::new(2, 3, true, &Device::Cpu)?).add(ReLU);
/// let linears = model
///     .named_modules()
///     .into_iter()
///     .filter(|(_, m)| downcast_module::<Linear>(*m).is_some())
///     .count();
/// assert_eq!(linears, 1);
/// # Ok::<(), anygrad_core::Error>(())
/// ```
pub fn downcast_module<T: Module>(module: &dyn Module) -> Option<&T> {
    let any: &dyn Any = module;
    any.downcast_ref::<T>()
}

/// A train/eval flag usable through `&self` (modules are shared immutably).
#[derive(Debug)]
pub struct TrainingFlag(std::sync::atomic::AtomicBool);

impl Default for TrainingFlag {
    fn default() -> Self {
        TrainingFlag(std::sync::atomic::AtomicBool::new(true))
    }
}

impl TrainingFlag {
    /// Current mode.
    pub fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Set the mode.
    pub fn set(&self, training: bool) {
        self.0.store(training, std::sync::atomic::Ordering::Relaxed)
    }
}
