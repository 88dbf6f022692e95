//! Tests for the activations and losses added for ported PyTorch scripts (issue 15):
//! `Hardswish`, `ReLU6`, `ELU`, `L1Loss`, `SmoothL1Loss`, `BceLoss`, each checked against a
//! direct host evaluation of PyTorch's documented formula, values and gradients.

use anygrad_core::{Device, Tensor};
use anygrad_nn::*;
use anygrad_testing::assert_close;

const INPUTS: [f32; 8] = [-4.0, -2.5, -0.7, -0.1, 0.3, 1.2, 2.9, 7.5];

fn leaf(values: &[f32], device: &Device) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()], device)
        .unwrap()
        .requires_grad_(true)
}

/// Forward values and the gradient of their sum, against `f` and its derivative `df`.
fn check_activation(
    module: &dyn Module,
    f: impl Fn(f64) -> f64,
    df: impl Fn(f64) -> f64,
    what: &str,
    device: &Device,
) {
    let x = leaf(&INPUTS, device);
    let y = module.forward(&x).unwrap();
    let want: Vec<f32> = INPUTS.iter().map(|&v| f(v as f64) as f32).collect();
    assert_close(&y.to_vec_f32().unwrap(), &want, 1e-5, 1e-5, what);
    y.sum_all().unwrap().backward().unwrap();
    let grad: Vec<f32> = INPUTS.iter().map(|&v| df(v as f64) as f32).collect();
    assert_close(
        &x.grad().unwrap().to_vec_f32().unwrap(),
        &grad,
        1e-5,
        1e-5,
        what,
    );
}

fn activations(device: &Device) {
    check_activation(
        &Hardswish,
        |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        |x| {
            if x < -3.0 {
                0.0
            } else if x > 3.0 {
                1.0
            } else {
                (2.0 * x + 3.0) / 6.0
            }
        },
        "hardswish",
        device,
    );
    check_activation(
        &ReLU6,
        |x| x.clamp(0.0, 6.0),
        |x| if x > 0.0 && x < 6.0 { 1.0 } else { 0.0 },
        "relu6",
        device,
    );
    let alpha = 0.7;
    check_activation(
        &ELU { alpha },
        |x| if x > 0.0 { x } else { alpha * (x.exp() - 1.0) },
        |x| if x > 0.0 { 1.0 } else { alpha * x.exp() },
        "elu",
        device,
    );
}

fn regression_losses(device: &Device) {
    let target: Vec<f32> = INPUTS.iter().map(|v| v * 0.5 + 0.3).collect();
    let diffs: Vec<f64> = INPUTS
        .iter()
        .zip(&target)
        .map(|(&x, &t)| x as f64 - t as f64)
        .collect();
    let n = diffs.len() as f64;
    let target_tensor = Tensor::from_vec(target.clone(), &[8], device).unwrap();

    let x = leaf(&INPUTS, device);
    let l1 = L1Loss::new().forward(&x, &target_tensor).unwrap();
    let want = diffs.iter().map(|d| d.abs()).sum::<f64>() / n;
    assert_close(&l1.to_vec_f32().unwrap(), &[want as f32], 1e-5, 1e-5, "l1");
    l1.backward().unwrap();
    let grad: Vec<f32> = diffs.iter().map(|d| (d.signum() / n) as f32).collect();
    assert_close(
        &x.grad().unwrap().to_vec_f32().unwrap(),
        &grad,
        1e-6,
        1e-5,
        "l1 grad",
    );

    let beta = 1.5;
    let x = leaf(&INPUTS, device);
    let smooth = SmoothL1Loss::new()
        .beta(beta)
        .reduction(Reduction::Sum)
        .forward(&x, &target_tensor)
        .unwrap();
    let want: f64 = diffs
        .iter()
        .map(|d| {
            let a = d.abs();
            if a < beta {
                0.5 * a * a / beta
            } else {
                a - 0.5 * beta
            }
        })
        .sum();
    assert_close(
        &smooth.to_vec_f32().unwrap(),
        &[want as f32],
        1e-5,
        1e-5,
        "smooth l1",
    );
    smooth.backward().unwrap();
    let grad: Vec<f32> = diffs
        .iter()
        .map(|&d| if d.abs() < beta { d / beta } else { d.signum() } as f32)
        .collect();
    assert_close(
        &x.grad().unwrap().to_vec_f32().unwrap(),
        &grad,
        1e-5,
        1e-5,
        "smooth grad",
    );
    let none = SmoothL1Loss::new()
        .reduction(Reduction::None)
        .forward(&x, &target_tensor)
        .unwrap();
    assert_eq!(none.shape(), &[8]);
    assert!(SmoothL1Loss::new()
        .beta(-1.0)
        .forward(&x, &target_tensor)
        .is_err());
}

fn bce_loss(device: &Device) {
    let probabilities = [0.1f32, 0.5, 0.9, 0.0, 1.0];
    let target = [0.0f32, 1.0, 1.0, 1.0, 0.0];
    let p = Tensor::from_vec(probabilities.to_vec(), &[5], device).unwrap();
    let y = Tensor::from_vec(target.to_vec(), &[5], device).unwrap();
    let loss = BceLoss::new()
        .reduction(Reduction::None)
        .forward(&p, &y)
        .unwrap();
    let want: Vec<f32> = probabilities
        .iter()
        .zip(&target)
        .map(|(&p, &y)| {
            let (p, y) = (p as f64, y as f64);
            -(y * p.ln().max(-100.0) + (1.0 - y) * (1.0 - p).ln().max(-100.0)) as f32
        })
        .collect();
    // The last two entries are PyTorch's -100 log floor: 100 each.
    assert_close(&loss.to_vec_f32().unwrap(), &want, 1e-5, 1e-5, "bce");
    assert_eq!(want[3], 100.0);
}

anygrad_testing::device_tests!(activations, regression_losses, bce_loss);
