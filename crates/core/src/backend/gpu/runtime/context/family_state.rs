//! State a kernel family keeps per device (its switches, counters, a driver's refusal), held
//! by the context without the context naming the family: one value per type, created at its
//! first use ([`GpuContext::family_state`]).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::GpuContext;

/// The families' states of one device, by type.
#[derive(Default)]
pub(crate) struct FamilyStates(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl GpuContext {
    /// The state of type `T` this device keeps for a family, made by `create` at first use.
    /// `create` must not ask for another family state (the map is locked meanwhile).
    pub(crate) fn family_state<T: Any + Send + Sync>(
        &self,
        create: impl FnOnce(&GpuContext) -> T,
    ) -> Arc<T> {
        let mut states = self
            .family_states
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let state = states
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(create(self)));
        match Arc::clone(state).downcast::<T>() {
            Ok(state) => state,
            // The entry of `TypeId::of::<T>()` always holds a `T`.
            Err(_) => unreachable!("family state of the wrong type"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    /// One state per type and device: made once, then the same value.
    #[test]
    fn a_family_state_is_made_once_per_device() {
        let Some(device) = crate::backend::tests::support::gpu_device() else {
            return;
        };
        #[derive(Default)]
        struct Counter(AtomicU32);
        let context = device.context();
        let made = AtomicU32::new(0);
        let first = context.family_state(|_| {
            made.fetch_add(1, Ordering::Relaxed);
            Counter::default()
        });
        first.0.fetch_add(5, Ordering::Relaxed);
        let second = context.family_state(|_| {
            made.fetch_add(1, Ordering::Relaxed);
            Counter::default()
        });
        assert_eq!(second.0.load(Ordering::Relaxed), 5);
        assert_eq!(made.load(Ordering::Relaxed), 1);
    }
}
