//! Autocast's casts of parameters, kept between calls: under autocast with no gradient to
//! record (`no_grad` inference), a parameter's f16 copy is made once and reused by every
//! later matmul or convolution that reads it, instead of one cast kernel per layer and call
//! (ResNet-18's inference cast its 21 weights on every forward).
//!
//! - Kept: leaf tensors that require a gradient (a model's parameters), like PyTorch's
//!   autocast cache; other operands (inputs, activations, frozen weights) are cast each time,
//!   so a kept copy never outlives a batch's data.
//! - Valid while the source is alive and no tensor was written in place since the copy was
//!   made ([`crate::mutation_epoch`]: an optimizer step, `assign`, loading weights), so a read
//!   always sees the parameter's current values. Stale copies are released by the next
//!   autocast cast of anything (a training step's first matmul, say), a dropped parameter's
//!   copy the next time a copy is kept; [`clear_autocast_cache`] releases every copy now.
//! - With a gradient to record, the cast is an ordinary recorded op each time (the gradient
//!   flows back to the f32 master weight), as before.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use crate::autograd::is_grad_enabled;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::{mutation_epoch, Tensor, TensorId, TensorInner};

/// The kept copies, all made at one mutation epoch (an in-place write makes every copy stale
/// at once, so they are released together).
struct KeptCopies {
    epoch: u64,
    /// By source tensor and target dtype: the source (weakly) and its copy.
    copies: HashMap<(TensorId, DType), (Weak<TensorInner>, Tensor)>,
}

static KEPT: Mutex<Option<KeptCopies>> = Mutex::new(None);

/// Whether `KEPT` may hold copies (spares the lock on the calls that cannot use them).
static ANY_KEPT: AtomicBool = AtomicBool::new(false);

/// `tensor` in `low` for an op running under autocast: the kept copy where the module header
/// allows one, else a fresh cast (or the tensor itself when it already has that dtype). Stale
/// copies are released on the first call that sees them stale, whatever that call casts.
pub(crate) fn autocast_input(tensor: &Tensor, low: DType) -> Result<Tensor> {
    if tensor.dtype() == low {
        return Ok(tensor.clone());
    }
    let keeps = !is_grad_enabled() && tensor.requires_grad() && tensor.is_leaf();
    if !keeps && !ANY_KEPT.load(Ordering::Relaxed) {
        return tensor.to_dtype(low);
    }
    let key = (tensor.id(), low);
    // Read before casting: a write racing with the cast leaves the copy kept under an older
    // epoch, which only means casting again next time.
    let epoch = mutation_epoch();
    {
        let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if kept.as_ref().is_some_and(|k| k.epoch < epoch) {
            *kept = None;
            ANY_KEPT.store(false, Ordering::Relaxed);
        }
        if let Some((_, copy)) = kept.as_ref().and_then(|k| k.copies.get(&key)) {
            if keeps {
                return Ok(copy.clone());
            }
        }
    }
    let cast = tensor.to_dtype(low)?;
    if !keeps {
        return Ok(cast);
    }
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    let copies = kept.get_or_insert_with(|| KeptCopies {
        epoch,
        copies: HashMap::new(),
    });
    if copies.epoch == epoch {
        copies
            .copies
            .retain(|_, (source, _)| source.strong_count() > 0);
        let source = Arc::downgrade(tensor.inner());
        copies.copies.insert(key, (source, cast.clone()));
        ANY_KEPT.store(true, Ordering::Relaxed);
    }
    Ok(cast)
}

/// Release every parameter copy autocast keeps between calls (see the module header), like
/// PyTorch's `torch.clear_autocast_cache()`: their memory returns to the allocator once no
/// tensor uses them.
pub fn clear_autocast_cache() {
    *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = None;
    ANY_KEPT.store(false, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autograd::no_grad;
    use crate::device::Device;

    /// Whether a copy of the tensor with `id` is kept.
    fn is_kept(id: TensorId) -> bool {
        KEPT.lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|k| k.copies.keys().any(|(kept, _)| *kept == id))
    }

    /// Two casts of `tensor` with no in-place write anywhere in between (other tests write
    /// in place concurrently; a round they disturbed is tried again): the same tensor?
    fn cast_twice_undisturbed(tensor: &Tensor) -> bool {
        for _ in 0..100 {
            let epoch = mutation_epoch();
            let first = autocast_input(tensor, DType::F16).unwrap();
            let second = autocast_input(tensor, DType::F16).unwrap();
            if mutation_epoch() == epoch {
                return first.id() == second.id();
            }
        }
        panic!("in-place writes never paused")
    }

    #[test]
    fn parameters_are_cast_once_while_unchanged() {
        let device = Device::Cpu;
        let weight = Tensor::randn(&[4, 3], DType::F32, &device)
            .unwrap()
            .requires_grad_(true);
        let input = Tensor::randn(&[4, 3], DType::F32, &device).unwrap();
        {
            let _no_grad = no_grad();
            assert!(
                cast_twice_undisturbed(&weight),
                "a parameter's copy is kept"
            );
            assert!(
                !cast_twice_undisturbed(&input),
                "an input is cast each time"
            );
            let kept = autocast_input(&weight, DType::F16).unwrap();
            assert_eq!(kept.dtype(), DType::F16);
            assert_eq!(
                kept.to_vec_f32().unwrap(),
                weight.to_dtype(DType::F16).unwrap().to_vec_f32().unwrap()
            );
            // Written in place: the next cast sees the new values.
            let replacement = Tensor::full(&[4, 3], 2.5, DType::F32, &device).unwrap();
            weight.assign(&replacement).unwrap();
            // Stale now: released by the next call, whatever it casts.
            autocast_input(&input, DType::F16).unwrap();
            assert!(!is_kept(weight.id()), "the stale copy was released");
            let fresh = autocast_input(&weight, DType::F16).unwrap();
            assert_eq!(fresh.to_vec_f32().unwrap(), vec![2.5; 12]);
        }
        // With a gradient to record the cast is a recorded op, not the kept copy.
        let recorded = autocast_input(&weight, DType::F16).unwrap();
        assert!(!recorded.is_leaf(), "the cast is recorded for backward");
        // A dropped source's copy is released when the next copy is kept.
        let id = weight.id();
        assert!(is_kept(id));
        drop((recorded, weight));
        let other = Tensor::randn(&[2], DType::F32, &device)
            .unwrap()
            .requires_grad_(true);
        {
            let _no_grad = no_grad();
            autocast_input(&other, DType::F16).unwrap();
        }
        assert!(!is_kept(id), "the dropped parameter's copy was released");
        assert!(is_kept(other.id()));
    }
}
