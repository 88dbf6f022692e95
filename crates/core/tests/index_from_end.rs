//! `Tensor::index_select_wrapping`, the gather behind Python's `x[idx]`: negative indices count
//! from the end of the dim on every device (along the last dim of a dense tensor, which takes
//! the GPU's row kernel, and along the first), unsigned indices are never wrapped, the
//! gradient lands at the wrapped positions, and indices outside `[-size, size)` are errors.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{tensor, values};

/// Negative entries pick from the end, along dim 0 and along the last dim; the same picks as
/// `index_select` with the indices wrapped by hand.
fn negative_indices_count_from_the_end(device: &Device) {
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32, device)
        .unwrap()
        .reshape([4, 3])
        .unwrap();
    let rows = Tensor::from_vec(vec![-1i32, 0, -4, 2], &[4], device).unwrap();
    let picked = x.index_select_wrapping(0, &rows).unwrap();
    assert_eq!(picked.shape(), &[4, 3]);
    assert_eq!(
        values(&picked),
        vec![9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 6.0, 7.0, 8.0]
    );
    let columns = Tensor::from_vec(vec![-1i32, -3, 1], &[3], device).unwrap();
    let picked = x.index_select_wrapping(1, &columns).unwrap();
    let by_hand = Tensor::from_vec(vec![2i32, 0, 1], &[3], device).unwrap();
    assert_eq!(
        values(&picked),
        values(&x.index_select(1, &by_hand).unwrap())
    );
    // A strided input takes the general gather kernel.
    let strided = x.t().unwrap();
    let picked = strided.index_select_wrapping(0, &columns).unwrap();
    assert_eq!(
        values(&picked),
        values(&strided.index_select(0, &by_hand).unwrap())
    );
    // Non-negative indices select as index_select does; unsigned ones are taken as they are.
    let unsigned = Tensor::from_vec(vec![3u32, 1], &[2], device).unwrap();
    assert_eq!(
        values(&x.index_select_wrapping(0, &unsigned).unwrap()),
        values(&x.index_select(0, &unsigned).unwrap())
    );
}

/// The gradient of a wrapped selection lands at the wrapped rows (repeats add).
fn gradient_lands_at_the_wrapped_rows(device: &Device) {
    let x = tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], device).requires_grad_(true);
    let rows = Tensor::from_vec(vec![-1i32, 2, 0], &[3], device).unwrap();
    let picked = x.index_select_wrapping(0, &rows).unwrap();
    picked.sum_all().unwrap().backward().unwrap();
    assert_eq!(
        values(&x.grad().unwrap()),
        vec![1.0, 1.0, 0.0, 0.0, 2.0, 2.0]
    );
}

/// Indices past either end are errors naming the op (on a GPU at the next readback), and the
/// device works afterwards.
fn out_of_range_is_an_error(device: &Device) {
    let x = tensor(&[1.0, 2.0, 3.0], &[3], device);
    for bad in [3i32, -4] {
        let index = Tensor::from_vec(vec![0i32, bad], &[2], device).unwrap();
        let result = x
            .index_select_wrapping(0, &index)
            .and_then(|picked| picked.to_vec_f64());
        let error = result.expect_err("an index past the end");
        assert!(error.to_string().contains("index"), "{error}");
    }
    let fine = Tensor::from_vec(vec![-3i32], &[1], device).unwrap();
    assert_eq!(
        values(&x.index_select_wrapping(0, &fine).unwrap()),
        vec![1.0]
    );
}

anygrad_testing::device_tests!(
    negative_indices_count_from_the_end,
    gradient_lands_at_the_wrapped_rows,
    out_of_range_is_an_error,
);
