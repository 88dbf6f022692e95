//! Data parallel training with the library API: the digits MLP replicated on several devices
//! (every GPU when there are at least two, else two replicas on the CPU), each global batch of
//! 64 split across them, gradients averaged after backward, one optimizer per replica.
//!
//! Run: `cargo run --release -p anygrad --example data_parallel` (set
//! `ANYGRAD_DEVICES=gpu:0,gpu:1` or `cpu,cpu,cpu,cpu` to choose the devices).

use anygrad::data::{digits_standardized_split, DataLoader};
use anygrad::models::Mlp;
use anygrad::nn::{Adam, AdamConfig, CrossEntropyLoss, DataParallel, Module, Optimizer};
use anygrad::prelude::*;
use anygrad::train::{evaluate, parse_devices};

fn main() -> Result<()> {
    let devices = match std::env::var("ANYGRAD_DEVICES") {
        Ok(list) if !list.is_empty() => parse_devices(&list)?,
        _ if anygrad::device_count() >= 2 => parse_devices("all")?,
        _ => vec![Device::Cpu, Device::Cpu],
    };
    let names: Vec<String> = devices.iter().map(|d| d.description()).collect();
    println!("{} replicas: {}", devices.len(), names.join(", "));
    anygrad::manual_seed(0);

    let home = &devices[0];
    let (train_set, test_set, _scaler) = digits_standardized_split(0.2, 42, home)?;
    let train_loader = DataLoader::new(train_set, 64)?.shuffle(42).to_device(home);
    let test_loader = DataLoader::new(test_set, 256)?.to_device(home);

    // One replica per device, all starting from replica 0's parameters.
    let model = DataParallel::new(&devices, |device| {
        Ok(Box::new(Mlp::new(device)?) as Box<dyn Module>)
    })?;
    let mut optimizer = model
        .optimizer(|parameters| Ok(Box::new(Adam::new(parameters, AdamConfig::new(1e-3))?) as _))?;
    let loss_fn = CrossEntropyLoss::new();

    for epoch in 0..10 {
        model.train();
        let mut total_loss = 0.0;
        let mut batches = 0;
        for batch in train_loader.iter_epoch(epoch) {
            let (images, labels) = batch?;
            optimizer.zero_grad();
            // Split, forward and backward on every replica at once, gradients averaged, and
            // each bucket's parameters updated as soon as their averaged gradients arrive.
            let step = model.forward_backward_step(
                &images,
                &labels,
                |logits, targets| loss_fn.forward(logits, targets),
                &mut optimizer,
            )?;
            total_loss += step.loss()?;
            batches += 1;
        }
        // Replica 0 holds the state that counts (BatchNorm statistics come from it).
        model.sync_buffers()?;
        let (test_loss, test_accuracy) = evaluate(model.module(), &test_loader)?;
        let exchange = model.exchange_stats();
        println!(
            "epoch {:>2}  loss {:.4}  test loss {test_loss:.4}  test acc {:.2}%  exchange {:.2} ms/step",
            epoch + 1,
            total_loss / batches as f64,
            100.0 * test_accuracy,
            exchange.mean_ms()
        );
    }
    Ok(())
}
