//! Gradient checkpointing (`anygrad_nn::checkpoint`): the gradients of a checkpointed stack of
//! blocks equal the plain ones (input and every parameter), on every device; on the GPU the peak
//! of live (requested) bytes over forward + backward is lower with checkpointing.

use std::sync::Arc;

use anygrad_core::{memory_stats, reset_peak_memory, DType, Device, Result, Tensor};
use anygrad_nn::{checkpoint, Linear, Module, Sequential, Tanh};
use anygrad_testing::{assert_close, values};

const WIDTH: usize = 64;
const ROWS: usize = 512;
const BLOCKS: usize = 6;

fn blocks(device: &Device) -> Vec<Arc<Sequential>> {
    anygrad_core::manual_seed(7);
    (0..BLOCKS)
        .map(|_| {
            Arc::new(
                Sequential::new()
                    .add(Linear::new(WIDTH, WIDTH, true, device).expect("linear"))
                    .add(Tanh)
                    .add(Linear::new(WIDTH, WIDTH, true, device).expect("linear"))
                    .add(Tanh),
            )
        })
        .collect()
}

/// Forward + backward of the stack; the loss is `mean(out²)`.
fn run(blocks: &[Arc<Sequential>], x: &Tensor, checkpointed: bool) -> Result<()> {
    let mut h = x.clone();
    for block in blocks {
        h = if checkpointed {
            checkpoint(block, &h)?
        } else {
            block.forward(&h)?
        };
    }
    h.square()?.mean_all()?.backward()
}

fn gradients_equal_plain(device: &Device) {
    let model = blocks(device);
    let x = Tensor::randn(&[8, WIDTH], DType::F32, device)
        .expect("x")
        .requires_grad_(true);
    run(&model, &x, false).expect("plain");
    let plain_x = values(&x.grad().expect("x grad"));
    let plain: Vec<Vec<f32>> = model
        .iter()
        .flat_map(|b| b.named_parameters())
        .map(|(_, p)| values(&p.grad().expect("param grad")))
        .collect();
    x.set_grad(None);
    for block in &model {
        block.zero_grad();
    }
    run(&model, &x, true).expect("checkpointed");
    assert_close(
        &values(&x.grad().expect("x grad")),
        &plain_x,
        1e-5,
        1e-4,
        "input grad",
    );
    let params: Vec<(String, Tensor)> = model.iter().flat_map(|b| b.named_parameters()).collect();
    assert_eq!(params.len(), plain.len());
    for ((name, param), want) in params.iter().zip(&plain) {
        let got = param.grad().unwrap_or_else(|| panic!("{name} has no grad"));
        assert_close(&values(&got), want, 1e-5, 1e-4, name);
    }
}

anygrad_testing::device_tests!(gradients_equal_plain);

#[test]
fn checkpointing_lowers_the_gpu_peak() {
    let _serial = anygrad_testing::GPU_LOCK
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let Some(device) = anygrad_testing::gpu_or_skip("checkpointing_lowers_the_gpu_peak") else {
        return;
    };
    let model = blocks(&device);
    let x = Tensor::randn(&[ROWS, WIDTH], DType::F32, &device).expect("x");
    let mut peaks = Vec::new();
    for checkpointed in [false, true] {
        for block in &model {
            block.zero_grad();
        }
        device.synchronize().expect("sync");
        reset_peak_memory(&device);
        let before = memory_stats(&device).expect("stats").requested_bytes;
        run(&model, &x, checkpointed).expect("run");
        device.synchronize().expect("sync");
        let peak = memory_stats(&device).expect("stats").peak_requested_bytes;
        peaks.push(peak.saturating_sub(before));
    }
    eprintln!(
        "peak above baseline: plain {} B, checkpointed {} B",
        peaks[0], peaks[1]
    );
    assert!(
        peaks[1] < peaks[0],
        "checkpointing should lower the peak: plain {} B, checkpointed {} B",
        peaks[0],
        peaks[1]
    );
}
