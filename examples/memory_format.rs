//! Memory formats: a ResNet-style block (stem-like convolution, max pooling, a convolution
//! with its shortcut) run in eval mode on the best device, printing each result's memory
//! format and the largest difference from the same block on the CPU. Under f16 autocast on a
//! GPU with tensor cores the fused convolutions return channels-last results and pooling keeps
//! them so; everywhere else they are row-major. A row-major tensor copied channels-last
//! (`contiguous_in`) gives the same results.
//!
//! Run: `cargo run --release -p anygrad --example memory_format` (uses the best device).

use anygrad::nn::{conv_batch_norm, BatchNorm2d, Conv2d, Conv2dOptions, Module};
use anygrad::prelude::*;
use anygrad::{AutocastGuard, EpilogueActivation, MemoryFormat};

/// The block's layers, built on the CPU and moved to each device (same weights everywhere).
struct Block {
    first: Conv2d,
    first_norm: BatchNorm2d,
    second: Conv2d,
    second_norm: BatchNorm2d,
}

impl Block {
    fn new() -> Result<Block> {
        let cpu = Device::Cpu;
        let options = Conv2dOptions::default().padding(1).bias(false);
        let block = Block {
            first: Conv2d::square(16, 64, 3, options, &cpu)?,
            first_norm: BatchNorm2d::new_2d(64, &cpu)?,
            second: Conv2d::square(64, 64, 3, options, &cpu)?,
            second_norm: BatchNorm2d::new_2d(64, &cpu)?,
        };
        for norm in [&block.first_norm, &block.second_norm] {
            norm.running_var
                .set(Tensor::rand(&[64], DType::F32, &cpu)?.add_scalar(0.5)?);
            norm.eval();
        }
        Ok(block)
    }

    fn to_device(&self, device: &Device) -> Result<()> {
        self.first.to_device(device)?;
        self.first_norm.to_device(device)?;
        self.second.to_device(device)?;
        self.second_norm.to_device(device)
    }

    /// Each step's result: convolution + ReLU, max pooling, convolution + shortcut + ReLU.
    fn run(&self, x: &Tensor) -> Result<Vec<(&'static str, Tensor)>> {
        let relu = EpilogueActivation::Relu;
        let first = conv_batch_norm(x, &self.first, &self.first_norm, None, relu)?;
        let pooled = first.max_pool2d((3, 3), (2, 2), (1, 1))?;
        let second = conv_batch_norm(
            &pooled,
            &self.second,
            &self.second_norm,
            Some(&pooled),
            relu,
        )?;
        Ok(vec![
            ("conv + batch norm + relu", first),
            ("max pool 3x3 / 2", pooled),
            ("conv + batch norm + shortcut + relu", second),
        ])
    }
}

fn main() -> Result<()> {
    let (device, _) = Device::best_available();
    println!("device: {}", device.description());
    let _inference = no_grad();
    let block = Block::new()?;
    let input = Tensor::randn(&[8, 16, 32, 32], DType::F32, &Device::Cpu)?;
    let dtype = if device.supports_f16() {
        DType::F16
    } else {
        DType::F32
    };
    // f16 autocast where the device computes in f16 (the CPU's reference the same way).
    let in_dtype = |on: &Device| -> Result<Option<AutocastGuard>> {
        match dtype {
            DType::F16 => autocast(DType::F16, on).map(Some),
            _ => Ok(None),
        }
    };
    let expected = {
        let _autocast = in_dtype(&Device::Cpu)?;
        block.run(&input)?
    };
    block.to_device(&device)?;
    let _autocast = in_dtype(&device)?;
    let x = input.to_device(&device)?;
    let copied = x.contiguous_in(MemoryFormat::ChannelsLast)?;
    println!(
        "input: {:?}, its channels-last copy: {:?}",
        x.memory_format(),
        copied.memory_format()
    );
    for (from, x) in [("row-major input", &x), ("channels-last input", &copied)] {
        println!("{from} ({dtype:?}):");
        for ((step, got), (_, want)) in block.run(x)?.iter().zip(&expected) {
            let difference = got
                .to_device(&Device::Cpu)?
                .to_dtype(DType::F32)?
                .sub(&want.to_dtype(DType::F32)?)?
                .abs()?
                .max_all()?
                .item_f64()?;
            println!(
                "  {step:<36} {:?}  largest difference from the CPU {difference:.2e}",
                got.memory_format()
            );
        }
    }
    Ok(())
}
