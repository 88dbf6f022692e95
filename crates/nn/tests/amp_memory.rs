//! Autocast training holds less than f32 training, as in PyTorch: f16 activations are saved
//! for backward, each is freed once backward has used it, and batch norm's backward on an f16
//! input keeps its f32 temporaries slice-sized. The gradients still match f32 training's.
//! Memory is the GPU caching allocator's peak above the level after setup (one test in this
//! binary, so nothing else allocates meanwhile).

use anygrad_core::{autocast, memory_stats, reset_peak_memory, DType, Device, Tensor};
use anygrad_nn::{BatchNorm2d, Conv2d, Conv2dOptions, Module, ReLU, Sequential};

/// Three conv → batch norm → relu blocks of 16 channels: activations (2 MiB each in f32 at
/// batch 8, 64 × 64) outweigh the weights, so the training peak is made by activations.
fn small_cnn(device: &Device) -> Sequential {
    let mut model = Sequential::new();
    for in_channels in [3, 16, 16] {
        let options = Conv2dOptions::default().padding(1).bias(false);
        model.push(Conv2d::square(in_channels, 16, 3, options, device).unwrap());
        model.push(BatchNorm2d::new_2d(16, device).unwrap());
        model.push(ReLU);
    }
    model.train();
    model
}

/// One forward + backward (under autocast when `amp`); returns the peak of allocated bytes
/// above the level before the step, and the gradients of the parameters.
fn training_step(model: &Sequential, images: &Tensor, amp: bool) -> (u64, Vec<Tensor>) {
    let device = images.device().clone();
    for parameter in model.parameters() {
        parameter.zero_grad();
    }
    device.synchronize().unwrap();
    let level = memory_stats(&device).map_or(0, |stats| stats.allocated_bytes);
    reset_peak_memory(&device);
    let loss = {
        let _guard = amp.then(|| autocast(DType::F16, &device).unwrap());
        let output = model.forward(images).unwrap();
        output.square().unwrap().sum_all().unwrap()
    };
    loss.backward().unwrap();
    device.synchronize().unwrap();
    let peak = memory_stats(&device).map_or(0, |stats| stats.peak_allocated_bytes);
    let grads = model
        .parameters()
        .iter()
        .map(|parameter| parameter.grad().unwrap())
        .collect();
    (peak.saturating_sub(level), grads)
}

fn autocast_training_peak_is_below_f32s(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "autocast_training_peak_is_below_f32s") {
        return;
    }
    let model = small_cnn(device);
    let images = Tensor::randn(&[8, 3, 64, 64], DType::F32, device).unwrap();
    let (f32_peak, f32_grads) = training_step(&model, &images, false);
    let (amp_peak, amp_grads) = training_step(&model, &images, true);
    for (index, (amp, full)) in amp_grads.iter().zip(&f32_grads).enumerate() {
        assert_eq!(
            amp.dtype(),
            DType::F32,
            "gradient {index} reaches the f32 master"
        );
        let amp = amp.to_vec_f32().unwrap();
        let full = full.to_vec_f32().unwrap();
        let norm = full.iter().map(|v| v * v).sum::<f32>().sqrt();
        let error = amp
            .iter()
            .zip(&full)
            .map(|(a, f)| (a - f) * (a - f))
            .sum::<f32>()
            .sqrt();
        assert!(
            error <= 0.05 * norm + 1e-3,
            "gradient {index}: autocast differs from f32 by {error} (norm {norm})"
        );
    }
    if memory_stats(device).is_none() {
        // The CPU backend has no caching allocator: the gradients are all there is to check.
        assert!(matches!(device, Device::Cpu));
        return;
    }
    println!("training peak above setup: f32 {f32_peak} bytes, autocast {amp_peak} bytes");
    assert!(
        amp_peak * 4 < f32_peak * 3,
        "autocast training peak {amp_peak} bytes is not below 3/4 of f32's {f32_peak}"
    );
}

anygrad_testing::device_tests!(autocast_training_peak_is_below_f32s);
