//! Backward frees what each node saved as soon as the node has run (PyTorch does too), so
//! the memory of saved activations makes room for the gradients backward creates. Measured
//! on the GPU with the caching allocator's peak (one test in this binary, so nothing else
//! allocates meanwhile), on the CPU with the test thread's heap peak (the binary counts its
//! heap with `anygrad_testing::memory::CountingAllocator`). A control run that keeps every
//! activation alive shows that each measurement sees the gradients backward creates.

use anygrad_core::{memory_stats, reset_peak_memory, DType, Device, Tensor};
use anygrad_testing::memory::{peak_allocation, CountingAllocator};

#[global_allocator]
static HEAP: CountingAllocator = CountingAllocator;

/// Rows and columns of every activation and weight.
const SIZE: usize = 512;
/// Matmul + relu layers in the chain.
const LAYERS: usize = 8;

/// A chain of [`LAYERS`] matmul + relu layers over `[SIZE, SIZE]` activations with
/// `[SIZE, SIZE]` weights, reduced to a scalar loss: the weights, the loss and, with `keep`,
/// every intermediate activation (held by the caller, so backward cannot free them).
fn chain(device: &Device, keep: bool) -> (Vec<Tensor>, Tensor, Vec<Tensor>) {
    let weights: Vec<Tensor> = (0..LAYERS)
        .map(|_| {
            Tensor::randn(&[SIZE, SIZE], DType::F32, device)
                .unwrap()
                .mul_scalar(1.0 / (SIZE as f64).sqrt())
                .unwrap()
                .requires_grad_(true)
        })
        .collect();
    let mut kept = Vec::new();
    let mut hidden = Tensor::randn(&[SIZE, SIZE], DType::F32, device).unwrap();
    for weight in &weights {
        let product = hidden.matmul(weight).unwrap();
        hidden = product.relu().unwrap();
        if keep {
            kept.push(product);
            kept.push(hidden.clone());
        }
    }
    let loss = hidden.sum_all().unwrap();
    (weights, loss, kept)
}

/// Bytes by which backward of `loss` raised memory above its level when backward began: the
/// caching allocator's peak on the GPU, this thread's heap peak on the CPU.
fn backward_growth(loss: &Tensor, device: &Device) -> u64 {
    device.synchronize().unwrap();
    match memory_stats(device) {
        Some(before) => {
            reset_peak_memory(device);
            loss.backward().unwrap();
            device.synchronize().unwrap();
            let peak = memory_stats(device).unwrap().peak_allocated_bytes;
            peak.saturating_sub(before.allocated_bytes)
        }
        None => {
            assert!(
                matches!(device, Device::Cpu),
                "{device}: no memory statistics"
            );
            let ((), peak) = peak_allocation(|| loss.backward().unwrap());
            peak as u64
        }
    }
}

/// Each layer saves its input and output (1 MiB each at 512) until backward reaches it, and
/// backward creates one weight gradient of the same size per layer. Freed as backward goes,
/// the saved activations make room for the gradients, and backward's peak stays near the
/// level forward left; kept until backward ends (the control), the peak grows by every
/// gradient.
fn backward_frees_saved_tensors_as_it_goes(device: &Device) {
    let gradient_bytes = (LAYERS * SIZE * SIZE * 4) as u64;

    let (weights, loss, kept) = chain(device, true);
    let kept_growth = backward_growth(&loss, device);
    assert!(weights.iter().all(|w| w.grad().is_some()));
    assert!(
        kept_growth >= gradient_bytes,
        "{device}: with every activation kept, backward grew memory by only {kept_growth} bytes \
         for {gradient_bytes} bytes of weight gradients: the measurement misses allocations"
    );
    drop((weights, loss, kept));

    let (weights, loss, _) = chain(device, false);
    let growth = backward_growth(&loss, device);
    assert!(weights.iter().all(|w| w.grad().is_some()));
    assert!(
        growth < gradient_bytes / 2,
        "{device}: backward peak {growth} bytes above forward's level, with {gradient_bytes} \
         bytes of weight gradients: saved activations are not freed as backward goes"
    );
}

anygrad_testing::device_tests!(backward_frees_saved_tensors_as_it_goes);
