//! Tests of `Tensor::slice_with_step` (PyTorch's `x[.., start::step]`): a view of the same
//! storage whose in-place writes reach the original, whose gradient lands at the stepped
//! entries, that every op reads correctly (elementwise, reductions, matmul, copies), and whose
//! bad ranges are errors.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::values;

fn grid(device: &Device) -> Tensor {
    let data: Vec<f32> = (0..24).map(|v| v as f32).collect();
    Tensor::from_vec(data, &[4, 6], device).unwrap()
}

fn stepped_view_reads_and_writes_the_storage(device: &Device) {
    let x = grid(device);
    let columns = x.slice_with_step(1, 1, 3, 2).unwrap();
    assert_eq!(columns.shape(), &[4, 3]);
    assert_eq!(columns.layout().strides, vec![6, 2]);
    assert_eq!(
        values(&columns.narrow(0, 0, 2).unwrap()),
        [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    );
    // Reading through every kind of op.
    assert_eq!(values(&columns.sum_all().unwrap()), [144.0]);
    assert_eq!(
        values(&columns.mul_scalar(2.0).unwrap().narrow(0, 3, 1).unwrap()),
        [38.0, 42.0, 46.0]
    );
    let rows = x.slice_with_step(0, 0, 2, 3).unwrap();
    assert_eq!(values(&rows.contiguous().unwrap()).len(), 12);
    let ones = Tensor::ones(&[3, 1], DType::F32, device).unwrap();
    let product = rows
        .slice_with_step(1, 0, 3, 2)
        .unwrap()
        .matmul(&ones)
        .unwrap();
    assert_eq!(values(&product), [6.0, 60.0]);
    // Writing through the view reaches the original storage.
    let zeros = Tensor::zeros(&[4, 3], DType::F32, device).unwrap();
    columns.assign(&zeros).unwrap();
    let first_row = values(&x.narrow(0, 0, 1).unwrap());
    assert_eq!(first_row, [0.0, 0.0, 2.0, 0.0, 4.0, 0.0]);
}

fn gradient_lands_at_the_stepped_entries(device: &Device) {
    let x = Tensor::from_vec((0..10).map(|v| v as f32).collect(), &[10], device)
        .unwrap()
        .requires_grad_(true);
    let weights = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4], device).unwrap();
    let y = x
        .slice_with_step(0, 0, 4, 3)
        .unwrap()
        .mul(&weights)
        .unwrap();
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(
        values(&x.grad().unwrap()),
        [1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0]
    );
}

fn bad_ranges_are_errors(device: &Device) {
    let x = grid(device);
    assert!(
        x.slice_with_step(1, 1, 3, 3).is_err(),
        "1 + 2 * 3 = 7 is past 6"
    );
    assert!(x.slice_with_step(1, 0, 2, 0).is_err(), "step 0");
    assert!(
        x.slice_with_step(2, 0, 1, 2).is_err(),
        "dim 2 of a 2-d tensor"
    );
    assert!(
        x.slice_with_step(1, 0, 2, usize::MAX).is_err(),
        "overflowing reach"
    );
    assert_eq!(x.slice_with_step(1, 5, 0, 4).unwrap().shape(), &[4, 0]);
}

anygrad_testing::device_tests!(
    stepped_view_reads_and_writes_the_storage,
    gradient_lands_at_the_stepped_entries,
    bad_ranges_are_errors
);
