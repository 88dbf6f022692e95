//! Normalization layers: `BatchNorm1d`, `BatchNorm2d` (one implementation, [`BatchNorm`],
//! normalizing over every dim except the channel dim 1) and `LayerNorm`. Training-mode batch
//! norm is one autograd node (`batch_norm_training.rs`); `LayerNorm` and `RMSNorm` run one
//! kernel in inference (`Tensor::layer_norm`, `Tensor::rms_norm`); the rest are composites of
//! tensor ops.
//!
//! BatchNorm follows PyTorch exactly: in training it normalizes with the batch's *biased*
//! variance but updates `running_var` with the *unbiased* one; `running = (1 - momentum) *
//! running + momentum * batch_stat` (momentum 0.1; `None` means a cumulative average);
//! `num_batches_tracked` counts training batches; eval mode uses the running statistics.
//! `RMSNorm` (`torch.nn.RMSNorm`) scales by the root mean square, with no centering or bias;
//! `GroupNorm` normalizes each sample's channel groups.

use anygrad_core::{DType, Device, Error, Result, Tensor};

use super::batch_norm_function::{apply_scale_shift, update_running, FoldCache};
use super::batch_norm_training::{batch_norm_training, RunningUpdate};
use crate::module::{join_name, Kind, Module, Parameter, TrainingFlag};

/// Batch normalization over channel dim 1 (`BatchNorm1d` for `[n, c]`/`[n, c, l]`,
/// `BatchNorm2d` for `[n, c, h, w]`).
#[derive(Debug)]
pub struct BatchNorm {
    /// Scale `[c]` (ones at start), when affine.
    pub weight: Option<Parameter>,
    /// Shift `[c]` (zeros at start), when affine.
    pub bias: Option<Parameter>,
    /// Buffer `[c]`: running mean (zeros at start).
    pub running_mean: Parameter,
    /// Buffer `[c]`: running unbiased variance (ones at start).
    pub running_var: Parameter,
    /// Buffer `[]` (int32): number of training batches seen.
    pub num_batches_tracked: Parameter,
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Running-statistics update factor; `None` uses a cumulative average.
    pub momentum: Option<f64>,
    /// Accepted input ranks (2 and 3 for 1d, 4 for 2d).
    ranks: &'static [usize],
    training: TrainingFlag,
    /// The last eval-mode scale and shift and what they were computed from.
    fold_cache: FoldCache,
}

/// `torch.nn.BatchNorm1d`: inputs `[n, c]` or `[n, c, l]`.
pub type BatchNorm1d = BatchNorm;
/// `torch.nn.BatchNorm2d`: inputs `[n, c, h, w]`.
pub type BatchNorm2d = BatchNorm;

impl BatchNorm {
    fn build(
        features: usize,
        affine: bool,
        ranks: &'static [usize],
        device: &Device,
    ) -> Result<BatchNorm> {
        let (weight, bias) = if affine {
            (
                Some(Parameter::new(Tensor::ones(
                    &[features],
                    DType::F32,
                    device,
                )?)),
                Some(Parameter::new(Tensor::zeros(
                    &[features],
                    DType::F32,
                    device,
                )?)),
            )
        } else {
            (None, None)
        };
        Ok(BatchNorm {
            weight,
            bias,
            running_mean: Parameter::buffer(Tensor::zeros(&[features], DType::F32, device)?),
            running_var: Parameter::buffer(Tensor::ones(&[features], DType::F32, device)?),
            num_batches_tracked: Parameter::buffer(Tensor::zeros(&[], DType::I32, device)?),
            eps: 1e-5,
            momentum: Some(0.1),
            ranks,
            training: TrainingFlag::default(),
            fold_cache: FoldCache::new(),
        })
    }

    /// `BatchNorm1d(features)` with affine weight and bias (eps 1e-5, momentum 0.1).
    pub fn new_1d(features: usize, device: &Device) -> Result<BatchNorm> {
        BatchNorm::build(features, true, &[2, 3], device)
    }

    /// `BatchNorm2d(features)` with affine weight and bias (eps 1e-5, momentum 0.1).
    pub fn new_2d(features: usize, device: &Device) -> Result<BatchNorm> {
        BatchNorm::build(features, true, &[4], device)
    }

    /// Like [`BatchNorm::new_1d`]/[`BatchNorm::new_2d`] with `affine` chosen (`rank2d`
    /// selects the 2-D variant).
    pub fn with_affine(
        features: usize,
        affine: bool,
        rank2d: bool,
        device: &Device,
    ) -> Result<BatchNorm> {
        BatchNorm::build(
            features,
            affine,
            if rank2d { &[4] } else { &[2, 3] },
            device,
        )
    }

    /// Set eps (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }

    /// Set momentum (`None`: cumulative moving average), builder style.
    pub fn momentum(mut self, momentum: Option<f64>) -> Self {
        self.momentum = momentum;
        self
    }

    /// Number of channels.
    pub fn num_features(&self) -> usize {
        self.running_mean.numel()
    }

    /// `num_batches_tracked += 1`; returns the new count.
    fn count_batch(&self) -> Result<Tensor> {
        let _guard = anygrad_core::no_grad();
        let tracked = self.num_batches_tracked.tensor();
        let new_count = tracked.add_scalar(1.0)?;
        tracked.assign(&new_count)?;
        Ok(new_count)
    }

    fn update_running_stats(&self, mean: &Tensor, biased_var: &Tensor, count: usize) -> Result<()> {
        let new_count = self.count_batch()?;
        let factor = match self.momentum {
            Some(momentum) => momentum,
            None => 1.0 / new_count.item_f64()?.max(1.0),
        };
        update_running(
            (&self.running_mean.tensor(), &self.running_var.tensor()),
            (mean, biased_var),
            factor,
            count as f64 / (count.max(2) - 1) as f64,
        )
    }
}

impl BatchNorm {
    /// Eval mode as one per-channel affine map, `[c]` each in the parameters' dtype:
    /// `scale = weight / sqrt(running_var + eps)` and `shift = bias - running_mean * scale`
    /// (weight 1 and bias 0 without affine parameters). What eval mode computes is
    /// `x * scale + shift`; a convolution before it can apply both in its store
    /// (`conv_batch_norm`).
    ///
    /// Without gradients to record (under `no_grad`, or parameters that need none) the
    /// result is kept and returned again while nothing it was computed from changed: an
    /// inference loop folds each batch norm once, not five small kernels per forward.
    pub fn eval_scale_shift(&self) -> Result<(Tensor, Tensor)> {
        self.eval_scale_shift_for(DType::F32)
    }

    /// [`BatchNorm::eval_scale_shift`] for an activation of `dtype` (f16 ones for f16).
    fn eval_scale_shift_for(&self, dtype: DType) -> Result<(Tensor, Tensor)> {
        let (weight, bias) = (
            self.weight.as_ref().map(Parameter::tensor),
            self.bias.as_ref().map(Parameter::tensor),
        );
        self.fold_cache.scale_shift(
            &self.running_mean.tensor(),
            &self.running_var.tensor(),
            weight.as_ref(),
            bias.as_ref(),
            self.eps,
            dtype,
        )
    }
}

impl Module for BatchNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let features = self.num_features();
        if !self.ranks.contains(&x.rank()) || x.shape()[1] != features {
            return Err(Error::InvalidShape {
                op: "BatchNorm",
                shape: x.shape().to_vec(),
                message: format!(
                    "expected an input of rank {:?} with {features} channels in dim 1",
                    self.ranks
                ),
            });
        }
        if self.training.get() {
            let count = x.numel() / features.max(1);
            if count <= 1 {
                return Err(Error::invalid(
                    "BatchNorm",
                    format!("expected more than 1 value per channel when training, got input shape {:?}", x.shape()),
                ));
            }
            // With a fixed momentum the running statistics' update rides on the kernel that
            // computes the per-channel coefficients (a cumulative average's factor changes
            // every step: the tensor ops below take it).
            let (running_mean, running_var) =
                (self.running_mean.tensor(), self.running_var.tensor());
            let running = self.momentum.map(|factor| RunningUpdate {
                mean: &running_mean,
                var: &running_var,
                factor,
                correction: count as f64 / (count.max(2) - 1) as f64,
            });
            let normalized = batch_norm_training(
                x,
                (
                    self.weight.as_ref().map(Parameter::tensor).as_ref(),
                    self.bias.as_ref().map(Parameter::tensor).as_ref(),
                ),
                self.eps,
                running,
            )?;
            if normalized.running_updated {
                self.count_batch()?;
            } else {
                self.update_running_stats(&normalized.mean, &normalized.biased_var, count)?;
            }
            return Ok(normalized.output);
        }
        // Eval: the running statistics and the affine parameters fold into one per-channel
        // scale and shift (computed on `c` values in f32), so the activation is read once by a
        // single `x·scale + shift` kernel, in its own dtype (f16 under autocast, like cuDNN's
        // inference batch norm) rather than widened to f32 and narrowed again.
        let (scale, shift) = self.eval_scale_shift_for(x.dtype())?;
        apply_scale_shift(x, &scale, &shift)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let Some(weight) = &self.weight {
            visitor(&join_name(prefix, "weight"), weight, Kind::Parameter);
        }
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
        visitor(
            &join_name(prefix, "running_mean"),
            &self.running_mean,
            Kind::Buffer,
        );
        visitor(
            &join_name(prefix, "running_var"),
            &self.running_var,
            Kind::Buffer,
        );
        visitor(
            &join_name(prefix, "num_batches_tracked"),
            &self.num_batches_tracked,
            Kind::Buffer,
        );
    }

    fn set_training(&self, training: bool) {
        self.training.set(training)
    }

    fn is_training(&self) -> bool {
        self.training.get()
    }
}

/// Layer normalization over the trailing `normalized_shape` dims, like `torch.nn.LayerNorm`
/// (biased variance, eps 1e-5, elementwise affine weight ones / bias zeros).
#[derive(Debug)]
pub struct LayerNorm {
    /// Scale with shape `normalized_shape`, when affine.
    pub weight: Option<Parameter>,
    /// Shift with shape `normalized_shape`, when affine.
    pub bias: Option<Parameter>,
    /// The trailing dims normalized over.
    pub normalized_shape: Vec<usize>,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl LayerNorm {
    /// `LayerNorm(normalized_shape)` with an elementwise affine transform.
    pub fn new(normalized_shape: &[usize], device: &Device) -> Result<LayerNorm> {
        LayerNorm::with_affine(normalized_shape, true, device)
    }

    /// `LayerNorm` with or without the affine transform.
    pub fn with_affine(
        normalized_shape: &[usize],
        affine: bool,
        device: &Device,
    ) -> Result<LayerNorm> {
        let (weight, bias) = if affine {
            (
                Some(Parameter::new(Tensor::ones(
                    normalized_shape,
                    DType::F32,
                    device,
                )?)),
                Some(Parameter::new(Tensor::zeros(
                    normalized_shape,
                    DType::F32,
                    device,
                )?)),
            )
        } else {
            (None, None)
        };
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps: 1e-5,
        })
    }

    /// Set eps (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = eps;
        self
    }
}

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let k = self.normalized_shape.len();
        if x.rank() < k || x.shape()[x.rank() - k..] != self.normalized_shape[..] {
            return Err(Error::InvalidShape {
                op: "LayerNorm",
                shape: x.shape().to_vec(),
                message: format!(
                    "the trailing dims must be the normalized shape {:?}",
                    self.normalized_shape
                ),
            });
        }
        // One kernel on the GPU in inference; the composite (which autograd differentiates)
        // when a gradient is recorded (`Tensor::layer_norm`).
        let weight = self.weight.as_ref().map(Parameter::tensor);
        let bias = self.bias.as_ref().map(Parameter::tensor);
        x.layer_norm(
            &self.normalized_shape,
            weight.as_ref(),
            bias.as_ref(),
            self.eps,
        )
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let Some(weight) = &self.weight {
            visitor(&join_name(prefix, "weight"), weight, Kind::Parameter);
        }
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}

/// Root-mean-square normalization over the trailing `normalized_shape` dims, like
/// `torch.nn.RMSNorm`: `x / √(mean(x²) + eps) · weight` (no centering, no bias). The default
/// eps is the input dtype's machine epsilon (PyTorch's `eps=None`).
#[derive(Debug)]
pub struct RMSNorm {
    /// Scale with shape `normalized_shape` (ones at start), when affine.
    pub weight: Option<Parameter>,
    /// The trailing dims normalized over.
    pub normalized_shape: Vec<usize>,
    /// Added to the mean square; `None` uses the input dtype's machine epsilon.
    pub eps: Option<f64>,
}

impl RMSNorm {
    /// `RMSNorm(normalized_shape)` with an elementwise weight.
    pub fn new(normalized_shape: &[usize], device: &Device) -> Result<RMSNorm> {
        RMSNorm::with_affine(normalized_shape, true, device)
    }

    /// `RMSNorm` with or without the elementwise weight.
    pub fn with_affine(
        normalized_shape: &[usize],
        affine: bool,
        device: &Device,
    ) -> Result<RMSNorm> {
        let weight = if affine {
            Some(Parameter::new(Tensor::ones(
                normalized_shape,
                DType::F32,
                device,
            )?))
        } else {
            None
        };
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps: None,
        })
    }

    /// Set eps (builder style).
    pub fn eps(mut self, eps: f64) -> Self {
        self.eps = Some(eps);
        self
    }
}

impl Module for RMSNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let k = self.normalized_shape.len();
        if x.rank() < k || x.shape()[x.rank() - k..] != self.normalized_shape[..] {
            return Err(Error::InvalidShape {
                op: "RMSNorm",
                shape: x.shape().to_vec(),
                message: format!(
                    "the trailing dims must be the normalized shape {:?}",
                    self.normalized_shape
                ),
            });
        }
        // One kernel on the GPU in inference; the composite (which autograd differentiates)
        // when a gradient is recorded (`Tensor::rms_norm`).
        let weight = self.weight.as_ref().map(Parameter::tensor);
        x.rms_norm(&self.normalized_shape, weight.as_ref(), self.eps)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let Some(weight) = &self.weight {
            visitor(&join_name(prefix, "weight"), weight, Kind::Parameter);
        }
    }
}

/// Group normalization, like `torch.nn.GroupNorm`: the channels of `[n, c, ...]` split into
/// `num_groups` groups, each sample's group normalized by its own mean and biased variance
/// (the same in training and eval), then an affine per channel (weight ones, bias zeros).
#[derive(Debug)]
pub struct GroupNorm {
    /// Scale `[c]`, when affine.
    pub weight: Option<Parameter>,
    /// Shift `[c]`, when affine.
    pub bias: Option<Parameter>,
    /// Number of channel groups.
    pub num_groups: usize,
    /// Number of channels.
    pub num_channels: usize,
    /// Added to the variance before the square root.
    pub eps: f64,
}

impl GroupNorm {
    /// `GroupNorm(num_groups, num_channels)` with the affine transform and eps 1e-5.
    pub fn new(num_groups: usize, num_channels: usize, device: &Device) -> Result<GroupNorm> {
        GroupNorm::with_affine(num_groups, num_channels, 1e-5, true, device)
    }

    /// `GroupNorm(num_groups, num_channels, eps, affine)`.
    pub fn with_affine(
        num_groups: usize,
        num_channels: usize,
        eps: f64,
        affine: bool,
        device: &Device,
    ) -> Result<GroupNorm> {
        if num_groups == 0 || !num_channels.is_multiple_of(num_groups) {
            return Err(Error::invalid(
                "GroupNorm::new",
                format!(
                    "num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
                ),
            ));
        }
        let (weight, bias) = if affine {
            (
                Some(Parameter::new(Tensor::ones(
                    &[num_channels],
                    DType::F32,
                    device,
                )?)),
                Some(Parameter::new(Tensor::zeros(
                    &[num_channels],
                    DType::F32,
                    device,
                )?)),
            )
        } else {
            (None, None)
        };
        Ok(GroupNorm {
            weight,
            bias,
            num_groups,
            num_channels,
            eps,
        })
    }
}

impl Module for GroupNorm {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() < 2 || x.shape()[1] != self.num_channels {
            return Err(Error::InvalidShape {
                op: "GroupNorm",
                shape: x.shape().to_vec(),
                message: format!("expects [n, {}, ...]", self.num_channels),
            });
        }
        let weight = self.weight.as_ref().map(|w| w.tensor());
        let bias = self.bias.as_ref().map(|b| b.tensor());
        x.group_norm(self.num_groups, weight.as_ref(), bias.as_ref(), self.eps)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        if let Some(weight) = &self.weight {
            visitor(&join_name(prefix, "weight"), weight, Kind::Parameter);
        }
        if let Some(bias) = &self.bias {
            visitor(&join_name(prefix, "bias"), bias, Kind::Parameter);
        }
    }
}
