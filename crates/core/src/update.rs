//! Fused in-place training updates: an optimizer's per-parameter arithmetic as one primitive
//! (`Update::sgd_step`), so that a step records one kernel per parameter instead of
//! five elementwise ops and a copy into the parameter (the purpose of PyTorch's fused and
//! foreach optimizers); and mixed precision's gradient unscaling with its inf/NaN check
//! (`Update::unscale`, PyTorch's `_amp_foreach_non_finite_check_and_unscale_`), one
//! kernel per gradient instead of five and a readback of one flag per device. [`SgdStep`] holds the hyper-parameters and [`SgdStep::element`], the
//! rule for one element, which the CPU backend applies as it is and the GPU kernel
//! (`backend/gpu/optimizer/`) spells in WGSL, in the same order of operations.

/// The hyper-parameters of one SGD step, PyTorch's `torch.optim.SGD` rule for a parameter `p`
/// with gradient `grad` and momentum buffer `b`:
///
/// ```text
/// g = grad + weight_decay·p                      (when weight_decay ≠ 0)
/// b = g                                          (first step with momentum)
///   = momentum·b + (1 − dampening)·g             (later steps)
/// g = g + momentum·b  (nesterov)  or  b          (when momentum ≠ 0)
/// p = p − lr·g
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdStep {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0: no buffer).
    pub momentum: f64,
    /// Dampening of the gradient added to the buffer.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// The buffer holds nothing yet: it becomes the gradient.
    pub first: bool,
}

impl SgdStep {
    /// Whether the step reads and writes a momentum buffer.
    pub fn uses_buffer(&self) -> bool {
        self.momentum != 0.0
    }

    /// One element's new `(parameter, buffer)`, in f32 (the arithmetic of the GPU kernel and
    /// of the composite ops on f32 data).
    pub fn element(&self, parameter: f32, gradient: f32, buffer: f32) -> (f32, f32) {
        let hyper = [
            self.lr,
            self.momentum,
            1.0 - self.dampening,
            self.weight_decay,
        ];
        self.apply(hyper.map(|h| h as f32), (parameter, gradient, buffer))
    }

    /// [`SgdStep::element`] in f64 (F64 data).
    pub fn element_f64(&self, parameter: f64, gradient: f64, buffer: f64) -> (f64, f64) {
        let hyper = [
            self.lr,
            self.momentum,
            1.0 - self.dampening,
            self.weight_decay,
        ];
        self.apply(hyper, (parameter, gradient, buffer))
    }

    /// The rule in `T` with the hyper-parameters `[lr, momentum, 1 − dampening, weight decay]`
    /// already in `T`.
    fn apply<T>(
        &self,
        [lr, momentum, keep, decay]: [T; 4],
        (p, gradient, buffer): (T, T, T),
    ) -> (T, T)
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T> + std::ops::Sub<Output = T>,
    {
        let mut g = gradient;
        if self.weight_decay != 0.0 {
            g = g + p * decay;
        }
        let mut next = buffer;
        if self.uses_buffer() {
            next = if self.first {
                g
            } else if self.dampening == 0.0 {
                buffer * momentum + g
            } else {
                buffer * momentum + g * keep
            };
            g = if self.nesterov {
                g + next * momentum
            } else {
                next
            };
        }
        (p - g * lr, next)
    }
}
