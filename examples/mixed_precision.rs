//! Mixed-precision training the way a PyTorch user writes it with `torch.autocast` and
//! `GradScaler`: the forward and the loss under f16 autocast, the loss scaled before
//! `backward`, the step through the scaler, which skips steps whose gradients overflowed and
//! lowers its scale. The scale starts far too high (2^40), so the first steps overflow in f16
//! and are skipped until the scale has backed off; training then proceeds. No step waits for
//! the GPU: SGD's fused update reads the overflow flag on the device, and the scaler reads
//! the flags back one step late (`Tensor::read_later`).
//!
//! With the argument `bf16`, the same training runs under bfloat16 autocast instead: bf16 has
//! f32's range, so gradients do not underflow and no scaler is used (plain `backward` and
//! `step`), as with PyTorch's bf16 autocast; every device runs it.
//!
//! Run: `cargo run --release -p anygrad --example mixed_precision [-- bf16]` (add
//! `ANYGRAD_DEVICE=cpu` to force the CPU).

use anygrad::data::{digits_standardized_split, DataLoader};
use anygrad::models::Mlp;
use anygrad::nn::{CrossEntropyLoss, GradScaler, Module, Optimizer, Sgd, SgdConfig};
use anygrad::prelude::*;

fn main() -> Result<()> {
    let device = Device::best()?;
    let low = match std::env::args().nth(1).as_deref() {
        None | Some("f16") => DType::F16,
        Some("bf16") => DType::BF16,
        Some(other) => {
            return Err(Error::invalid(
                "mixed_precision",
                format!("unknown argument {other:?}: give f16 (the default) or bf16"),
            ))
        }
    };
    println!("training on {} under {low} autocast", device.description());
    anygrad::manual_seed(0);
    let (train_set, test_set, _scaler) = digits_standardized_split(0.2, 42, &device)?;
    let train_loader = DataLoader::new(train_set, 32)?
        .shuffle(42)
        .to_device(&device)
        .device_resident(true);
    let test_loader = DataLoader::new(test_set, 256)?
        .to_device(&device)
        .device_resident(true);

    let model = Mlp::new(&device)?;
    let loss_fn = CrossEntropyLoss::new();
    let mut optimizer = Sgd::new(
        model.named_parameter_slots(),
        SgdConfig::new(0.05).momentum(0.9),
    )?;
    // PyTorch's defaults but for the initial scale: 2^40 overflows f16 gradients at once.
    let mut scaler = GradScaler::new(2f64.powi(40), 2.0, 0.5, 2000);

    for epoch in 0..10 {
        model.train();
        // The epoch's summed loss stays on the device: reading it every step would wait for
        // the GPU every step.
        let mut total_loss = Tensor::zeros(&[], DType::F32, &device)?;
        let mut batches = 0;
        for batch in train_loader.iter_epoch(epoch) {
            let (images, labels) = batch?;
            optimizer.zero_grad();
            let loss = {
                let _autocast = autocast(low, &device)?;
                loss_fn.forward(&model.forward(&images)?, &labels)?
            };
            if low == DType::BF16 {
                // bf16 keeps f32's exponent range: no loss scaling.
                loss.backward()?;
                optimizer.step()?;
            } else {
                scaler.scale(&loss)?.backward()?;
                scaler.step(&mut optimizer)?; // skipped where a gradient is inf or NaN
                scaler.update();
            }
            total_loss = total_loss.add(&loss.detach())?;
            batches += 1;
        }
        let accuracy = evaluate(&model, &test_loader, &device, low)?;
        let scaling = if low == DType::BF16 {
            String::new()
        } else {
            format!(
                ", scale 2^{}, {} steps skipped so far",
                scaler.scale_value().log2(),
                scaler.skipped_steps()
            )
        };
        println!(
            "epoch {:>2}: loss {:.4}, test accuracy {:.2}%{scaling}",
            epoch + 1,
            total_loss.item_f64()? / batches as f64,
            100.0 * accuracy,
        );
    }
    Ok(())
}

/// Test accuracy under autocast and without gradients.
fn evaluate(model: &Mlp, test_loader: &DataLoader, device: &Device, low: DType) -> Result<f64> {
    model.eval();
    let _no_grad = no_grad();
    let _autocast = autocast(low, device)?;
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
    Ok(correct / seen as f64)
}
