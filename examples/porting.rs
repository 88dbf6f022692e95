//! PyTorch's MNIST example (`examples/mnist/main.py`) ported line by line, on the embedded 8×8
//! digits so that it runs without downloads. The idioms of that script that anygrad takes as
//! they are:
//!
//! - `F.max_pool2d(x, 2)`: the stride defaults to the kernel (`x.max_pool2d((2, 2), None, ..)`);
//! - `F.nll_loss(output, target, reduction='sum')`: `nll_loss(&output, &target, Reduction::Sum)`;
//! - `pred.eq(target.view_as(pred)).sum().item()`: `view_as`, and the sum of a Bool tensor
//!   counts in I32;
//! - `optim.Adadelta(model.parameters(), lr=1.0)` with `StepLR(optimizer, step_size=1,
//!   gamma=0.7)`.
//!
//! It first prints a few more: comparisons between dtypes promote as in PyTorch (I32
//! predictions against U8 labels), `expand_as`, and the mean of a Bool tensor, which PyTorch
//! refuses too, through `.to_dtype(DType::F32)` (PyTorch's `.float().mean()`).
//!
//! Run: `cargo run --release -p anygrad --example porting` (add `ANYGRAD_DEVICE=cpu` to force
//! the CPU).

use anygrad::data::{digits_standardized_split, DataLoader, Dataset};
use anygrad::nn::optim::{Adadelta, AdadeltaConfig};
use anygrad::nn::{
    nll_loss, Conv2d, Conv2dOptions, Dropout, Linear, LrScheduler, Module, Optimizer, Reduction,
    StepLR,
};
use anygrad::prelude::*;

/// The MNIST example's `Net`, sized for 8×8 images: two 3×3 convolutions, a 2×2 max pooling,
/// dropout, two linear layers and `log_softmax`.
#[derive(Module)]
#[module(crate = "anygrad::nn")]
struct Net {
    conv1: Conv2d,
    conv2: Conv2d,
    dropout1: Dropout,
    dropout2: Dropout,
    fc1: Linear,
    fc2: Linear,
}

impl Net {
    fn new(device: &Device) -> Result<Net> {
        Ok(Net {
            conv1: Conv2d::square(1, 16, 3, Conv2dOptions::default(), device)?,
            conv2: Conv2d::square(16, 32, 3, Conv2dOptions::default(), device)?,
            dropout1: Dropout::new(0.25)?,
            dropout2: Dropout::new(0.5)?,
            fc1: Linear::new(32 * 2 * 2, 64, true, device)?,
            fc2: Linear::new(64, 10, true, device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.conv1.forward(x)?.relu()?; // 8x8 -> 6x6
        let x = self.conv2.forward(&x)?.relu()?; // 6x6 -> 4x4
        let x = x.max_pool2d((2, 2), None, (0, 0))?; // F.max_pool2d(x, 2): 4x4 -> 2x2
        let x = self.dropout1.forward(&x)?.flatten(1, -1)?;
        let x = self.fc1.forward(&x)?.relu()?;
        let x = self.fc2.forward(&self.dropout2.forward(&x)?)?;
        x.log_softmax(1)
    }
}

/// The smaller idioms, on a batch of four.
fn idioms(device: &Device) -> Result<()> {
    let logits = Tensor::from_vec(
        vec![
            2.0f32, 0.1, -1.0, 0.3, 1.5, 0.2, -0.5, 0.0, 0.9, 1.2, 0.4, -0.2,
        ],
        &[4, 3],
        device,
    )?;
    let pred = logits.argmax(1, false)?; // I32
    let labels = Tensor::from_slice(&[0u8, 1, 2, 1], &[4], device)?; // U8, as a dataset holds them
    let correct = pred.eq(&labels)?; // I32 against U8: compared as I32, a Bool result
    println!(
        "pred.eq(labels).sum() = {} ({}); .float().mean() = {:.2}",
        correct.sum_all()?.item_f64()?,
        correct.sum_all()?.dtype(),
        correct.to_dtype(DType::F32)?.mean_all()?.item_f64()?
    );
    if let Err(error) = correct.mean_all() {
        println!("correct.mean(), as in PyTorch, is refused: {error}");
    }
    let bias = Tensor::from_vec(vec![0.5f32, 0.0, -0.5], &[1, 3], device)?;
    let shifted = logits.add(&bias.expand_as(&logits)?)?;
    println!(
        "bias.expand_as(logits): {:?}; logits + mask (the Bool mask promotes): {}",
        shifted.shape(),
        logits.add(&logits.gt_scalar(1.0)?)?.dtype()
    );
    Ok(())
}

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("running on {}", device.description());
    anygrad::manual_seed(1);
    idioms(&device)?;

    let (train_set, test_set, _scaler) = digits_standardized_split(0.2, 42, &device)?;
    let test_size = test_set.len();
    let train_loader = DataLoader::new(train_set, 64)?
        .shuffle(1)
        .to_device(&device)
        .device_resident(true);
    let test_loader = DataLoader::new(test_set, 500)?
        .to_device(&device)
        .device_resident(true);

    let model = Net::new(&device)?;
    // optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    let mut optimizer = Adadelta::new(model.named_parameter_slots(), AdadeltaConfig::new(1.0))?;
    // scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    let mut scheduler = StepLR::new(&optimizer, 1, 0.7);

    for epoch in 0..6 {
        model.train();
        for batch in train_loader.iter_epoch(epoch) {
            let (data, target) = batch?;
            let data = data.reshape([-1, 1, 8, 8])?;
            optimizer.zero_grad();
            let output = model.forward(&data)?;
            let loss = nll_loss(&output, &target, Reduction::Mean)?; // F.nll_loss(output, target)
            loss.backward()?;
            optimizer.step()?;
        }

        model.eval();
        let _no_grad = no_grad();
        let (mut test_loss, mut correct) = (0.0, 0.0);
        for batch in test_loader.iter_epoch(0) {
            let (data, target) = batch?;
            let output = model.forward(&data.reshape([-1, 1, 8, 8])?)?;
            // test_loss += F.nll_loss(output, target, reduction='sum').item()
            test_loss += nll_loss(&output, &target, Reduction::Sum)?.item_f64()?;
            // pred = output.argmax(dim=1, keepdim=True)
            let pred = output.argmax(1, true)?;
            // correct += pred.eq(target.view_as(pred)).sum().item()
            correct += pred.eq(&target.view_as(&pred)?)?.sum_all()?.item_f64()?;
        }
        println!(
            "epoch {}: lr {:.3}, test loss {:.4}, accuracy {}/{} ({:.1}%)",
            epoch + 1,
            optimizer.learning_rate(),
            test_loss / test_size as f64,
            correct,
            test_size,
            100.0 * correct / test_size as f64
        );
        scheduler.step(&mut optimizer)?;
    }
    Ok(())
}
