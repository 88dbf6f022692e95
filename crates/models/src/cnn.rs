//! `SmallCnn`: a small convolutional network for 28×28 single-channel images. Equivalent to
//! this PyTorch module (same parameter names `conv1`, `conv2`, `fc1`, `fc2`):
//!
//! ```python
//! class SmallCnn(nn.Module):
//!     def __init__(self, num_classes=10):
//!         super().__init__()
//!         self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
//!         self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
//!         self.fc1 = nn.Linear(64 * 7 * 7, 128)
//!         self.fc2 = nn.Linear(128, num_classes)
//!     def forward(self, x):
//!         x = F.max_pool2d(F.relu(self.conv1(x)), 2)
//!         x = F.max_pool2d(F.relu(self.conv2(x)), 2)
//!         return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))
//! ```

use anygrad_core::{Device, Error, Result, Tensor};
use anygrad_nn::{Conv2d, Conv2dOptions, Linear, Module};

/// conv(1→32, 3, pad 1)-relu-maxpool2 → conv(32→64, 3, pad 1)-relu-maxpool2 → flatten →
/// linear(3136→128)-relu → linear(128→classes). `Module` is derived from the fields (names
/// `conv1`, `conv2`, `fc1`, `fc2`); the struct writes only `forward`.
#[derive(Module)]
pub struct SmallCnn {
    /// First convolution (1 → 32 channels).
    pub conv1: Conv2d,
    /// Second convolution (32 → 64 channels).
    pub conv2: Conv2d,
    /// Hidden fully connected layer (64·7·7 → 128).
    pub fc1: Linear,
    /// Output layer (128 → classes).
    pub fc2: Linear,
}

impl SmallCnn {
    /// The network with 10 classes.
    pub fn new(device: &Device) -> Result<SmallCnn> {
        SmallCnn::with_classes(10, device)
    }

    /// The network with `num_classes` outputs.
    pub fn with_classes(num_classes: usize, device: &Device) -> Result<SmallCnn> {
        let same = Conv2dOptions::default().padding(1);
        Ok(SmallCnn {
            conv1: Conv2d::square(1, 32, 3, same, device)?,
            conv2: Conv2d::square(32, 64, 3, same, device)?,
            fc1: Linear::new(64 * 7 * 7, 128, true, device)?,
            fc2: Linear::new(128, num_classes, true, device)?,
        })
    }
}

impl SmallCnn {
    /// `[batch, 1, 28, 28]` (or `[batch, 784]`) → `[batch, classes]` logits.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = match x.rank() {
            2 if x.shape()[1] == 28 * 28 => x.reshape([x.shape()[0], 1, 28, 28])?,
            4 if x.shape()[1..] == [1, 28, 28] => x.clone(),
            _ => {
                return Err(Error::InvalidShape {
                    op: "SmallCnn",
                    shape: x.shape().to_vec(),
                    message: "expects [batch, 1, 28, 28] or [batch, 784] images".into(),
                })
            }
        };
        let x = self
            .conv1
            .forward(&x)?
            .relu()?
            .max_pool2d((2, 2), (2, 2), (0, 0))?;
        let x = self
            .conv2
            .forward(&x)?
            .relu()?
            .max_pool2d((2, 2), (2, 2), (0, 0))?;
        let x = self.fc1.forward(&x.flatten(1, -1)?)?.relu()?;
        self.fc2.forward(&x)
    }
}
