//! `Mlp`: Linear layers with ReLU between them. Parameter names match PyTorch's
//! `nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
//! nn.Linear(64, 10))`: `0.weight`, `0.bias`, `2.weight`, `2.bias`, `4.weight`, `4.bias`.

use anygrad_core::{Device, Error, Result, Tensor};
use anygrad_nn::{Kind, Linear, Module, Parameter, ReLU, Sequential};

/// A multi-layer perceptron: `Linear → ReLU → ... → Linear` (no activation on the output).
pub struct Mlp {
    layers: Sequential,
    sizes: Vec<usize>,
}

impl Mlp {
    /// The tutorial network: 64 → 128 → 64 → 10 (8×8 digits to 10 classes).
    pub fn new(device: &Device) -> Result<Mlp> {
        Mlp::with_sizes(&[64, 128, 64, 10], device)
    }

    /// Layer widths from input to output (at least two: input and output).
    pub fn with_sizes(sizes: &[usize], device: &Device) -> Result<Mlp> {
        if sizes.len() < 2 || sizes.contains(&0) {
            return Err(Error::invalid(
                "Mlp::with_sizes",
                format!("need at least an input and an output size, all > 0; got {sizes:?}"),
            ));
        }
        let mut layers = Sequential::new();
        for (index, pair) in sizes.windows(2).enumerate() {
            if index > 0 {
                layers.push(ReLU);
            }
            layers.push(Linear::new(pair[0], pair[1], true, device)?);
        }
        Ok(Mlp {
            layers,
            sizes: sizes.to_vec(),
        })
    }

    /// The layer widths.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }
}

impl Module for Mlp {
    /// `[batch, sizes[0]]` → `[batch, sizes.last()]` logits.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.layers.forward(x)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.layers.visit(prefix, visitor)
    }

    fn set_training(&self, training: bool) {
        self.layers.set_training(training)
    }

    fn is_training(&self) -> bool {
        self.layers.is_training()
    }
}
