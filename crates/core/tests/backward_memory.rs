//! Backward frees what each node saved as soon as the node has run (PyTorch does too), so
//! the memory of saved activations makes room for the gradients backward creates. Measured
//! with the GPU caching allocator's peak (one test in this binary, so nothing else allocates
//! meanwhile).

use anygrad_core::{memory_stats, reset_peak_memory, DType, Device, Tensor};

/// A chain of `layers` matmul + relu layers over `[size, size]` activations with `[size, size]`
/// weights: each layer saves its input and output (1 MiB each at 512) until backward reaches
/// it, and backward creates one weight gradient of the same size per layer. Freed as backward
/// goes, the saved activations make room for the gradients, and backward's peak stays near
/// the level forward left; kept until backward ends, the peak grows by every gradient.
fn backward_frees_saved_tensors_as_it_goes(device: &Device) {
    if memory_stats(device).is_none() {
        // The CPU backend has no caching allocator: nothing to measure.
        assert!(matches!(device, Device::Cpu));
        return;
    }
    let (size, layers) = (512usize, 8usize);
    let weights: Vec<Tensor> = (0..layers)
        .map(|_| {
            Tensor::randn(&[size, size], DType::F32, device)
                .unwrap()
                .mul_scalar(1.0 / (size as f64).sqrt())
                .unwrap()
                .requires_grad_(true)
        })
        .collect();
    let input = Tensor::randn(&[size, size], DType::F32, device).unwrap();
    let mut hidden = input.clone();
    for weight in &weights {
        hidden = hidden.matmul(weight).unwrap().relu().unwrap();
    }
    let loss = hidden.sum_all().unwrap();
    drop(hidden);
    device.synchronize().unwrap();
    let after_forward = memory_stats(device).unwrap().allocated_bytes;
    reset_peak_memory(device);
    loss.backward().unwrap();
    device.synchronize().unwrap();
    let backward_peak = memory_stats(device).unwrap().peak_allocated_bytes;
    let gradient_bytes = (layers * size * size * 4) as u64;
    for weight in &weights {
        assert!(weight.grad().is_some());
    }
    let growth = backward_peak.saturating_sub(after_forward);
    assert!(
        growth < gradient_bytes / 2,
        "backward peak {growth} bytes above forward's level, with {gradient_bytes} bytes of weight gradients: saved activations are not freed as backward goes"
    );
}

anygrad_testing::device_tests!(backward_frees_saved_tensors_as_it_goes);
