//! `ModuleList` and `ModuleDict`: containers that hold submodules for a custom `forward` to
//! use, named like PyTorch's (`blocks.0.weight` for a list, `heads.age.weight` for a dict).
//! Neither has a `forward` of its own (calling it is an error, as in PyTorch, where they
//! have none); train/eval mode, parameter visiting, `named_modules` and `apply` reach every
//! entry.

use anygrad_core::{Error, Result, Tensor};

use crate::module::{child_prefix, Kind, Module, Parameter};

/// A list of submodules, like `torch.nn.ModuleList`: entry `i` names its tensors `i.<name>`.
///
/// ```
/// use anygrad_core::Device;
/// use anygrad_nn::{Linear, Module, ModuleList};
/// let mut blocks = ModuleList::new();
/// for _ in 0..3 {
///     blocks.push(Linear::new(4, 4, true, &Device::Cpu)?);
/// }
/// assert_eq!(blocks.len(), 3);
/// assert_eq!(blocks.named_parameters()[2].0, "1.weight");
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Default)]
pub struct ModuleList {
    modules: Vec<Box<dyn Module>>,
}

impl std::fmt::Debug for ModuleList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleList")
            .field("len", &self.modules.len())
            .finish()
    }
}

impl ModuleList {
    /// An empty list.
    pub fn new() -> ModuleList {
        ModuleList::default()
    }

    /// Append a module.
    pub fn push<M: Module>(&mut self, module: M) {
        self.modules.push(Box::new(module));
    }

    /// Append a boxed module.
    pub fn push_boxed(&mut self, module: Box<dyn Module>) {
        self.modules.push(module);
    }

    /// Append a module (builder style).
    pub fn with<M: Module>(mut self, module: M) -> ModuleList {
        self.push(module);
        self
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The module at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.modules.get(index).map(|m| m.as_ref())
    }

    /// The modules in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.iter().map(|m| m.as_ref())
    }
}

impl Module for ModuleList {
    /// A `ModuleList` has no forward (iterate over it in the parent's `forward`).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "ModuleList::forward",
            format!(
                "a ModuleList of {} modules has no forward of its own (input shape {:?}); \
                 iterate over it in the parent module's forward, or use Sequential",
                self.modules.len(),
                x.shape()
            ),
        ))
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        for (index, module) in self.modules.iter().enumerate() {
            module.visit(&child_prefix(prefix, &index.to_string()), visitor);
        }
    }

    fn set_training(&self, training: bool) {
        for module in &self.modules {
            module.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.modules.iter().all(|m| m.is_training())
    }

    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        for (index, module) in self.modules.iter().enumerate() {
            visitor(&index.to_string(), module.as_ref());
        }
    }
}

/// Submodules by name in insertion order, like `torch.nn.ModuleDict`: entry `key` names its
/// tensors `key.<name>`.
///
/// ```
/// use anygrad_core::Device;
/// use anygrad_nn::{Linear, Module, ModuleDict};
/// let heads = ModuleDict::new()
///     .with("age", Linear::new(8, 1, true, &Device::Cpu)?)?
///     .with("gender", Linear::new(8, 2, true, &Device::Cpu)?)?;
/// assert!(heads.get("age").is_some());
/// assert_eq!(heads.named_parameters()[2].0, "gender.weight");
/// # Ok::<(), anygrad_core::Error>(())
/// ```
#[derive(Default)]
pub struct ModuleDict {
    entries: Vec<(String, Box<dyn Module>)>,
}

impl std::fmt::Debug for ModuleDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleDict")
            .field("keys", &self.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ModuleDict {
    /// An empty dict.
    pub fn new() -> ModuleDict {
        ModuleDict::default()
    }

    /// Insert `module` under `key` (replacing, in place, a module already under it). Keys must
    /// be non-empty and without `.`, since they become parts of dotted parameter names.
    pub fn insert<M: Module>(&mut self, key: &str, module: M) -> Result<()> {
        self.insert_boxed(key, Box::new(module))
    }

    /// Insert a boxed module (see [`ModuleDict::insert`]).
    pub fn insert_boxed(&mut self, key: &str, module: Box<dyn Module>) -> Result<()> {
        if key.is_empty() || key.contains('.') {
            return Err(Error::invalid(
                "ModuleDict::insert",
                format!("key `{key}` must be non-empty and contain no '.'"),
            ));
        }
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = module,
            None => self.entries.push((key.to_string(), module)),
        }
        Ok(())
    }

    /// Insert a module (builder style; see [`ModuleDict::insert`]).
    pub fn with<M: Module>(mut self, key: &str, module: M) -> Result<ModuleDict> {
        self.insert(key, module)?;
        Ok(self)
    }

    /// The module under `key`.
    pub fn get(&self, key: &str) -> Option<&dyn Module> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, m)| m.as_ref())
    }

    /// Remove and return the module under `key`.
    pub fn remove(&mut self, key: &str) -> Option<Box<dyn Module>> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// The keys in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// `(key, module)` in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &dyn Module)> {
        self.entries.iter().map(|(k, m)| (k.as_str(), m.as_ref()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Module for ModuleDict {
    /// A `ModuleDict` has no forward (pick entries by key in the parent's `forward`).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "ModuleDict::forward",
            format!(
                "a ModuleDict (keys {:?}) has no forward of its own (input shape {:?}); pick \
                 entries by key in the parent module's forward",
                self.keys().collect::<Vec<_>>(),
                x.shape()
            ),
        ))
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        for (key, module) in &self.entries {
            module.visit(&child_prefix(prefix, key), visitor);
        }
    }

    fn set_training(&self, training: bool) {
        for (_, module) in &self.entries {
            module.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.entries.iter().all(|(_, m)| m.is_training())
    }

    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        for (key, module) in &self.entries {
            visitor(key, module.as_ref());
        }
    }
}
