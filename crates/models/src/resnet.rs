//! ResNet-18/34/50 with torchvision's exact architecture (ResNet v1.5: the stride of a
//! bottleneck block sits on its 3×3 convolution), initialization (convolutions
//! `kaiming_normal_(mode='fan_out', nonlinearity='relu')`, BatchNorm weight 1 and bias 0,
//! `fc` PyTorch's Linear default) and parameter names (`conv1`, `bn1`, `layer1.0.conv1`,
//! `layer2.0.downsample.0`, `layer2.0.downsample.1`, `fc`), so torchvision weights saved as
//! safetensors load unchanged.

use anygrad_core::{Device, EpilogueActivation, Error, Result, Tensor};
use anygrad_nn::init::{kaiming_normal_, FanMode, Nonlinearity};
use anygrad_nn::{
    conv_batch_norm, AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Conv2dOptions, Linear, MaxPool2d,
    Module, Sequential,
};

const RELU: EpilogueActivation = EpilogueActivation::Relu;

/// A bias-free convolution with torchvision's ResNet initialization.
fn conv(
    in_channels: usize,
    out_channels: usize,
    kernel: usize,
    stride: usize,
    device: &Device,
) -> Result<Conv2d> {
    let options = Conv2dOptions::default()
        .stride(stride)
        .padding(kernel / 2)
        .bias(false);
    let layer = Conv2d::square(in_channels, out_channels, kernel, options, device)?;
    kaiming_normal_(&layer.weight.tensor(), FanMode::FanOut, Nonlinearity::Relu)?;
    Ok(layer)
}

/// The shortcut used when a block changes shape: a 1×1 convolution (carrying the stride) and
/// its batch norm, named `0` and `1` as torchvision's `Sequential`.
#[derive(Module)]
pub struct Downsample {
    /// 1×1 convolution.
    #[module(name = "0")]
    pub conv: Conv2d,
    /// Its batch norm.
    #[module(name = "1")]
    pub bn: BatchNorm2d,
}

impl Downsample {
    fn new(
        in_channels: usize,
        out_channels: usize,
        stride: usize,
        device: &Device,
    ) -> Result<Self> {
        Ok(Downsample {
            conv: conv(in_channels, out_channels, 1, stride, device)?,
            bn: BatchNorm2d::new_2d(out_channels, device)?,
        })
    }

    /// `bn(conv(x))` (one fused convolution in eval mode).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        conv_batch_norm(x, &self.conv, &self.bn, None, EpilogueActivation::Identity)
    }
}

/// The shortcut of a block: `x` itself or its projection.
fn shortcut(x: &Tensor, downsample: Option<&Downsample>) -> Result<Tensor> {
    match downsample {
        Some(projection) => projection.forward(x),
        None => Ok(x.clone()),
    }
}

/// The two-3×3-convolution block of ResNet-18/34 (expansion 1). `Module` is derived from
/// the fields (names `conv1`, `bn1`, `conv2`, `bn2`, `downsample.0`, `downsample.1`).
#[derive(Module)]
pub struct BasicBlock {
    /// 3×3 convolution (carries the stride).
    pub conv1: Conv2d,
    /// BatchNorm after `conv1`.
    pub bn1: BatchNorm2d,
    /// 3×3 convolution.
    pub conv2: Conv2d,
    /// BatchNorm after `conv2`.
    pub bn2: BatchNorm2d,
    /// Shortcut projection when the shape changes.
    pub downsample: Option<Downsample>,
}

impl BasicBlock {
    /// Output channels per `planes`.
    pub const EXPANSION: usize = 1;

    /// A block from `in_channels` to `planes` channels.
    pub fn new(
        in_channels: usize,
        planes: usize,
        stride: usize,
        device: &Device,
    ) -> Result<BasicBlock> {
        let needs_shortcut = stride != 1 || in_channels != planes;
        Ok(BasicBlock {
            conv1: conv(in_channels, planes, 3, stride, device)?,
            bn1: BatchNorm2d::new_2d(planes, device)?,
            conv2: conv(planes, planes, 3, 1, device)?,
            bn2: BatchNorm2d::new_2d(planes, device)?,
            downsample: if needs_shortcut {
                Some(Downsample::new(in_channels, planes, stride, device)?)
            } else {
                None
            },
        })
    }
}

impl BasicBlock {
    /// conv-bn-relu, conv-bn, plus the (projected) input, relu.
    /// In eval mode each convolution runs fused with its batch norm, the ReLU and (the
    /// second) the shortcut's add (`conv_batch_norm`).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = conv_batch_norm(x, &self.conv1, &self.bn1, None, RELU)?;
        let identity = shortcut(x, self.downsample.as_ref())?;
        conv_batch_norm(&out, &self.conv2, &self.bn2, Some(&identity), RELU)
    }
}

/// The 1×1 → 3×3 → 1×1 block of ResNet-50 (expansion 4; stride on the 3×3, torchvision's
/// v1.5). `Module` is derived from the fields.
#[derive(Module)]
pub struct Bottleneck {
    /// 1×1 reduction.
    pub conv1: Conv2d,
    /// BatchNorm after `conv1`.
    pub bn1: BatchNorm2d,
    /// 3×3 convolution (carries the stride).
    pub conv2: Conv2d,
    /// BatchNorm after `conv2`.
    pub bn2: BatchNorm2d,
    /// 1×1 expansion to `planes * 4`.
    pub conv3: Conv2d,
    /// BatchNorm after `conv3`.
    pub bn3: BatchNorm2d,
    /// Shortcut projection when the shape changes.
    pub downsample: Option<Downsample>,
}

impl Bottleneck {
    /// Output channels per `planes`.
    pub const EXPANSION: usize = 4;

    /// A block from `in_channels` to `planes * 4` channels.
    pub fn new(
        in_channels: usize,
        planes: usize,
        stride: usize,
        device: &Device,
    ) -> Result<Bottleneck> {
        let out_channels = planes * Self::EXPANSION;
        let needs_shortcut = stride != 1 || in_channels != out_channels;
        Ok(Bottleneck {
            conv1: conv(in_channels, planes, 1, 1, device)?,
            bn1: BatchNorm2d::new_2d(planes, device)?,
            conv2: conv(planes, planes, 3, stride, device)?,
            bn2: BatchNorm2d::new_2d(planes, device)?,
            conv3: conv(planes, out_channels, 1, 1, device)?,
            bn3: BatchNorm2d::new_2d(out_channels, device)?,
            downsample: if needs_shortcut {
                Some(Downsample::new(in_channels, out_channels, stride, device)?)
            } else {
                None
            },
        })
    }
}

impl Bottleneck {
    /// 1×1 conv-bn-relu, 3×3 conv-bn-relu, 1×1 conv-bn, plus the (projected) input, relu.
    /// In eval mode each convolution runs fused with its batch norm, the ReLU and (the
    /// third) the shortcut's add (`conv_batch_norm`).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = conv_batch_norm(x, &self.conv1, &self.bn1, None, RELU)?;
        let out = conv_batch_norm(&out, &self.conv2, &self.bn2, None, RELU)?;
        let identity = shortcut(x, self.downsample.as_ref())?;
        conv_batch_norm(&out, &self.conv3, &self.bn3, Some(&identity), RELU)
    }
}

/// Which residual block a ResNet stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// [`BasicBlock`] (ResNet-18/34).
    Basic,
    /// [`Bottleneck`] (ResNet-50/101/152).
    Bottleneck,
}

impl BlockKind {
    fn expansion(self) -> usize {
        match self {
            BlockKind::Basic => BasicBlock::EXPANSION,
            BlockKind::Bottleneck => Bottleneck::EXPANSION,
        }
    }
}

/// A torchvision-compatible ResNet for `[n, 3, h, w]` images. `Module` is derived from the
/// fields (the pooling layers hold no tensors, so the state dict is torchvision's).
#[derive(Module)]
pub struct ResNet {
    /// 7×7 stride-2 stem convolution (3 → 64).
    pub conv1: Conv2d,
    /// BatchNorm after the stem.
    pub bn1: BatchNorm2d,
    maxpool: MaxPool2d,
    /// Stage 1 (64 planes, stride 1).
    pub layer1: Sequential,
    /// Stage 2 (128 planes, stride 2).
    pub layer2: Sequential,
    /// Stage 3 (256 planes, stride 2).
    pub layer3: Sequential,
    /// Stage 4 (512 planes, stride 2).
    pub layer4: Sequential,
    avgpool: AdaptiveAvgPool2d,
    /// Classifier (512·expansion → classes).
    pub fc: Linear,
}

impl ResNet {
    /// A ResNet with `blocks[i]` blocks in stage `i + 1`.
    pub fn new(
        kind: BlockKind,
        blocks: [usize; 4],
        num_classes: usize,
        device: &Device,
    ) -> Result<ResNet> {
        if num_classes == 0 || blocks.contains(&0) {
            return Err(Error::invalid(
                "ResNet::new",
                format!("need num_classes > 0 and at least one block per stage, got {blocks:?}"),
            ));
        }
        let mut in_channels = 64;
        let mut stages = Vec::with_capacity(4);
        for (stage, (&count, planes)) in blocks.iter().zip([64usize, 128, 256, 512]).enumerate() {
            let mut layer = Sequential::new();
            for index in 0..count {
                let stride = if stage > 0 && index == 0 { 2 } else { 1 };
                match kind {
                    BlockKind::Basic => {
                        layer.push(BasicBlock::new(in_channels, planes, stride, device)?)
                    }
                    BlockKind::Bottleneck => {
                        layer.push(Bottleneck::new(in_channels, planes, stride, device)?)
                    }
                }
                in_channels = planes * kind.expansion();
            }
            stages.push(layer);
        }
        let mut stages = stages.into_iter();
        let mut next = || {
            stages
                .next()
                .ok_or_else(|| Error::invalid("ResNet::new", "internal: missing stage"))
        };
        Ok(ResNet {
            conv1: conv(3, 64, 7, 2, device)?,
            bn1: BatchNorm2d::new_2d(64, device)?,
            maxpool: MaxPool2d::with(3, 2, 1),
            layer1: next()?,
            layer2: next()?,
            layer3: next()?,
            layer4: next()?,
            avgpool: AdaptiveAvgPool2d::new((1, 1)),
            fc: Linear::new(512 * kind.expansion(), num_classes, true, device)?,
        })
    }

    /// ResNet-18: basic blocks `[2, 2, 2, 2]` (11.7 M parameters with 1000 classes).
    pub fn resnet18(num_classes: usize, device: &Device) -> Result<ResNet> {
        ResNet::new(BlockKind::Basic, [2, 2, 2, 2], num_classes, device)
    }

    /// ResNet-34: basic blocks `[3, 4, 6, 3]` (21.8 M parameters with 1000 classes).
    pub fn resnet34(num_classes: usize, device: &Device) -> Result<ResNet> {
        ResNet::new(BlockKind::Basic, [3, 4, 6, 3], num_classes, device)
    }

    /// ResNet-50: bottleneck blocks `[3, 4, 6, 3]` (25.6 M parameters with 1000 classes).
    pub fn resnet50(num_classes: usize, device: &Device) -> Result<ResNet> {
        ResNet::new(BlockKind::Bottleneck, [3, 4, 6, 3], num_classes, device)
    }

    /// Everything up to and including global pooling: `[n, 3, h, w]` → `[n, 512·expansion]`.
    pub fn features(&self, x: &Tensor) -> Result<Tensor> {
        if x.rank() != 4 || x.shape()[1] != 3 {
            return Err(Error::InvalidShape {
                op: "ResNet",
                shape: x.shape().to_vec(),
                message: "expects [batch, 3, height, width] images".into(),
            });
        }
        let x = conv_batch_norm(x, &self.conv1, &self.bn1, None, RELU)?;
        let mut x = self.maxpool.forward(&x)?;
        for layer in [&self.layer1, &self.layer2, &self.layer3, &self.layer4] {
            x = layer.forward(&x)?;
        }
        self.avgpool.forward(&x)?.flatten(1, -1)
    }
}

impl ResNet {
    /// `[n, 3, h, w]` → `[n, num_classes]` logits.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.fc.forward(&self.features(x)?)
    }
}
