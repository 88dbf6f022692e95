//! A small convolutional autoencoder on the embedded 8×8 digits, showing the upsampling
//! layers: the encoder halves the image twice with strided `Conv2d`s (with `GroupNorm`), the
//! decoder doubles it back with a `ConvTranspose2d` and an `Upsample` (bilinear), and a last
//! `Conv2d` + sigmoid draws the pixels. It trains with Adam on the mean squared
//! reconstruction error and prints the loss per epoch, on the best device.
//!
//! Run: `cargo run --release -p anygrad --example upsampling` (add `ANYGRAD_DEVICE=cpu` to
//! force the CPU).

use anygrad::data::digits_tensors;
use anygrad::nn::{
    Adam, AdamConfig, Conv2d, Conv2dOptions, ConvTranspose2d, ConvTranspose2dOptions, Dropout2d,
    GroupNorm, Module, MseLoss, Optimizer, ReLU, Sequential, Sigmoid, Upsample,
};
use anygrad::prelude::*;

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("training on {}", device.description());
    anygrad::manual_seed(0);

    // [1797, 64] pixels in 0..16 -> [1797, 1, 8, 8] in [0, 1].
    let (features, _labels) = digits_tensors(&device)?;
    let images = features.div_scalar(16.0)?.reshape([1797, 1, 8, 8])?;
    let count = images.shape()[0];

    let model = Sequential::new()
        // Encoder: 8x8 -> 4x4 -> 2x2.
        .add(Conv2d::square(
            1,
            8,
            3,
            Conv2dOptions::default().stride(2).padding(1),
            &device,
        )?)
        .add(GroupNorm::new(2, 8, &device)?)
        .add(ReLU)
        .add(Conv2d::square(
            8,
            16,
            3,
            Conv2dOptions::default().stride(2).padding(1),
            &device,
        )?)
        .add(ReLU)
        .add(Dropout2d::new(0.1)?)
        // Decoder: 2x2 -> 4x4 (learned) -> 8x8 (bilinear) -> pixels.
        .add(ConvTranspose2d::square(
            16,
            8,
            3,
            ConvTranspose2dOptions::default()
                .stride(2)
                .padding(1)
                .output_padding(1),
            &device,
        )?)
        .add(GroupNorm::new(2, 8, &device)?)
        .add(ReLU)
        .add(Upsample::bilinear(2.0, false))
        .add(Conv2d::square(
            8,
            1,
            3,
            Conv2dOptions::default().padding(1),
            &device,
        )?)
        .add(Sigmoid);
    let loss_fn = MseLoss::new();
    let mut optimizer = Adam::new(model.named_parameter_slots(), AdamConfig::new(1e-2))?;

    let batch = 64;
    for epoch in 0..8 {
        model.train();
        let (mut total, mut batches) = (0.0, 0);
        for start in (0..count).step_by(batch) {
            let x = images.narrow(0, start, batch.min(count - start))?;
            optimizer.zero_grad();
            let loss = loss_fn.forward(&model.forward(&x)?, &x)?;
            loss.backward()?;
            optimizer.step()?;
            total += loss.item_f64()?;
            batches += 1;
        }
        model.eval();
        let _no_grad = no_grad();
        let eval_loss = loss_fn
            .forward(&model.forward(&images)?, &images)?
            .item_f64()?;
        println!(
            "epoch {}: training loss {:.4}, reconstruction loss (eval) {:.4}",
            epoch + 1,
            total / batches as f64,
            eval_loss
        );
    }
    Ok(())
}
