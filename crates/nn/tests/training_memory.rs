//! Training-mode batch norm is one autograd node: its forward keeps alive its output and two
//! per-channel vectors, not the five intermediates of the composite formula, and its gradients
//! equal the composite's. Memory is measured with the GPU caching allocator's
//! `requested_bytes` (one test in this binary, so nothing else allocates meanwhile).

use anygrad_core::{DType, Device, Tensor};
use anygrad_nn::{BatchNorm2d, Module};
use anygrad_testing::requested_bytes;

/// The composite batch norm the node replaces (biased variance, eps 1e-5, γ = w, β = b).
fn composite(x: &Tensor, weight: &Tensor, bias: &Tensor) -> Tensor {
    let dims = [0isize, 2, 3];
    let shape = [1usize, x.shape()[1], 1, 1];
    let mean = x.mean(&dims, true).unwrap();
    let centered = x.sub(&mean).unwrap();
    let var = centered.square().unwrap().mean(&dims, true).unwrap();
    centered
        .mul(&var.add_scalar(1e-5).unwrap().rsqrt().unwrap())
        .unwrap()
        .mul(&weight.reshape(shape).unwrap())
        .unwrap()
        .add(&bias.reshape(shape).unwrap())
        .unwrap()
}

fn close(label: &str, got: &Tensor, want: &Tensor) {
    let got = got.to_vec::<f32>().unwrap();
    let want = want.to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len(), "{label}: lengths");
    for (index, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-3 * (1.0 + w.abs()),
            "{label} {index}: {g} vs {w}"
        );
    }
}

fn batch_norm_training_keeps_little_and_matches_the_composite(device: &Device) {
    let bn = BatchNorm2d::new_2d(16, device).unwrap();
    {
        let _guard = anygrad_core::no_grad();
        let weight = bn.weight.as_ref().unwrap().tensor();
        weight
            .assign(
                &Tensor::rand(&[16], DType::F32, device)
                    .unwrap()
                    .add_scalar(0.5)
                    .unwrap(),
            )
            .unwrap();
        let bias = bn.bias.as_ref().unwrap().tensor();
        bias.assign(&Tensor::randn(&[16], DType::F32, device).unwrap())
            .unwrap();
    }
    let x = Tensor::randn(&[8, 16, 32, 32], DType::F32, device)
        .unwrap()
        .mul_scalar(3.0)
        .unwrap()
        .add_scalar(2.0)
        .unwrap()
        .requires_grad_(true);
    let activation_bytes = (8 * 16 * 32 * 32 * 4) as u64;
    let before = requested_bytes(device);
    let output = bn.forward(&x).unwrap();
    if let (Some(before), Some(after)) = (before, requested_bytes(device)) {
        assert!(
            after - before <= activation_bytes + activation_bytes / 4,
            "a training batch norm keeps {} bytes alive (its output is {activation_bytes})",
            after - before
        );
    }
    // Some non-uniform upstream gradient.
    let upstream = Tensor::randn(&[8, 16, 32, 32], DType::F32, device).unwrap();
    output
        .mul(&upstream)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();

    let reference_x = x.detach().requires_grad_(true);
    let weight = bn
        .weight
        .as_ref()
        .unwrap()
        .tensor()
        .detach()
        .requires_grad_(true);
    let bias = bn
        .bias
        .as_ref()
        .unwrap()
        .tensor()
        .detach()
        .requires_grad_(true);
    let reference = composite(&reference_x, &weight, &bias);
    reference
        .mul(&upstream)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();

    close("output", &output, &reference);
    close(
        "input gradient",
        &x.grad().unwrap(),
        &reference_x.grad().unwrap(),
    );
    close(
        "weight gradient",
        &bn.weight.as_ref().unwrap().tensor().grad().unwrap(),
        &weight.grad().unwrap(),
    );
    close(
        "bias gradient",
        &bn.bias.as_ref().unwrap().tensor().grad().unwrap(),
        &bias.grad().unwrap(),
    );
}

anygrad_testing::device_tests!(batch_norm_training_keeps_little_and_matches_the_composite);
