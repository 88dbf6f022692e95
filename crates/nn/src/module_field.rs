//! [`ModuleField`]: what `#[derive(Module)]` (the `anygrad-nn-derive` crate) calls for each
//! field of a struct, so that a custom module only writes `forward`.
//!
//! The derive turns
//!
//! ```
//! use anygrad_core::{Device, Result, Tensor};
//! use anygrad_nn::{BatchNorm2d, Conv2d, Conv2dOptions, Linear, Module};
//!
//! #[derive(Module)]
//! struct Net {
//!     conv: Conv2d,          // a submodule: `conv.weight`, `conv.bias`
//!     norm: BatchNorm2d,     // train/eval reaches it: `model.eval()` just works
//!     head: Option<Linear>,  // visited when present
//!     classes: usize,        // plain values are skipped by type
//!     #[module(skip)]
//!     note: std::collections::HashMap<String, String>, // anything else: skip it explicitly
//! }
//!
//! impl Net {
//!     // The derive's `Module::forward` calls this inherent `forward`.
//!     fn forward(&self, x: &Tensor) -> Result<Tensor> {
//!         let x = self.norm.forward(&self.conv.forward(x)?)?.relu()?;
//!         let x = x.mean(&[2, 3], false)?;
//!         match &self.head {
//!             Some(head) => head.forward(&x),
//!             None => Ok(x),
//!         }
//!     }
//! }
//!
//! let device = Device::Cpu;
//! let net = Net {
//!     conv: Conv2d::square(1, 4, 3, Conv2dOptions::default(), &device)?,
//!     norm: BatchNorm2d::new_2d(4, &device)?,
//!     head: Some(Linear::new(4, 2, true, &device)?),
//!     classes: 2,
//!     note: Default::default(),
//! };
//! let names: Vec<String> = net.state_dict().into_iter().map(|(n, _)| n).collect();
//! assert_eq!(names[0], "conv.weight");
//! assert_eq!(names.last().map(String::as_str), Some("head.bias"));
//! net.eval();
//! assert!(!net.norm.is_training());
//! # Ok::<(), anygrad_core::Error>(())
//! ```
//!
//! into `impl Module for Net` whose `visit` reports every field's tensors under the field's
//! name (PyTorch's attribute names), whose `set_training`/`is_training` reach every field,
//! whose `visit_children` lists the submodules, and whose `forward` calls the struct's
//! **inherent** `fn forward(&self, x: &Tensor) -> Result<Tensor>`. A struct without that
//! method does not compile (the derive makes a missing inherent `forward` a type error naming
//! [`DeriveModuleNeedsAnInherentForward`] instead of a silent recursion).
//!
//! ```compile_fail
//! use anygrad_nn::{Linear, Module};
//! #[derive(Module)]
//! struct NoForward {
//!     fc: Linear,
//! }
//! // error: no inherent `forward` (the generated call is ambiguous or mistyped)
//! ```
//!
//! Field attributes: `#[module(skip)]` leaves a field out; `#[module(buffer)]` reports a
//! [`Parameter`] field as a buffer (saved and moved, never learned); `#[module(name = "x")]`
//! uses another name in parameter names. Struct attribute `#[module(crate = "anygrad::nn")]`
//! names the path of this crate when it is only reachable through the `anygrad` facade.
//!
//! A generic struct (`struct Wrapper<M: Module> { inner: M }`) puts the bounds its inherent
//! `forward` needs on the struct's parameters, so that the derived impl has them too.
//!
//! Field types the derive understands are those implementing [`ModuleField`]: every
//! [`Module`], [`Parameter`], [`TrainingFlag`] (set by train/eval: a custom layer with
//! dropout-like behaviour reads it), `Option<T>` and `Vec<T>` of those (a `Vec` names its
//! elements `field.0`, `field.1`, ... like a `ModuleList`), and plain values that carry no
//! tensors (numbers, `bool`, `String`, `Device`, `DType`, `PhantomData`), which are skipped.

use std::marker::PhantomData;

use anygrad_core::{DType, Device, Tensor};

use crate::module::{child_prefix, join_name, Kind, Module, Parameter, TrainingFlag};

/// A struct field that `#[derive(Module)]` knows how to visit and switch between train and
/// eval mode. Implemented for every [`Module`], for [`Parameter`] and [`TrainingFlag`], for
/// `Option` and `Vec` of fields, and (as no-ops) for plain values without tensors.
pub trait ModuleField {
    /// Report this field's tensors: a parameter as `prefix + name`, a submodule's tensors under
    /// `prefix + name + "."`.
    fn visit_field(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    );

    /// Switch train/eval mode (no-op for fields without a mode).
    fn set_training_field(&self, training: bool) {
        let _ = training;
    }

    /// Whether this field is in training mode (`true` for fields without a mode).
    fn is_training_field(&self) -> bool {
        true
    }

    /// Report this field's submodules as children named `name` (or `name.i` for a `Vec`).
    fn visit_children_field<'a>(
        &'a self,
        name: &str,
        visitor: &mut dyn FnMut(&str, &'a dyn Module),
    ) {
        let _ = (name, visitor);
    }
}

impl<M: Module> ModuleField for M {
    fn visit_field(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        self.visit(&child_prefix(prefix, name), visitor);
    }

    fn set_training_field(&self, training: bool) {
        self.set_training(training);
    }

    fn is_training_field(&self) -> bool {
        self.is_training()
    }

    fn visit_children_field<'a>(
        &'a self,
        name: &str,
        visitor: &mut dyn FnMut(&str, &'a dyn Module),
    ) {
        visitor(name, self);
    }
}

impl ModuleField for Parameter {
    fn visit_field(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        visitor(&join_name(prefix, name), self, Kind::Parameter);
    }
}

impl ModuleField for TrainingFlag {
    fn visit_field(
        &self,
        _prefix: &str,
        _name: &str,
        _visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
    }

    fn set_training_field(&self, training: bool) {
        self.set(training);
    }

    fn is_training_field(&self) -> bool {
        self.get()
    }
}

impl<T: ModuleField> ModuleField for Option<T> {
    fn visit_field(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        if let Some(inner) = self {
            inner.visit_field(prefix, name, visitor);
        }
    }

    fn set_training_field(&self, training: bool) {
        if let Some(inner) = self {
            inner.set_training_field(training);
        }
    }

    fn is_training_field(&self) -> bool {
        self.as_ref().is_none_or(ModuleField::is_training_field)
    }

    fn visit_children_field<'a>(
        &'a self,
        name: &str,
        visitor: &mut dyn FnMut(&str, &'a dyn Module),
    ) {
        if let Some(inner) = self {
            inner.visit_children_field(name, visitor);
        }
    }
}

impl<T: ModuleField> ModuleField for Vec<T> {
    fn visit_field(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        let inner_prefix = child_prefix(prefix, name);
        for (index, element) in self.iter().enumerate() {
            element.visit_field(&inner_prefix, &index.to_string(), visitor);
        }
    }

    fn set_training_field(&self, training: bool) {
        for element in self {
            element.set_training_field(training);
        }
    }

    fn is_training_field(&self) -> bool {
        self.iter().all(ModuleField::is_training_field)
    }

    fn visit_children_field<'a>(
        &'a self,
        name: &str,
        visitor: &mut dyn FnMut(&str, &'a dyn Module),
    ) {
        for (index, element) in self.iter().enumerate() {
            element.visit_children_field(&format!("{name}.{index}"), visitor);
        }
    }
}

/// Plain values hold no tensors and have no mode: the derive skips them without an attribute.
macro_rules! plain_fields {
    ($($ty:ty),* $(,)?) => {
        $(
            impl ModuleField for $ty {
                fn visit_field(
                    &self,
                    _prefix: &str,
                    _name: &str,
                    _visitor: &mut dyn FnMut(&str, &Parameter, Kind),
                ) {
                }
            }
        )*
    };
}

plain_fields!(
    bool,
    u8,
    u16,
    u32,
    u64,
    usize,
    i8,
    i16,
    i32,
    i64,
    isize,
    f32,
    f64,
    String,
    &'static str,
    Device,
    DType,
);

impl<T: ?Sized> ModuleField for PhantomData<T> {
    fn visit_field(
        &self,
        _prefix: &str,
        _name: &str,
        _visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
    }
}

/// A field marked `#[module(buffer)]`: a [`Parameter`] (or `Option<Parameter>`) reported as a
/// [`Kind::Buffer`].
pub trait BufferField {
    /// Report the buffer as `prefix + name`.
    fn visit_buffer(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    );
}

impl BufferField for Parameter {
    fn visit_buffer(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        visitor(&join_name(prefix, name), self, Kind::Buffer);
    }
}

impl BufferField for Option<Parameter> {
    fn visit_buffer(
        &self,
        prefix: &str,
        name: &str,
        visitor: &mut dyn FnMut(&str, &Parameter, Kind),
    ) {
        if let Some(buffer) = self {
            buffer.visit_buffer(prefix, name, visitor);
        }
    }
}

/// What `#[derive(Module)]`'s generated `forward` resolves to when the struct has no inherent
/// `forward` method: its return type does not match `Result<Tensor>`, so the mistake is a
/// compile error naming this type rather than a `forward` that calls itself forever.
#[derive(Debug)]
pub struct DeriveModuleNeedsAnInherentForward;

/// The fallback `forward` behind [`DeriveModuleNeedsAnInherentForward`] (used only by the
/// derive's generated code, never called).
pub trait MissingInherentForward {
    /// Never called: only resolved when the inherent `forward` is missing.
    fn forward(&self, input: &Tensor) -> DeriveModuleNeedsAnInherentForward {
        let _ = input;
        DeriveModuleNeedsAnInherentForward
    }
}

impl<T: ?Sized> MissingInherentForward for T {}

/// Paths the derive's generated code names (kept in one place so the derive only needs this
/// crate's path).
#[doc(hidden)]
pub mod derive_support {
    pub use super::{BufferField, MissingInherentForward, ModuleField};
    pub use crate::module::{Kind, Module, Parameter};
    pub use anygrad_core::{Result, Tensor};
}
