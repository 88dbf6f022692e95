//! Loss functions, as option structs with a `forward(input, target)` method (like
//! `torch.nn.CrossEntropyLoss`; also `L1Loss`, `SmoothL1Loss`, `BceLoss`, `KlDivLoss`) and as plain functions (`cross_entropy`, `mse_loss`, ...).
//! All are composites of tensor ops with PyTorch's exact formulas, so autograd
//! differentiates them.

use anygrad_core::{Error, Result, Tensor};

/// How per-element losses are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduction {
    /// The mean (for cross-entropy with ignored targets: over the targets not ignored).
    #[default]
    Mean,
    /// The sum.
    Sum,
    /// No reduction: one loss per element (or per sample for classification losses).
    None,
}

fn reduce(loss: Tensor, reduction: Reduction) -> Result<Tensor> {
    match reduction {
        Reduction::Mean => loss.mean_all(),
        Reduction::Sum => loss.sum_all(),
        Reduction::None => Ok(loss),
    }
}

/// Cross-entropy between logits `[n, c]` (or `[n, c, d...]`, or `[c]`) and either class
/// indices (an integer tensor `[n]` / `[n, d...]`) or class probabilities (a float tensor
/// shaped like the logits), like `torch.nn.CrossEntropyLoss`.
#[derive(Debug, Clone, Default)]
pub struct CrossEntropyLoss {
    /// How the per-sample losses are combined.
    pub reduction: Reduction,
    /// A rescaling weight per class (`[c]`, PyTorch's `weight`): each sample's loss is
    /// scaled by its target class's weight, and the mean divides by the sum of those
    /// weights over the samples not ignored.
    pub weight: Option<Tensor>,
    /// Mix the target with the uniform distribution: `(1 - ε) * nll + ε * mean_c(-log p_c)`.
    pub label_smoothing: f64,
    /// A class index whose samples contribute nothing (PyTorch uses -100).
    pub ignore_index: Option<i64>,
}

impl CrossEntropyLoss {
    /// Mean reduction, no smoothing, nothing ignored.
    pub fn new() -> CrossEntropyLoss {
        CrossEntropyLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Set label smoothing in `[0, 1]` (builder style).
    pub fn label_smoothing(mut self, label_smoothing: f64) -> Self {
        self.label_smoothing = label_smoothing;
        self
    }

    /// Ignore targets equal to `index` (builder style).
    pub fn ignore_index(mut self, index: i64) -> Self {
        self.ignore_index = Some(index);
        self
    }

    /// Mean reduction with a rescaling weight per class (`[c]`, `torch.nn.CrossEntropyLoss(
    /// weight=...)`).
    pub fn with_weight(weight: Tensor) -> CrossEntropyLoss {
        CrossEntropyLoss {
            weight: Some(weight),
            ..CrossEntropyLoss::default()
        }
    }

    /// The loss of `logits` against `target`.
    pub fn forward(&self, logits: &Tensor, target: &Tensor) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&self.label_smoothing) {
            return Err(Error::invalid(
                "cross_entropy",
                format!(
                    "label_smoothing must be in [0, 1], got {}",
                    self.label_smoothing
                ),
            ));
        }
        let (log_probs, batch_shape) =
            class_last(&logits.log_softmax(if logits.rank() == 1 { 0 } else { 1 })?)?;
        let weight = class_weight("cross_entropy", self.weight.as_ref(), &log_probs)?;
        if target.dtype().is_float() {
            return self.forward_probabilities(
                logits,
                &log_probs,
                target,
                &batch_shape,
                weight.as_ref(),
            );
        }
        class_index_loss(
            "cross_entropy",
            &log_probs,
            target,
            &batch_shape,
            ClassOptions {
                label_smoothing: self.label_smoothing,
                ignore_index: self.ignore_index,
                weight: weight.as_ref(),
                reduction: self.reduction,
            },
        )
    }

    fn forward_probabilities(
        &self,
        logits: &Tensor,
        log_probs: &Tensor,
        target: &Tensor,
        batch_shape: &[usize],
        weight: Option<&Tensor>,
    ) -> Result<Tensor> {
        if target.shape() != logits.shape() {
            return Err(Error::ShapeMismatch {
                op: "cross_entropy",
                lhs: logits.shape().to_vec(),
                rhs: target.shape().to_vec(),
                reason: "probability targets must have the logits' shape".into(),
            });
        }
        let (target, _) = class_last(target)?;
        let classes = log_probs.shape()[1] as f64;
        let target = if self.label_smoothing > 0.0 {
            target
                .mul_scalar(1.0 - self.label_smoothing)?
                .add_scalar(self.label_smoothing / classes)?
        } else {
            target
        };
        let target = match weight {
            Some(weight) => target.mul(&weight.unsqueeze(0)?)?,
            None => target,
        };
        let loss = target.mul(log_probs)?.sum(&[1], false)?.neg()?;
        reduce(loss.reshape(batch_shape.to_vec())?, self.reduction)
    }
}

/// `[n, c, d...]` → `([n * d..., c], [n, d...])`; `[c]` → `([1, c], [])`.
fn class_last(x: &Tensor) -> Result<(Tensor, Vec<usize>)> {
    match x.rank() {
        0 => Err(Error::InvalidShape {
            op: "cross_entropy",
            shape: vec![],
            message: "logits need a class dim".into(),
        }),
        1 => Ok((x.unsqueeze(0)?, vec![])),
        2 => Ok((x.clone(), vec![x.shape()[0]])),
        rank => {
            let mut perm: Vec<usize> = vec![0];
            perm.extend(2..rank);
            perm.push(1);
            let mut batch: Vec<usize> = vec![x.shape()[0]];
            batch.extend(&x.shape()[2..]);
            let rows: usize = batch.iter().product();
            let moved = x.permute(&perm)?.reshape([rows, x.shape()[1]])?;
            Ok((moved, batch))
        }
    }
}

/// The options of `class_index_loss`.
struct ClassOptions<'a> {
    label_smoothing: f64,
    ignore_index: Option<i64>,
    /// Checked `[c]` class weights in the log probabilities' dtype.
    weight: Option<&'a Tensor>,
    reduction: Reduction,
}

/// The class weights as a `[c]` tensor of the log probabilities' dtype and device, checked.
fn class_weight(
    op: &'static str,
    weight: Option<&Tensor>,
    log_probs: &Tensor,
) -> Result<Option<Tensor>> {
    let Some(weight) = weight else {
        return Ok(None);
    };
    let classes = log_probs.shape()[1];
    if weight.shape() != [classes] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: vec![classes],
            rhs: weight.shape().to_vec(),
            reason: "the class weight must be a vector with one entry per class".into(),
        });
    }
    if !weight.dtype().is_float() {
        return Err(Error::invalid(
            op,
            format!(
                "the class weight must be a float tensor, got {}",
                weight.dtype()
            ),
        ));
    }
    Ok(Some(weight.to_dtype(log_probs.dtype())?))
}

/// The shared core of cross-entropy and NLL with class-index targets, on `[m, c]` log
/// probabilities. With class weights, sample `i` counts `w[y_i]` times (its smoothing term
/// uses `Σ_c w_c log p_c`) and the mean divides by `Σ w[y_i]` over the samples kept, as in
/// PyTorch.
fn class_index_loss(
    op: &'static str,
    log_probs: &Tensor,
    target: &Tensor,
    batch_shape: &[usize],
    options: ClassOptions<'_>,
) -> Result<Tensor> {
    if !target.dtype().is_index() {
        return Err(Error::invalid(
            op,
            format!(
                "class targets must be an integer tensor, got {}",
                target.dtype()
            ),
        ));
    }
    if target.shape() != batch_shape {
        return Err(Error::ShapeMismatch {
            op,
            lhs: batch_shape.to_vec(),
            rhs: target.shape().to_vec(),
            reason: "targets must have the input's shape without the class dim".into(),
        });
    }
    let rows = log_probs.shape()[0];
    let target = target.reshape([rows])?;
    // One fused pick per row (`Tensor::class_pick`): row 0 `w[y_i] · log p[i, y_i]`, row 1
    // the weight `w[y_i]` each sample has in the mean (1 without class weights), both 0 where
    // the target is ignored. Only row 0 carries a gradient.
    let picked = log_probs.class_pick(&target, options.weight, options.ignore_index)?;
    let weighted = picked.narrow(0, 0, 1)?.reshape([rows])?;
    let label_smoothing = options.label_smoothing;
    if label_smoothing == 0.0 {
        return match options.reduction {
            Reduction::Mean if options.weight.is_none() && options.ignore_index.is_none() => {
                weighted.mean_all()?.neg()
            }
            Reduction::Mean => {
                // Both rows summed in one reduction; the weights' sum takes no gradient (the
                // pick's row 1 has none).
                let sums = picked.sum(&[1], false)?;
                let total_weight = sums.narrow(0, 1, 1)?.detach();
                sums.narrow(0, 0, 1)?
                    .div(&total_weight)?
                    .neg()?
                    .reshape(Vec::<usize>::new())
            }
            Reduction::Sum => weighted.sum_all()?.neg(),
            Reduction::None => weighted.neg()?.reshape(batch_shape.to_vec()),
        };
    }
    let sample_weight = picked.narrow(0, 1, 1)?.detach().reshape([rows])?;
    // With smoothing each kept sample also pays `-mean_c(w_c · log p_c)`, unscaled by its own
    // weight; ignored samples pay nothing.
    let smooth = match options.weight {
        Some(weight) => log_probs
            .mul(&weight.unsqueeze(0)?)?
            .mean(&[1], false)?
            .neg()?,
        None => log_probs.mean(&[1], false)?.neg()?,
    };
    let smooth = match options.ignore_index {
        Some(index) => smooth.mul(&target.ne_scalar(index as f64)?.to_dtype(smooth.dtype())?)?,
        None => smooth,
    };
    let loss = weighted
        .neg()?
        .mul_scalar(1.0 - label_smoothing)?
        .add(&smooth.mul_scalar(label_smoothing)?)?;
    match options.reduction {
        Reduction::Mean if options.weight.is_none() && options.ignore_index.is_none() => {
            loss.mean_all()
        }
        Reduction::Mean => loss.sum_all()?.div(&sample_weight.sum_all()?),
        Reduction::None => loss.reshape(batch_shape.to_vec()),
        Reduction::Sum => loss.sum_all(),
    }
}

/// Negative log-likelihood of log-probabilities `[n, c]` (or `[n, c, d...]`) at class-index
/// targets, like `torch.nn.NLLLoss`.
#[derive(Debug, Clone, Default)]
pub struct NllLoss {
    /// How the per-sample losses are combined.
    pub reduction: Reduction,
    /// A rescaling weight per class (`[c]`), as in `CrossEntropyLoss::weight`.
    pub weight: Option<Tensor>,
    /// A class index whose samples contribute nothing.
    pub ignore_index: Option<i64>,
}

impl NllLoss {
    /// Mean reduction, nothing ignored.
    pub fn new() -> NllLoss {
        NllLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// The loss of `log_probs` against class indices `target`.
    pub fn forward(&self, log_probs: &Tensor, target: &Tensor) -> Result<Tensor> {
        let (log_probs, batch_shape) = class_last(log_probs)?;
        let weight = class_weight("nll_loss", self.weight.as_ref(), &log_probs)?;
        class_index_loss(
            "nll_loss",
            &log_probs,
            target,
            &batch_shape,
            ClassOptions {
                label_smoothing: 0.0,
                ignore_index: self.ignore_index,
                weight: weight.as_ref(),
                reduction: self.reduction,
            },
        )
    }
}

/// Mean squared error, like `torch.nn.MSELoss`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MseLoss {
    /// How the per-element losses are combined.
    pub reduction: Reduction,
}

impl MseLoss {
    /// Mean reduction.
    pub fn new() -> MseLoss {
        MseLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// `(input - target)²`, reduced.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        reduce(input.sub(target)?.square()?, self.reduction)
    }
}

/// Mean absolute error, like `torch.nn.L1Loss`.
#[derive(Debug, Clone, Copy, Default)]
pub struct L1Loss {
    /// How the per-element losses are combined.
    pub reduction: Reduction,
}

impl L1Loss {
    /// Mean reduction.
    pub fn new() -> L1Loss {
        L1Loss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// `|input - target|`, reduced.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        reduce(input.sub(target)?.abs()?, self.reduction)
    }
}

/// Huber-style smooth L1 loss, like `torch.nn.SmoothL1Loss(beta)`: `0.5 d² / beta` where
/// `d = |input - target| < beta`, else `d - 0.5 beta`; `beta = 0` is the L1 loss.
#[derive(Debug, Clone, Copy)]
pub struct SmoothL1Loss {
    /// How the per-element losses are combined.
    pub reduction: Reduction,
    /// Where the quadratic part turns linear (PyTorch's default 1.0; must be >= 0).
    pub beta: f64,
}

impl Default for SmoothL1Loss {
    fn default() -> Self {
        SmoothL1Loss {
            reduction: Reduction::Mean,
            beta: 1.0,
        }
    }
}

impl SmoothL1Loss {
    /// Mean reduction, `beta = 1`.
    pub fn new() -> SmoothL1Loss {
        SmoothL1Loss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Set `beta` (builder style).
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }

    /// The smooth L1 loss of `input` against `target`, reduced.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        if self.beta.is_nan() || self.beta < 0.0 {
            return Err(Error::invalid(
                "smooth_l1_loss",
                format!("beta must be >= 0, got {}", self.beta),
            ));
        }
        let distance = input.sub(target)?.abs()?;
        if self.beta == 0.0 {
            return reduce(distance, self.reduction);
        }
        let quadratic = distance.square()?.mul_scalar(0.5 / self.beta)?;
        let linear = distance.sub_scalar(0.5 * self.beta)?;
        let loss = Tensor::where_(&distance.lt_scalar(self.beta)?, &quadratic, &linear)?;
        reduce(loss, self.reduction)
    }
}

/// Binary cross-entropy on probabilities, like `torch.nn.BCELoss`:
/// `-(y log x + (1 - y) log(1 - x))` with each log floored at -100 as PyTorch does, so a
/// probability of exactly 0 or 1 gives a finite loss. Inputs must lie in `[0, 1]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BceLoss {
    /// How the per-element losses are combined.
    pub reduction: Reduction,
}

impl BceLoss {
    /// Mean reduction.
    pub fn new() -> BceLoss {
        BceLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// The binary cross-entropy of probabilities `input` against `target`, reduced.
    ///
    /// The gradient with respect to `input` is PyTorch's `(x - y) / max(x (1 - x), 1e-12)`,
    /// finite at predictions of exactly 0 or 1 (the clamped logs alone would give `0 · ∞`).
    /// The gradient with respect to `target` is `log(1 - x) - log(x)` with the clamped logs.
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        let x = input.detach();
        let log_p = x.log()?.maximum_scalar(-100.0)?;
        let log_not_p = x.rsub_scalar(1.0)?.log()?.maximum_scalar(-100.0)?;
        let value = target
            .mul(&log_p)?
            .add(&target.rsub_scalar(1.0)?.mul(&log_not_p)?)?
            .neg()?;
        // value + g·x - (g·x)_detached: the same value, with gradient g for the input.
        let slope = x
            .sub(&target.detach())?
            .div(&x.mul(&x.rsub_scalar(1.0)?)?.maximum_scalar(1e-12)?)?;
        let linear = slope.mul(input)?;
        let loss = value.add(&linear.sub(&linear.detach())?)?;
        reduce(loss, self.reduction)
    }
}

/// How `KlDivLoss` combines the per-element terms (PyTorch's `reduction` of `kl_div`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KlReduction {
    /// The mean over every element (PyTorch's default, which it warns about: it does not
    /// give the KL divergence).
    #[default]
    Mean,
    /// The sum divided by the batch size (the first dim): the KL divergence per sample.
    BatchMean,
    /// The sum.
    Sum,
    /// One term per element.
    None,
}

/// Kullback–Leibler divergence, like `torch.nn.KLDivLoss`: `input` holds log-probabilities,
/// `target` probabilities (or log-probabilities with `log_target`); the pointwise term is
/// `target · (log target - input)`, 0 where the target is 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct KlDivLoss {
    /// How the pointwise terms are combined.
    pub reduction: KlReduction,
    /// The target holds log-probabilities.
    pub log_target: bool,
}

impl KlDivLoss {
    /// Mean reduction, probability targets.
    pub fn new() -> KlDivLoss {
        KlDivLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: KlReduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Whether the target holds log-probabilities (builder style).
    pub fn log_target(mut self, log_target: bool) -> Self {
        self.log_target = log_target;
        self
    }

    /// The divergence of the log-probabilities `input` from `target` (same shape).
    pub fn forward(&self, input: &Tensor, target: &Tensor) -> Result<Tensor> {
        if input.shape() != target.shape() {
            return Err(Error::ShapeMismatch {
                op: "kl_div",
                lhs: input.shape().to_vec(),
                rhs: target.shape().to_vec(),
                reason: "target must have the input's shape".into(),
            });
        }
        let pointwise = if self.log_target {
            target.exp()?.mul(&target.sub(input)?)?
        } else {
            // xlogy(t, t): 0 where t = 0 (the log of a safe 1 there keeps gradients finite).
            let positive = target.gt_scalar(0.0)?;
            let safe = Tensor::where_(&positive, target, &target.ones_like()?)?;
            let entropy =
                Tensor::where_(&positive, &target.mul(&safe.log()?)?, &target.zeros_like()?)?;
            entropy.sub(&target.mul(input)?)?
        };
        match self.reduction {
            KlReduction::Mean => pointwise.mean_all(),
            KlReduction::Sum => pointwise.sum_all(),
            KlReduction::None => Ok(pointwise),
            KlReduction::BatchMean => {
                let batch = input.shape().first().copied().unwrap_or(1).max(1);
                pointwise.sum_all()?.div_scalar(batch as f64)
            }
        }
    }
}

/// Binary cross-entropy on logits, like `torch.nn.BCEWithLogitsLoss`, in the stable form
/// `(1 - y) x + w · softplus(-x)` with `w = 1 + (pos_weight - 1) y`; `softplus(z)` is
/// `logsumexp([0, z])`, exact for large |x| and with the right gradient at 0.
#[derive(Debug, Clone, Default)]
pub struct BceWithLogitsLoss {
    /// How the per-element losses are combined.
    pub reduction: Reduction,
    /// Weight of positive examples, broadcast against the last dim (PyTorch's `pos_weight`).
    pub pos_weight: Option<Tensor>,
}

impl BceWithLogitsLoss {
    /// Mean reduction, no positive weight.
    pub fn new() -> BceWithLogitsLoss {
        BceWithLogitsLoss::default()
    }

    /// Set the reduction (builder style).
    pub fn reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Set the positive-class weight (builder style).
    pub fn pos_weight(mut self, pos_weight: Tensor) -> Self {
        self.pos_weight = Some(pos_weight);
        self
    }

    /// The loss of `logits` against targets in `[0, 1]` of the same shape.
    pub fn forward(&self, logits: &Tensor, target: &Tensor) -> Result<Tensor> {
        if logits.shape() != target.shape() {
            return Err(Error::ShapeMismatch {
                op: "binary_cross_entropy_with_logits",
                lhs: logits.shape().to_vec(),
                rhs: target.shape().to_vec(),
                reason: "target must have the logits' shape".into(),
            });
        }
        let target = target.to_dtype(logits.dtype())?;
        let negated = logits.neg()?;
        let zeros = negated.zeros_like()?;
        let softplus = Tensor::stack(&[&zeros, &negated], -1)?.logsumexp(&[-1], false)?;
        let linear = target.rsub_scalar(1.0)?.mul(logits)?;
        let loss = match &self.pos_weight {
            None => linear.add(&softplus)?,
            Some(weight) => {
                let log_weight = weight.sub_scalar(1.0)?.mul(&target)?.add_scalar(1.0)?;
                linear.add(&log_weight.mul(&softplus)?)?
            }
        };
        reduce(loss, self.reduction)
    }
}

/// Mean cross-entropy of logits against class indices (or probabilities).
pub fn cross_entropy(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    CrossEntropyLoss::default().forward(logits, target)
}

/// Negative log-likelihood of log-probabilities at class indices, combined by `reduction`
/// (PyTorch's `F.nll_loss(output, target, reduction=...)`; `Reduction::Mean` is its default).
pub fn nll_loss(log_probs: &Tensor, target: &Tensor, reduction: Reduction) -> Result<Tensor> {
    NllLoss::new()
        .reduction(reduction)
        .forward(log_probs, target)
}

/// Mean squared error.
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    MseLoss::default().forward(input, target)
}

/// Mean binary cross-entropy on logits.
pub fn binary_cross_entropy_with_logits(logits: &Tensor, target: &Tensor) -> Result<Tensor> {
    BceWithLogitsLoss::default().forward(logits, target)
}
