//! Fused in-place training updates: an optimizer's per-parameter arithmetic as one primitive
//! (`Update::sgd_step`, `Update::adam_step`), so that a step records one kernel per parameter
//! instead of a chain of elementwise ops and copies into the parameter and its state (the
//! purpose of PyTorch's fused and foreach optimizers); and mixed precision's gradient
//! unscaling with its inf/NaN check (`Update::unscale`, PyTorch's
//! `_amp_foreach_non_finite_check_and_unscale_`), one kernel per gradient instead of five and a
//! readback of one flag per device. [`SgdStep`] and [`AdamStep`] hold the hyper-parameters and
//! the rule for one element, which the CPU backend applies as it is and the GPU kernels
//! (`backend/gpu/optimizer/`) spell in WGSL, in the same order of operations.

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

/// The hyper-parameters of one Adam or AdamW step at step `step` (counted from 1), PyTorch's
/// `torch.optim.Adam` / `AdamW` rule for a parameter `p` with gradient `g`, first moment `m`,
/// second moment `v` and (with `amsgrad`) the running maximum `v̂` of the second moment:
///
/// ```text
/// p = p·(1 − lr·weight_decay)                    (decoupled, AdamW)
/// g = g + weight_decay·p                         (not decoupled, Adam's L2 term)
/// m = β1·m + (1 − β1)·g
/// v = β2·v + (1 − β2)·g²
/// v̂ = max(v̂, v)                                  (amsgrad; the denominator uses v̂)
/// p = p − (lr / (1 − β1^step)) · m / (√v / √(1 − β2^step) + eps)
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the first moment.
    pub beta1: f64,
    /// Decay of the second moment.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay: an L2 term in the gradient, or (with `decoupled`) a shrink of the parameter.
    pub weight_decay: f64,
    /// AdamW's decoupled weight decay.
    pub decoupled: bool,
    /// AMSGrad: the denominator uses the running maximum of the second moment.
    pub amsgrad: bool,
    /// This step's number, from 1 (the bias corrections depend on it).
    pub step: u64,
}

impl AdamStep {
    /// The scalars of the rule in f64: `[lr, β1, 1 − β1, β2, 1 − β2, eps, weight decay,
    /// 1 − lr·weight decay, lr / (1 − β1^step), √(1 − β2^step)]`.
    pub fn scalars(&self) -> [f64; 10] {
        let bias1 = 1.0 - self.beta1.powf(self.step as f64);
        let bias2 = 1.0 - self.beta2.powf(self.step as f64);
        [
            self.lr,
            self.beta1,
            1.0 - self.beta1,
            self.beta2,
            1.0 - self.beta2,
            self.eps,
            self.weight_decay,
            1.0 - self.lr * self.weight_decay,
            self.lr / bias1,
            bias2.sqrt(),
        ]
    }

    /// One element's new `(parameter, m, v, v̂)` in f32 (the arithmetic of the GPU kernel);
    /// `maximum` is ignored without `amsgrad`.
    pub fn element(&self, p: f32, g: f32, m: f32, v: f32, maximum: f32) -> (f32, f32, f32, f32) {
        let scalars = self.scalars().map(|s| s as f32);
        self.apply(scalars, (p, g, m, v, maximum), f32::sqrt, f32::max)
    }

    /// [`AdamStep::element`] in f64 (F64 data).
    pub fn element_f64(
        &self,
        p: f64,
        g: f64,
        m: f64,
        v: f64,
        maximum: f64,
    ) -> (f64, f64, f64, f64) {
        self.apply(self.scalars(), (p, g, m, v, maximum), f64::sqrt, f64::max)
    }

    /// The rule in `T` with [`AdamStep::scalars`] already in `T` (computed once per tensor by
    /// the CPU backend).
    pub(crate) fn apply<T>(
        &self,
        [_lr, beta1, keep1, beta2, keep2, eps, decay, shrink, step_size, bias2_root]: [T; 10],
        (p, gradient, m, v, maximum): (T, T, T, T, T),
        sqrt: impl Fn(T) -> T,
        max: impl Fn(T, T) -> T,
    ) -> (T, T, T, T)
    where
        T: Copy
            + std::ops::Add<Output = T>
            + std::ops::Mul<Output = T>
            + std::ops::Sub<Output = T>
            + std::ops::Div<Output = T>,
    {
        let mut current = p;
        let mut g = gradient;
        if self.weight_decay != 0.0 {
            if self.decoupled {
                current = p * shrink;
            } else {
                g = g + p * decay;
            }
        }
        let m = m * beta1 + g * keep1;
        let v = v * beta2 + g * g * keep2;
        let maximum = if self.amsgrad {
            max(maximum, v)
        } else {
            maximum
        };
        let second = if self.amsgrad { maximum } else { v };
        let denominator = sqrt(second) / bias2_root + eps;
        (current - m / denominator * step_size, m, v, maximum)
    }
}
