//! `GradScaler`: dynamic loss scaling for mixed-precision training, like
//! `torch.cuda.amp.GradScaler`. f16 gradients of small magnitude underflow to zero; scaling the
//! loss by `S` before `backward` keeps them representable, and dividing the gradients by `S`
//! before the optimizer step restores their value. When a step produces inf/NaN gradients the
//! step is skipped and `S` shrinks (`backoff`); after `growth_interval` good steps `S` grows.
//!
//! No step waits for the GPU. Unscaling sets one inf/NaN flag per device on the device; the
//! optimizer's step reads that flag there (`Optimizer::step_unless_found`: SGD's fused kernel
//! returns at once where it is set; other optimizers read it back first); `update` starts
//! copying the flags to the host and returns; the scale's change is applied when the scale is
//! next needed (`scale`, `unscale`, `scale_value`), by when the GPU is long past the flags. The
//! scale each step uses is therefore exactly the one PyTorch's scaler would use.

use std::sync::{Mutex, MutexGuard};

use anygrad_core::{no_grad, DType, Device, PendingRead, Result, Tensor};

use crate::optim::Optimizer;

/// Whether two tensors may share an element: the same storage, and (for contiguous views)
/// intersecting ranges of it.
fn overlaps(a: &Tensor, b: &Tensor) -> bool {
    if !a.same_storage(b) {
        return false;
    }
    if !(a.is_contiguous() && b.is_contiguous()) {
        return true;
    }
    let (a_start, b_start) = (a.layout().offset, b.layout().offset);
    a_start < b_start + b.numel() && b_start < a_start + a.numel()
}

/// Dynamic loss scaler.
#[derive(Debug)]
pub struct GradScaler {
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: usize,
    /// The scale and its history, up to date once the pending flags are applied.
    state: Mutex<ScaleState>,
    /// This step's inf/NaN flags, one per device (set by `unscale`, read after `update`).
    flags: Vec<(Device, Tensor)>,
    unscaled: bool,
}

/// The part of [`GradScaler`] that a pending step's flags change.
#[derive(Debug)]
struct ScaleState {
    scale: f64,
    good_steps: usize,
    skipped_steps: usize,
    /// The last updated step's flags on their way to the host (the read is `None` where it
    /// could not be started: the flag is then read directly); `None` once applied.
    pending: Option<Vec<(Tensor, Option<PendingRead>)>>,
}

impl ScaleState {
    /// Apply the pending step's flags: back off after an overflow, grow after
    /// `growth_interval` good steps. Reads the flags (waiting for their copies).
    fn settle(
        &mut self,
        growth_factor: f64,
        backoff_factor: f64,
        growth_interval: usize,
    ) -> Result<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let mut found_inf = false;
        for (flag, read) in pending {
            let value = match read {
                Some(read) => read.wait()?.first().copied().unwrap_or(0.0),
                None => flag.item_f64()?,
            };
            found_inf |= value != 0.0;
        }
        if found_inf {
            self.scale *= backoff_factor;
            self.good_steps = 0;
            self.skipped_steps += 1;
        } else {
            self.good_steps += 1;
            if self.good_steps >= growth_interval {
                self.scale *= growth_factor;
                self.good_steps = 0;
            }
        }
        Ok(())
    }
}

/// Divide each distinct gradient of `grads` by `scale` in place (one kernel each,
/// `Tensor::unscale_`) and collect, on each device, whether any was inf or NaN: the flags
/// (U32 `[1]`, nonzero after an overflow) are returned one per device, nothing is read back.
/// One tensor handed to several parameters (autograd may do that) is divided once; a gradient
/// overlapping another in any other way is copied first (before anything is divided) and the
/// copy, divided, is handed to `replace` with its index, for the caller to make it that
/// parameter's gradient; disjoint rows of one tensor (a batch norm's two gradients) are
/// divided where they are. `GradScaler::unscale` and the Python package's scaler share it.
pub fn unscale_gradients(
    grads: &[Tensor],
    scale: f64,
    mut replace: impl FnMut(usize, Tensor),
) -> Result<Vec<(Device, Tensor)>> {
    let _guard = no_grad();
    let mut distinct: Vec<Tensor> = Vec::new();
    for (index, grad) in grads.iter().enumerate() {
        let same = |other: &Tensor| other.same_storage(grad) && other.layout() == grad.layout();
        if distinct.iter().any(same) {
            continue;
        }
        if distinct.iter().any(|other| overlaps(other, grad)) {
            let copy = grad.copy()?;
            replace(index, copy.clone());
            distinct.push(copy);
        } else {
            distinct.push(grad.clone());
        }
    }
    let mut flags: Vec<(Device, Tensor)> = Vec::new();
    for grad in &distinct {
        let flag = match flags.iter().find(|(device, _)| device == grad.device()) {
            Some((_, flag)) => flag.clone(),
            None => {
                let flag = Tensor::zeros(&[1], DType::U32, grad.device())?;
                flags.push((grad.device().clone(), flag.clone()));
                flag
            }
        };
        grad.unscale_(scale, &flag)?;
    }
    Ok(flags)
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new(65536.0, 2.0, 0.5, 2000)
    }
}

impl Clone for GradScaler {
    /// A scaler with the same settings and scale (the pending step's flags applied first);
    /// this step's flags are shared with the original.
    fn clone(&self) -> Self {
        let state = self.settled_or_warn();
        let scale = ScaleState {
            scale: state.scale,
            good_steps: state.good_steps,
            skipped_steps: state.skipped_steps,
            pending: None,
        };
        drop(state);
        GradScaler {
            growth_factor: self.growth_factor,
            backoff_factor: self.backoff_factor,
            growth_interval: self.growth_interval,
            state: Mutex::new(scale),
            flags: self.flags.clone(),
            unscaled: self.unscaled,
        }
    }
}

impl GradScaler {
    /// A scaler with PyTorch's parameter names: initial scale, growth and backoff factors,
    /// and the number of good steps between growths.
    pub fn new(
        init_scale: f64,
        growth_factor: f64,
        backoff_factor: f64,
        growth_interval: usize,
    ) -> GradScaler {
        GradScaler {
            growth_factor,
            backoff_factor,
            growth_interval: growth_interval.max(1),
            state: Mutex::new(ScaleState {
                scale: init_scale,
                good_steps: 0,
                skipped_steps: 0,
                pending: None,
            }),
            flags: Vec::new(),
            unscaled: false,
        }
    }

    /// The state with the pending step's flags applied (reading them).
    fn settled(&self) -> Result<MutexGuard<'_, ScaleState>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.settle(
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        )?;
        Ok(state)
    }

    /// [`GradScaler::settled`] for the accessors that return plain values: a flag that cannot
    /// be read (a lost device, which every later op reports too) counts as an overflow.
    fn settled_or_warn(&self) -> MutexGuard<'_, ScaleState> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(error) = state.settle(
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        ) {
            tracing::warn!(
                "GradScaler: reading the inf/NaN flags failed ({error}); counted as an overflow"
            );
            state.pending = None;
            state.scale *= self.backoff_factor;
            state.good_steps = 0;
            state.skipped_steps += 1;
        }
        state
    }

    /// The current scale (reads the last updated step's flags, waiting for their copies).
    pub fn scale_value(&self) -> f64 {
        self.settled_or_warn().scale
    }

    /// Steps skipped so far because of inf/NaN gradients (up to the last `update`; reads that
    /// step's flags, waiting for their copies).
    pub fn skipped_steps(&self) -> usize {
        self.settled_or_warn().skipped_steps
    }

    /// `loss * scale`, to call `backward` on.
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        let scale = self.settled()?.scale;
        loss.mul_scalar(scale)
    }

    /// Divide every gradient by the scale (call before clipping) and collect on each device
    /// whether any gradient is inf/NaN, without reading anything back. Idempotent until the
    /// next `update`. Over a data-parallel `ReplicatedOptimizer` every replica's gradients are
    /// unscaled and checked (they are identical, so all replicas agree).
    pub fn unscale(&mut self, optimizer: &dyn Optimizer) -> Result<()> {
        if self.unscaled {
            return Ok(());
        }
        let scale = self.settled()?.scale;
        let slots: Vec<_> = optimizer
            .gradient_slots()
            .into_iter()
            .filter_map(|parameter| parameter.grad().map(|grad| (parameter, grad)))
            .collect();
        let grads: Vec<Tensor> = slots.iter().map(|(_, grad)| grad.clone()).collect();
        let flags = unscale_gradients(&grads, scale, |index, copy| {
            slots[index].0.set_grad(Some(copy));
        })?;
        self.flags = flags;
        self.unscaled = true;
        Ok(())
    }

    /// Unscale (if not done yet) and step the optimizer unless a gradient was inf/NaN
    /// (`Optimizer::step_unless_found`: decided on the device where the optimizer can, so
    /// this does not wait for the GPU). Whether the step was skipped shows in
    /// [`GradScaler::skipped_steps`] after `update`.
    pub fn step(&mut self, optimizer: &mut dyn Optimizer) -> Result<()> {
        self.unscale(optimizer)?;
        let flags: Vec<Tensor> = self.flags.iter().map(|(_, flag)| flag.clone()).collect();
        optimizer.step_unless_found(&flags)
    }

    /// End the step: start reading its inf/NaN flags back (without waiting); the scale backs
    /// off after an overflow and grows after `growth_interval` good steps when it is next
    /// used.
    pub fn update(&mut self) {
        let flags = std::mem::take(&mut self.flags);
        self.unscaled = false;
        // A step updated twice (or updated before the last one was applied) is applied first.
        let mut state = self.settled_or_warn();
        let pending = flags
            .into_iter()
            .map(|(_, flag)| {
                // A read that cannot start is read directly when the scale is next needed,
                // where its error is returned.
                let read = flag.read_later().ok();
                (flag, read)
            })
            .collect();
        state.pending = Some(pending);
    }
}
