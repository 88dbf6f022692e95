//! Writing a custom op: a "scaled swish" activation `y = x · sigmoid(βx)` with a CPU reference
//! forward, its own WGSL kernel for GPUs, and a backward in tensor ops; checked with
//! `gradcheck`, then used as the activation of a small model trained on the digits. The
//! profiler table at the end shows the op's cost.
//!
//! Run: `cargo run --release -p anygrad --example custom_op`.
//! Add `-- --no-kernel` to drop the WGSL kernel: on a GPU the op then runs on the CPU as the
//! fallback policy allows (`ANYGRAD_FALLBACK=allow` to silence the warning, `error` to forbid
//! it), and the profiler flags it as a CPU fallback with its cost.

use std::sync::Arc;

use anygrad::custom_op::{apply, gradcheck, CustomOp};
use anygrad::data::{digits_standardized_split, DataLoader};
use anygrad::nn::{Adam, AdamConfig, CrossEntropyLoss, Kind, Linear, Module, Optimizer, Parameter};
use anygrad::prelude::*;

/// y = x · σ(βx): smooth like SiLU, with an adjustable slope.
struct ScaledSwish {
    beta: f32,
    with_kernel: bool,
}

impl CustomOp for ScaledSwish {
    fn name(&self) -> &str {
        "scaled_swish"
    }

    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> {
        Ok(shapes[0].to_vec())
    }

    fn cpu_forward(&self, inputs: &[&[f32]], _shapes: &[&[usize]]) -> Result<Vec<f32>> {
        Ok(inputs[0]
            .iter()
            .map(|&x| x / (1.0 + (-self.beta * x).exp()))
            .collect())
    }

    // One GPU thread per output element: `compute(i)` returns y[i] from input0[i].
    fn wgsl(&self) -> Option<String> {
        self.with_kernel.then(|| {
            format!(
                "fn compute(i: u32) -> f32 {{\n    let x = input0[i];\n    return x / (1.0 + exp(-{:?} * x));\n}}\n",
                self.beta
            )
        })
    }

    // dy/dx = σ(βx) + βx·σ(βx)(1 − σ(βx))
    fn backward(&self, inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let x = &inputs[0];
        let s = x.mul_scalar(self.beta as f64)?.sigmoid()?;
        let slope = s.add(
            &s.mul(&s.rsub_scalar(1.0)?)?
                .mul(x)?
                .mul_scalar(self.beta as f64)?,
        )?;
        Ok(vec![Some(grad.mul(&slope)?)])
    }
}

/// A two-layer classifier using the custom activation.
struct Net {
    first: Linear,
    second: Linear,
    activation: Arc<ScaledSwish>,
}

impl Module for Net {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let hidden = apply(self.activation.clone(), &[&self.first.forward(x)?])?;
        self.second.forward(&hidden)
    }

    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Parameter, Kind)) {
        self.first.visit(&format!("{prefix}first."), visitor);
        self.second.visit(&format!("{prefix}second."), visitor);
    }
}

fn main() -> Result<()> {
    let device = Device::best()?;
    println!("device: {}", device.description());
    let with_kernel = !std::env::args().any(|a| a == "--no-kernel");
    let op = Arc::new(ScaledSwish {
        beta: 1.7,
        with_kernel,
    });

    // 1. Check the backward against finite differences.
    let probe = Tensor::randn(&[6], DType::F32, &device)?.requires_grad_(true);
    let report = gradcheck(|t| apply(op.clone(), &[&t[0]]), &[probe], 1e-3, 1e-2)?;
    println!(
        "gradcheck: {} elements, max relative error {:.2e}",
        report.checked_elements, report.max_rel_error
    );

    // 2. Train with it.
    let (train, test, _) = digits_standardized_split(0.2, 42, &device)?;
    let loader = DataLoader::new(train, 32)?
        .shuffle(1)
        .to_device(&device)
        .device_resident(true);
    let net = Net {
        first: Linear::new(64, 64, true, &device)?,
        second: Linear::new(64, 10, true, &device)?,
        activation: op,
    };
    let mut optimizer = Adam::new(net.named_parameter_slots(), AdamConfig::new(3e-3))?;
    let loss_fn = CrossEntropyLoss::new();
    let step = |optimizer: &mut Adam, images: &Tensor, labels: &Tensor| -> Result<f64> {
        optimizer.zero_grad();
        let loss = loss_fn.forward(&net.forward(images)?, labels)?;
        loss.backward()?;
        optimizer.step()?;
        loss.item_f64()
    };
    for epoch in 0..10 {
        let mut last = 0.0;
        for batch in loader.iter_epoch(epoch) {
            let (images, labels) = batch?;
            last = step(&mut optimizer, &images, &labels)?;
        }
        println!("epoch {:>2}: last batch loss {last:.4}", epoch + 1);
    }
    let _no_grad = no_grad();
    let (features, labels) = (test.features().clone(), test.labels().clone());
    let predicted = net.forward(&features)?.argmax(1, false)?;
    let accuracy = predicted
        .eq(&labels.to_dtype(DType::I32)?)?
        .to_dtype(DType::F32)?
        .mean_all()?
        .item_f64()?;
    println!("test accuracy {:.2}%", 100.0 * accuracy);

    // 3. What did one step cost, and did anything fall back to the CPU?
    let (images, labels) = loader
        .iter_epoch(0)
        .next()
        .ok_or_else(|| Error::invalid("example", "empty loader"))??;
    drop(_no_grad);
    let (_, profile) = anygrad::profiler::profile(|| step(&mut optimizer, &images, &labels))?;
    println!("{}", profile.key_averages().table());
    Ok(())
}
