//! A custom module the way a PyTorch user writes one, trained with the usual recipe:
//!
//! - `#[derive(Module)]` on a struct of layers; the struct writes only `forward` (parameter
//!   names, train/eval propagation and the module tree come from its fields);
//! - AdamW with two parameter groups: weight decay on weight matrices only, none on biases
//!   and normalization parameters (`split_no_decay`);
//! - `OneCycleLR` stepped once per batch (PyTorch's defaults: warm-up over 30 %, cosine decay);
//! - a forward hook that records the hidden activations' mean, and `apply` to count layers.
//!
//! Run: `cargo run --release -p anygrad --example custom_module` (add `ANYGRAD_DEVICE=cpu`
//! to force the CPU).

use std::sync::{Arc, Mutex};

use anygrad::data::{digits_standardized_split, DataLoader, Dataset};
use anygrad::nn::module::downcast_module;
use anygrad::nn::optim::{split_no_decay, OneCycleOptions};
use anygrad::nn::{
    AdamConfig, AdamW, BatchNorm1d, CrossEntropyLoss, Dropout, Hooked, Linear, LrScheduler, Module,
    OneCycleLR, Optimizer, ParamGroup,
};
use anygrad::prelude::*;

/// 64 → hidden → 10 with BatchNorm and Dropout; `hidden` is hooked to watch its activations.
#[derive(Module)]
#[module(crate = "anygrad::nn")]
struct DigitNet {
    hidden: Hooked<Linear>,
    norm: BatchNorm1d,
    dropout: Dropout,
    head: Linear,
    /// Plain values are skipped by the derive.
    classes: usize,
}

impl DigitNet {
    fn new(hidden: usize, classes: usize, device: &Device) -> Result<DigitNet> {
        Ok(DigitNet {
            hidden: Hooked::new(Linear::new(64, hidden, true, device)?),
            norm: BatchNorm1d::new_1d(hidden, device)?,
            dropout: Dropout::new(0.2)?,
            head: Linear::new(hidden, classes, true, device)?,
            classes,
        })
    }

    /// The only method a custom module writes.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.norm.forward(&self.hidden.forward(x)?)?.relu()?;
        let logits = self.head.forward(&self.dropout.forward(&x)?)?;
        debug_assert_eq!(logits.shape()[1], self.classes);
        Ok(logits)
    }
}

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("training on {}", device.description());
    anygrad::manual_seed(0);
    let (train_set, test_set, _) = digits_standardized_split(0.2, 42, &device)?;
    let test_size = test_set.len();
    let train_loader = DataLoader::new(train_set, 32)?
        .shuffle(42)
        .to_device(&device)
        .device_resident(true);
    let test_loader = DataLoader::new(test_set, 256)?
        .to_device(&device)
        .device_resident(true);

    let model = DigitNet::new(128, 10, &device)?;
    for (name, parameter) in model.named_parameters() {
        println!("  {name:<16} {:?}", parameter.shape());
    }
    let mut linears = 0;
    model.apply(&mut |_, module| {
        // The hooked layer is a `Hooked<Linear>` (a module wrapping the Linear).
        let linear = downcast_module::<Linear>(module).is_some()
            || downcast_module::<Hooked<Linear>>(module).is_some();
        linears += usize::from(linear);
        Ok(())
    })?;
    println!(
        "{linears} Linear layers among {} modules",
        model.named_modules().len()
    );

    // A forward hook: the mean activation of the hidden layer over the last batch.
    let hidden_mean = Arc::new(Mutex::new(0.0));
    let record = hidden_mean.clone();
    model.hidden.register_forward_hook(move |_, _, output| {
        let mean = output.mean_all()?.item_f64()?;
        *record.lock().unwrap_or_else(|p| p.into_inner()) = mean;
        Ok(None)
    });

    // No weight decay on biases and BatchNorm parameters.
    let (decay, no_decay) = split_no_decay(model.named_parameter_slots());
    println!(
        "{} parameters decay, {} do not",
        decay.len(),
        no_decay.len()
    );
    let config = AdamConfig::new(1e-3).weight_decay(0.05);
    let mut optimizer = AdamW::with_groups(vec![
        ParamGroup::new(decay, config),
        ParamGroup::new(no_decay, config.weight_decay(0.0)),
    ])?;
    let epochs = 10;
    let mut scheduler = OneCycleLR::new(
        &mut optimizer,
        OneCycleOptions::with_epochs(1e-2, epochs, train_loader.len()),
    )?;
    let loss_fn = CrossEntropyLoss::new();

    for epoch in 0..epochs {
        model.train();
        let mut total = 0.0;
        for batch in train_loader.iter_epoch(epoch as u64) {
            let (images, labels) = batch?;
            optimizer.zero_grad();
            let loss = loss_fn.forward(&model.forward(&images)?, &labels)?;
            loss.backward()?;
            optimizer.step()?;
            scheduler.step(&mut optimizer)?; // once per batch
            total += loss.item_f64()?;
        }
        model.eval(); // reaches the BatchNorm and the Dropout through the derive
        let _no_grad = no_grad();
        let (mut correct, mut test_loss) = (0.0, 0.0);
        for batch in test_loader.iter_epoch(0) {
            let (images, labels) = batch?;
            let logits = model.forward(&images)?;
            test_loss += loss_fn.forward(&logits, &labels)?.item_f64()? * labels.shape()[0] as f64;
            correct += logits
                .argmax(1, false)?
                .eq(&labels.to_dtype(DType::I32)?)?
                .to_dtype(DType::F32)?
                .sum_all()?
                .item_f64()?;
        }
        let test_loss = test_loss / test_size as f64;
        println!(
            "epoch {:>2}: train loss {:.4}, test loss {test_loss:.4}, accuracy {:.2}%, lr {:.2e} \
             (no-decay group {:.2e}), hidden mean {:+.3}",
            epoch + 1,
            total / train_loader.len() as f64,
            100.0 * correct / test_size as f64,
            optimizer.group_learning_rate(0)?,
            optimizer.group_learning_rate(1)?,
            *hidden_mean.lock().unwrap_or_else(|p| p.into_inner()),
        );
    }
    Ok(())
}
