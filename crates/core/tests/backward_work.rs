//! Backward runs only the work its operands need: the side of a binary op's or a matrix
//! product's rule whose operand takes no gradient (a constant, a detached value) runs no
//! kernels, and the gradients that are computed keep their values; a linear layer's weight
//! gradient reaches the weight dense (no copy before an optimizer step). Counted with the
//! profiler on every device.

use std::sync::Mutex;

use anygrad_core::profiler::profile;
use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{assert_close, random_tensor, values};

/// One profile at a time in this process.
static SERIAL: Mutex<()> = Mutex::new(());

/// The names of the ops `loss.backward()` records.
fn backward_ops(loss: &Tensor) -> Vec<String> {
    let ((), recorded) = profile(|| loss.backward()).unwrap();
    recorded.events.iter().map(|e| e.name.clone()).collect()
}

fn count(ops: &[String], name: &str) -> usize {
    ops.iter().filter(|op| *op == name).count()
}

fn untracked_operands_cost_nothing(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let constant = random_tensor(&[4, 5], 1, device);
    let divisor = random_tensor(&[4, 5], 2, device)
        .abs()
        .unwrap()
        .add_scalar(1.0)
        .unwrap();
    // A tracked numerator over a constant: one division, no `-a/b²` side.
    let x = random_tensor(&[4, 5], 3, device).requires_grad_(true);
    let loss = x
        .div(&divisor)
        .unwrap()
        .mul(&constant)
        .unwrap()
        .sum_all()
        .unwrap();
    let ops = backward_ops(&loss);
    assert_eq!(count(&ops, "div"), 1, "{ops:?}");
    assert_eq!(count(&ops, "mul"), 1, "{ops:?}");
    assert!(
        !ops.iter().any(|op| op == "neg" || op == "square"),
        "{ops:?}"
    );
    let expected = constant.div(&divisor).unwrap();
    assert_close(
        &values(&x.grad().unwrap()),
        &values(&expected),
        1e-6,
        1e-6,
        "d(x / b * c)/dx",
    );
    // Both sides tracked: both gradients, the divisor's `-a·c/b²`.
    let a = random_tensor(&[4, 5], 4, device).requires_grad_(true);
    let b = divisor.detach().requires_grad_(true);
    a.div(&b).unwrap().sum_all().unwrap().backward().unwrap();
    let expected = a
        .detach()
        .neg()
        .unwrap()
        .div(&b.detach().square().unwrap())
        .unwrap();
    assert_close(
        &values(&b.grad().unwrap()),
        &values(&expected),
        1e-5,
        1e-5,
        "d(a / b)/db",
    );
    // A matrix product of an input that takes no gradient: only the weight's product.
    let input = random_tensor(&[6, 4], 5, device);
    let weight = random_tensor(&[4, 3], 6, device).requires_grad_(true);
    let loss = input.matmul(&weight).unwrap().sum_all().unwrap();
    let ops = backward_ops(&loss);
    assert_eq!(count(&ops, "matmul"), 1, "{ops:?}");
    let expected = input
        .t()
        .unwrap()
        .matmul(&Tensor::ones(&[6, 3], DType::F32, device).unwrap())
        .unwrap();
    assert_close(
        &values(&weight.grad().unwrap()),
        &values(&expected),
        1e-5,
        1e-5,
        "d(x W)/dW",
    );
    // A detached operand of a maximum: one side of the rule.
    let y = random_tensor(&[7], 7, device).requires_grad_(true);
    let floor = random_tensor(&[7], 8, device);
    let loss = y.maximum(&floor).unwrap().sum_all().unwrap();
    let ops = backward_ops(&loss);
    assert_eq!(count(&ops, "gt"), 1, "{ops:?}");
    let wins: Vec<f32> = values(&y)
        .iter()
        .zip(values(&floor))
        .map(|(a, b)| {
            if *a > b {
                1.0
            } else if *a == b {
                0.5
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(values(&y.grad().unwrap()), wins);
}

/// `x.linear(w, b)` multiplies by `w.t()`: the weight's gradient is computed as `gᵀ·x` and
/// arrives dense, with `(xᵀ·g)ᵀ`'s values; the same for a transposed left operand.
fn transposed_operands_get_dense_gradients(device: &Device) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let x = random_tensor(&[5, 4], 9, device);
    let weight = random_tensor(&[3, 4], 10, device).requires_grad_(true);
    let bias = random_tensor(&[3], 11, device).requires_grad_(true);
    let upstream = random_tensor(&[5, 3], 12, device);
    let loss = x
        .linear(&weight, Some(&bias))
        .unwrap()
        .mul(&upstream)
        .unwrap()
        .sum_all()
        .unwrap();
    let ops = backward_ops(&loss);
    assert_eq!(count(&ops, "matmul"), 1, "{ops:?}");
    let grad = weight.grad().unwrap();
    assert!(grad.is_contiguous(), "the weight's gradient is dense");
    let expected = upstream.t().unwrap().matmul(&x).unwrap();
    assert_close(&values(&grad), &values(&expected), 1e-5, 1e-5, "dL/dW");
    // A left operand that is a transposed dense matrix: `Aᵀ·B` with A [4, 5].
    let a = random_tensor(&[4, 5], 13, device).requires_grad_(true);
    let b = random_tensor(&[4, 3], 14, device);
    a.t()
        .unwrap()
        .matmul(&b)
        .unwrap()
        .mul(&upstream)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let grad = a.grad().unwrap();
    assert!(grad.is_contiguous());
    let expected = b.matmul(&upstream.t().unwrap()).unwrap();
    assert_close(&values(&grad), &values(&expected), 1e-5, 1e-5, "dL/dA");
}

anygrad_testing::device_tests!(
    untracked_operands_cost_nothing,
    transposed_operands_get_dense_gradients
);
