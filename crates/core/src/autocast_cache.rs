//! Autocast's casts of parameters, kept between calls: under autocast with no gradient to
//! record (`no_grad` inference), a parameter's f16 copy is made once and reused by every
//! later matmul or convolution that reads it, instead of one cast kernel per layer and call
//! (ResNet-18's inference cast its 21 weights on every forward).
//!
//! - Kept: leaf tensors that require a gradient (a model's parameters), like PyTorch's
//!   autocast cache; other operands (inputs, activations, frozen weights) are cast each time,
//!   so a kept copy never outlives a batch's data.
//! - Valid while the source is alive and no tensor was written in place since the copy was
//!   made ([`crate::mutation_epoch`]: an optimizer step, `copy_`, loading weights), so a read
//!   always sees the parameter's current values. A copy whose source was dropped is released
//!   the next time a copy is kept; [`clear_autocast_cache`] releases every copy now.
//! - With a gradient to record, the cast is an ordinary recorded op each time (the gradient
//!   flows back to the f32 master weight), as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::autograd::is_grad_enabled;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::{mutation_epoch, Tensor, TensorId, TensorInner};

/// One kept copy: its source (weakly), the mutation epoch it was made at, the copy.
struct Kept {
    source: Weak<TensorInner>,
    epoch: u64,
    cast: Tensor,
}

/// The kept copies by source tensor and target dtype.
static KEPT: Mutex<Option<HashMap<(TensorId, DType), Kept>>> = Mutex::new(None);

/// `tensor` in `low` for an op running under autocast: the kept copy where the module header
/// allows one, else a fresh cast (or the tensor itself when it already has that dtype).
pub(crate) fn autocast_input(tensor: &Tensor, low: DType) -> Result<Tensor> {
    if tensor.dtype() == low {
        return Ok(tensor.clone());
    }
    if is_grad_enabled() || !tensor.requires_grad() || !tensor.is_leaf() {
        return tensor.to_dtype(low);
    }
    let key = (tensor.id(), low);
    // Read before casting: a write racing with the cast leaves an older epoch kept, which
    // only means casting again next time.
    let epoch = mutation_epoch();
    {
        let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = kept.as_ref().and_then(|map| map.get(&key)) {
            if entry.epoch == epoch {
                return Ok(entry.cast.clone());
            }
        }
    }
    let cast = tensor.to_dtype(low)?;
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    let map = kept.get_or_insert_with(HashMap::new);
    map.retain(|_, entry| entry.source.strong_count() > 0);
    map.insert(
        key,
        Kept {
            source: Arc::downgrade(tensor.inner()),
            epoch,
            cast: cast.clone(),
        },
    );
    Ok(cast)
}

/// Release every parameter copy autocast keeps between calls (see the module header), like
/// PyTorch's `torch.clear_autocast_cache()`: their memory returns to the allocator once no
/// tensor uses them.
pub fn clear_autocast_cache() {
    *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = None;
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
            .is_some_and(|map| map.keys().any(|(kept, _)| *kept == id))
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
