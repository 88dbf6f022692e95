//! The classic digits training loop, written with the library API the way a PyTorch user
//! would write it: data loader, model, loss, one optimizer created before the loop, and an
//! evaluation pass per epoch.
//!
//! Run: `cargo run --release -p anygrad --example digits` (add `ANYGRAD_DEVICE=cpu` to force
//! the CPU).

use anygrad::data::{digits_standardized_split, DataLoader, Dataset};
use anygrad::models::Mlp;
use anygrad::nn::{Adam, AdamConfig, CrossEntropyLoss, Module, Optimizer};
use anygrad::prelude::*;

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("training on {}", device.description());
    anygrad::manual_seed(0);

    // 80/20 split (seed 42), standardized with the training statistics, resident on the device.
    let (train_set, test_set, _scaler) = digits_standardized_split(0.2, 42, &device)?;
    println!(
        "{} training and {} test images",
        train_set.len(),
        test_set.len()
    );
    let train_loader = DataLoader::new(train_set, 32)?
        .shuffle(42)
        .to_device(&device)
        .device_resident(true);
    let test_loader = DataLoader::new(test_set, 256)?
        .to_device(&device)
        .device_resident(true);

    let model = Mlp::new(&device)?; // 64 -> 128 -> 64 -> 10 with ReLU
    let loss_fn = CrossEntropyLoss::new();
    let mut optimizer = Adam::new(model.named_parameter_slots(), AdamConfig::new(1e-3))?;

    for epoch in 0..15 {
        model.train();
        let mut total_loss = 0.0;
        let mut batches = 0;
        for batch in train_loader.iter_epoch(epoch) {
            let (images, labels) = batch?;
            optimizer.zero_grad();
            let loss = loss_fn.forward(&model.forward(&images)?, &labels)?;
            loss.backward()?;
            optimizer.step()?;
            total_loss += loss.item_f64()?;
            batches += 1;
        }

        model.eval();
        let _no_grad = no_grad();
        let (mut correct, mut seen) = (0.0, 0);
        for batch in test_loader.iter_epoch(0) {
            let (images, labels) = batch?;
            let predicted = model.forward(&images)?.argmax(1, false)?;
            correct += predicted
                .eq(&labels.to_dtype(DType::I32)?)?
                .to_dtype(DType::F32)?
                .sum_all()?
                .item_f64()?;
            seen += labels.shape()[0];
        }
        println!(
            "epoch {:>2}: loss {:.4}, test accuracy {:.2}%",
            epoch + 1,
            total_loss / batches as f64,
            100.0 * correct / seen as f64
        );
    }
    Ok(())
}
