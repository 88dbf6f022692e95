//! Tests for the composite creation ops and operator overloading of issue 15 (`eye`,
//! `linspace`, `&a + &b`, `&a * 2.0`, `-&a`) and the errors of the composite ops; the
//! value-and-gradient checks against PyTorch live in `golden_ops.rs`.

use anygrad_core::{DType, Device, Tensor};

fn eye_and_linspace(device: &Device) {
    let eye = Tensor::eye(3, DType::F32, device).unwrap();
    assert_eq!(eye.shape(), &[3, 3]);
    assert_eq!(
        eye.to_vec_f32().unwrap(),
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    let line = Tensor::linspace(-1.0, 2.0, 7, DType::F32, device).unwrap();
    anygrad_testing::assert_close(
        &line.to_vec_f32().unwrap(),
        &[-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0],
        1e-6,
        1e-6,
        "linspace",
    );
    let single = Tensor::linspace(3.0, 9.0, 1, DType::F32, device).unwrap();
    assert_eq!(single.to_vec_f32().unwrap(), vec![3.0]);
    assert!(Tensor::linspace(0.0, 1.0, 4, DType::I32, device).is_err());
}

fn operators(device: &Device) {
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], device)
        .unwrap()
        .requires_grad_(true);
    let b = Tensor::from_vec(vec![4.0f32, 5.0, 6.0], &[3], device).unwrap();
    let y = (&(&(&a * 2.0).unwrap() + &b).unwrap() - &(&a / &b).unwrap()).unwrap();
    let y = (&(-&y).unwrap() + 1.0).unwrap();
    // y = 1 - (2a + b - a/b)
    let want: Vec<f32> = [(1.0f32, 4.0f32), (2.0, 5.0), (3.0, 6.0)]
        .iter()
        .map(|&(a, b)| 1.0 - (2.0 * a + b - a / b))
        .collect();
    anygrad_testing::assert_close(&y.to_vec_f32().unwrap(), &want, 1e-5, 1e-5, "operators");
    y.sum_all().unwrap().backward().unwrap();
    let grad: Vec<f32> = [4.0f32, 5.0, 6.0].iter().map(|b| -2.0 + 1.0 / b).collect();
    anygrad_testing::assert_close(
        &a.grad().unwrap().to_vec_f32().unwrap(),
        &grad,
        1e-5,
        1e-5,
        "operator gradient",
    );
    let wrong = Tensor::zeros(&[2], DType::F32, device).unwrap();
    assert!((&a + &wrong).is_err());
}

fn composite_errors(device: &Device) {
    let x = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    assert!(x.flip(&[0, 0]).is_err());
    assert!(x.repeat(&[2]).is_err());
    assert!(x.norm(0.0, &[], false).is_err());
    assert!(x.cumsum(2).is_err());
    assert!(x.masked_fill(&x, 1.0).is_err());
    let wide_mask = Tensor::zeros(&[4, 3], DType::Bool, device).unwrap();
    assert!(x.masked_fill(&wide_mask, 1.0).is_err());
    let vector = Tensor::zeros(&[3], DType::F32, device).unwrap();
    assert!(vector.pad(1, 1, 1, 1, 0.0).is_err());
    assert!(vector.tril(0).is_err());
}

anygrad_testing::device_tests!(eye_and_linspace, operators, composite_errors);
