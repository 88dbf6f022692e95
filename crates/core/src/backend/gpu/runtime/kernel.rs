//! What the runtime knows of a kernel: the [`Kernel`] trait a family's key type implements
//! (its name, its WGSL, the two per-kernel switches of the pipeline, and the family's
//! catalogue of instantiations), and [`KernelId`],
//! the type-erased key of the pipeline cache: the key's type (its family) and the key's value,
//! compared and hashed through the key type's own `Eq` and `Hash`. So the cache needs no list
//! of the families, and looking a key up allocates nothing.

use std::any::{Any, TypeId};
use std::hash::{Hash, Hasher};

/// A kernel family's key: one compute pipeline, identified by typed fields (dtypes, op,
/// variant), never by a string.
pub(crate) trait Kernel: std::fmt::Debug + Send + Sync + 'static {
    /// The pipeline's label, in error messages and the profiler's per-kernel times.
    fn name(&self) -> String;

    /// The kernel's WGSL (with `enable f16;` first where it needs it).
    fn source(&self) -> String;

    /// Whether the pipeline is built without wgpu's runtime bounds checks: the kernel clamps
    /// or checks every access itself.
    fn is_trusted(&self) -> bool;

    /// Whether the pipeline skips zeroing workgroup memory at each workgroup's start: every
    /// element the kernel reads there it wrote first.
    fn writes_workgroup_memory_first(&self) -> bool;

    /// Every instantiation the family can build (each dtype, op and variant; users' kernels
    /// none, fused programs by samples): the catalogue that the naga test validates and
    /// `anygrad kernels dump` writes out.
    fn catalogue() -> Vec<Self>
    where
        Self: Sized;
}

/// `body` after `enable f16;` where the kernel touches f16 data (which needs `SHADER_F16`).
pub(crate) fn enable_f16_if(uses_f16: bool, body: String) -> String {
    if uses_f16 {
        format!("enable f16;\n{body}")
    } else {
        body
    }
}

/// A [`Kernel`] as the pipeline cache keys it (implemented for every `Kernel` that is
/// `Clone + Eq + Hash`): equal only to a key of the same type and value.
pub(crate) trait KernelId: Kernel {
    /// The key as `Any`, to compare with a key of the same type.
    fn as_any(&self) -> &dyn Any;

    /// Hash the key's type and value.
    fn hash_id(&self, state: &mut dyn Hasher);

    /// Whether `other` is a key of the same type and value.
    fn same_id(&self, other: &dyn KernelId) -> bool;

    /// An owned copy, stored in the cache.
    fn boxed_id(&self) -> Box<dyn KernelId>;
}

impl<K: Kernel + Clone + Eq + Hash> KernelId for K {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn hash_id(&self, mut state: &mut dyn Hasher) {
        TypeId::of::<K>().hash(&mut state);
        self.hash(&mut state);
    }

    fn same_id(&self, other: &dyn KernelId) -> bool {
        other.as_any().downcast_ref::<K>() == Some(self)
    }

    fn boxed_id(&self) -> Box<dyn KernelId> {
        Box::new(self.clone())
    }
}

impl Hash for dyn KernelId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_id(state);
    }
}

impl PartialEq for dyn KernelId {
    fn eq(&self, other: &Self) -> bool {
        self.same_id(other)
    }
}

impl Eq for dyn KernelId {}

#[cfg(test)]
mod tests {
    use super::{Kernel, KernelId};
    use std::collections::HashMap;

    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct First(u32);

    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Second(u32);

    impl Kernel for First {
        fn name(&self) -> String {
            format!("first {}", self.0)
        }
        fn source(&self) -> String {
            String::new()
        }
        fn is_trusted(&self) -> bool {
            false
        }
        fn writes_workgroup_memory_first(&self) -> bool {
            false
        }
        fn catalogue() -> Vec<Self> {
            vec![Self(0)]
        }
    }

    impl Kernel for Second {
        fn name(&self) -> String {
            format!("second {}", self.0)
        }
        fn source(&self) -> String {
            String::new()
        }
        fn is_trusted(&self) -> bool {
            false
        }
        fn writes_workgroup_memory_first(&self) -> bool {
            false
        }
        fn catalogue() -> Vec<Self> {
            vec![Self(0)]
        }
    }

    /// Keys of two families with equal fields are different pipelines; equal keys of one
    /// family are the same, found by reference without a copy.
    #[test]
    fn keys_of_different_families_never_collide() {
        let mut cache: HashMap<Box<dyn KernelId>, &str> = HashMap::new();
        cache.insert(First(1).boxed_id(), "first");
        cache.insert(Second(1).boxed_id(), "second");
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&First(1) as &dyn KernelId), Some(&"first"));
        assert_eq!(cache.get(&Second(1) as &dyn KernelId), Some(&"second"));
        assert_eq!(cache.get(&First(2) as &dyn KernelId), None);
    }
}
