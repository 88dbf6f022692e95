//! `Tensor::register_hook` (PyTorch's tensor hooks): a hook sees the whole gradient of its
//! tensor and may replace it, on intermediate results (also when the handle is dropped before
//! backward) and on leaves (before `.grad`), in registration order; `remove` takes it off; a
//! replacement of the wrong shape and a hook on a tensor without gradient are errors.

use std::sync::{Arc, Mutex};

use anygrad_core::{Device, Error, Tensor};
use anygrad_testing::values;

fn leaf(data: &[f32], device: &Device) -> Tensor {
    Tensor::from_vec(data.to_vec(), &[data.len()], device)
        .unwrap()
        .requires_grad_(true)
}

fn hooks_see_and_replace_gradients(device: &Device) {
    let x = leaf(&[1.0, 2.0, 3.0], device);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let y = x.mul_scalar(2.0).unwrap();
    // y is used twice: the hook sees the sum of both contributions.
    let record = seen.clone();
    y.register_hook(move |g| {
        record.lock().unwrap().push(values(g));
        Ok(Some(g.mul_scalar(10.0)?))
    })
    .unwrap();
    let loss = y
        .add(&y.mul_scalar(3.0).unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    drop(y);
    loss.backward().unwrap();
    assert_eq!(seen.lock().unwrap().as_slice(), [vec![4.0, 4.0, 4.0]]);
    assert_eq!(values(&x.grad().unwrap()), [80.0, 80.0, 80.0]);
}

fn leaf_hooks_run_in_order_before_grad(device: &Device) {
    let x = leaf(&[1.0, -1.0], device);
    let order = Arc::new(Mutex::new(Vec::new()));
    let first = order.clone();
    let handle = x
        .register_hook(move |g| {
            first.lock().unwrap().push("first");
            Ok(Some(g.add_scalar(1.0)?))
        })
        .unwrap();
    let second = order.clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    x.register_hook(move |g| {
        second.lock().unwrap().push("second");
        record.lock().unwrap().push(values(g));
        Ok(None)
    })
    .unwrap();
    x.mul_scalar(3.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&x.grad().unwrap()), [4.0, 4.0]);
    assert_eq!(order.lock().unwrap().as_slice(), ["first", "second"]);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [vec![4.0, 4.0]],
        "the first one's result"
    );
    handle.remove();
    x.zero_grad();
    x.mul_scalar(3.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(values(&x.grad().unwrap()), [3.0, 3.0], "removed");
}

fn bad_hooks_are_errors(device: &Device) {
    let x = leaf(&[1.0, 2.0], device);
    let y = x.exp().unwrap();
    y.register_hook(|g| Ok(Some(g.sum_all()?))).unwrap();
    let error = y.sum_all().unwrap().backward().unwrap_err();
    assert!(
        matches!(
            error,
            Error::ShapeMismatch {
                op: "register_hook",
                ..
            }
        ),
        "{error}"
    );
    let plain = Tensor::from_vec(vec![1.0f32], &[1], device).unwrap();
    assert!(plain.register_hook(|_| Ok(None)).is_err());
    let failing = leaf(&[1.0], device);
    failing
        .register_hook(|_| {
            Err(Error::Autograd {
                message: "the hook refused".into(),
            })
        })
        .unwrap();
    let error = failing
        .mul_scalar(2.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward();
    assert!(error.unwrap_err().to_string().contains("the hook refused"));
}

anygrad_testing::device_tests!(
    hooks_see_and_replace_gradients,
    leaf_hooks_run_in_order_before_grad,
    bad_hooks_are_errors,
);

/// `retain_grad` keeps an intermediate result's gradient (summed over backward calls).
#[test]
fn retain_grad_keeps_intermediate_gradients() {
    let device = Device::Cpu;
    let x = leaf(&[1.0, 2.0], &device);
    let y = x.mul_scalar(3.0).unwrap();
    y.retain_grad().unwrap();
    y.retain_grad().unwrap();
    let loss = y.square().unwrap().sum_all().unwrap();
    loss.backward_retain_graph().unwrap();
    assert_eq!(values(&y.grad().unwrap()), [6.0, 12.0]);
    loss.backward().unwrap();
    assert_eq!(
        values(&y.grad().unwrap()),
        [12.0, 24.0],
        "summed, once per call"
    );
    let plain = Tensor::from_vec(vec![1.0f32], &[1], &device).unwrap();
    assert!(plain.retain_grad().is_err());
}
