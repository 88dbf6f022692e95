//! `Sequential`: modules applied in order, named `"0"`, `"1"`, ... like PyTorch, so a
//! `Sequential` holding a `Linear` first reports `0.weight` and `0.bias`. Children can also be
//! given names (`add_named`, like `nn.Sequential(OrderedDict(...))`), so a PyTorch model made
//! of named `nn.Sequential` blocks (`features.0.weight`, `classifier.1.bias`) is rebuilt
//! without writing a module type for it.

use anygrad_core::{Result, Tensor};

use crate::module::{child_prefix, Kind, Module, Parameter};

/// A chain of modules, like `torch.nn.Sequential`.
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Module>>,
    /// The child names used in parameter names: the index, or the name given to `add_named`.
    names: Vec<String>,
}

impl std::fmt::Debug for Sequential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sequential")
            .field("len", &self.layers.len())
            .finish()
    }
}

impl Sequential {
    /// An empty chain.
    pub fn new() -> Sequential {
        Sequential::default()
    }

    /// Append a module (builder style: `Sequential::new().add(a).add(b)`).
    #[allow(clippy::should_implement_trait)] // a builder, not arithmetic (candle's name too)
    pub fn add<M: Module + 'static>(mut self, module: M) -> Sequential {
        self.push_boxed(Box::new(module));
        self
    }

    /// Append a module whose parameters are named `name.<its names>` instead of by its index
    /// (builder style; PyTorch's `nn.Sequential(OrderedDict([(name, module), ...]))`).
    pub fn add_named<M: Module + 'static>(mut self, name: &str, module: M) -> Sequential {
        self.layers.push(Box::new(module));
        self.names.push(name.to_string());
        self
    }

    /// Append a module.
    pub fn push<M: Module + 'static>(&mut self, module: M) {
        self.push_boxed(Box::new(module));
    }

    /// Append a boxed module.
    pub fn push_boxed(&mut self, module: Box<dyn Module>) {
        self.names.push(self.layers.len().to_string());
        self.layers.push(module);
    }

    /// The name of the child at `index` (its index, or the name given to `add_named`).
    pub fn child_name(&self, index: usize) -> Option<&str> {
        self.names.get(index).map(String::as_str)
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The module at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.layers.get(index).map(|m| m.as_ref())
    }
}

impl Module for Sequential {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut current = x.clone();
        for layer in &self.layers {
            current = layer.forward(&current)?;
        }
        Ok(current)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        for (name, layer) in self.names.iter().zip(&self.layers) {
            layer.visit(&child_prefix(prefix, name), visitor);
        }
    }

    fn set_training(&self, training: bool) {
        for layer in &self.layers {
            layer.set_training(training);
        }
    }

    fn is_training(&self) -> bool {
        self.layers.iter().all(|l| l.is_training())
    }

    fn visit_children<'a>(&'a self, visitor: &mut dyn FnMut(&str, &'a dyn Module)) {
        for (name, layer) in self.names.iter().zip(&self.layers) {
            visitor(name, layer.as_ref());
        }
    }
}
