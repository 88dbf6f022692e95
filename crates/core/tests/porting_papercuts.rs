//! PyTorch idioms that a ported classifier script uses, on every device: sums of Bool and U8
//! tensors (`pred.eq(target).sum()`), mean of a Bool tensor (an error that says what to write),
//! dtype promotion in comparisons, arithmetic and `where_`, and `view_as`/`expand_as`.

use anygrad_core::{DType, Device, Error, Tensor};
use anygrad_testing::{assert_close, tensor, values};

fn bools(values: &[bool], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_slice(values, shape, device).unwrap()
}

fn bool_and_u8_sums_count_in_i32(device: &Device) {
    // The classifier's accuracy line: argmax predictions (I32) against U8 labels.
    let logits = tensor(
        &[0.1, 0.9, 0.0, 0.8, 0.1, 0.1, 0.2, 0.3, 0.5, 0.0, 0.0, 1.0],
        &[4, 3],
        device,
    );
    let pred = logits.argmax(1, false).unwrap();
    let target = Tensor::from_slice(&[1u8, 0, 1, 2], &[4], device).unwrap();
    let correct = pred.eq(&target).unwrap().sum_all().unwrap();
    assert_eq!(correct.dtype(), DType::I32);
    assert_eq!(correct.to_vec::<i32>().unwrap(), vec![3]);
    assert_eq!(correct.item_f64().unwrap(), 3.0);

    let mask = bools(&[true, false, true, true, true, false], &[2, 3], device);
    let rows = mask.sum(&[1], false).unwrap();
    assert_eq!(rows.dtype(), DType::I32);
    assert_eq!(rows.to_vec::<i32>().unwrap(), vec![2, 2]);
    let columns = mask.sum(&[0], true).unwrap();
    assert_eq!(columns.shape(), &[1, 3]);
    assert_eq!(columns.to_vec::<i32>().unwrap(), vec![2, 1, 1]);

    // U8 sums past 255 without wrapping (PyTorch sums uint8 into int64).
    let pixels = Tensor::from_slice(&[200u8, 200, 255, 145], &[4], device).unwrap();
    let total = pixels.sum_all().unwrap();
    assert_eq!(total.dtype(), DType::I32);
    assert_eq!(total.to_vec::<i32>().unwrap(), vec![800]);
}

fn bool_mean_names_the_conversion(device: &Device) {
    let mask = bools(&[true, false, true, true], &[4], device);
    let error = mask.mean_all().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Unsupported {
                op: "mean",
                dtype: DType::Bool,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(".to_dtype(DType::F32)"), "{message}");
    // The conversion the message names works.
    let accuracy = mask.to_dtype(DType::F32).unwrap().mean_all().unwrap();
    assert_close(&values(&accuracy), &[0.75], 0.0, 1e-6, "accuracy");
}

fn comparisons_promote_integer_dtypes(device: &Device) {
    let signed = Tensor::from_slice(&[-1i32, 3, 300, 7], &[4], device).unwrap();
    let bytes = Tensor::from_slice(&[0u8, 3, 44, 9], &[4], device).unwrap();
    let eq = signed.eq(&bytes).unwrap();
    assert_eq!(eq.dtype(), DType::Bool);
    assert_eq!(
        eq.to_vec::<bool>().unwrap(),
        vec![false, true, false, false]
    );
    // -1 < 0 and 300 > 44 only hold when the U8 operand becomes I32 (not the other way).
    assert_eq!(
        signed.lt(&bytes).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false, true]
    );
    assert_eq!(
        bytes.gt(&signed).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false, true]
    );

    // U32 against I32 (PyTorch compares in int64): exact on both sides of either range.
    let unsigned = Tensor::from_slice(&[0u32, 5, 4_000_000_000, 7], &[4], device).unwrap();
    let signed = Tensor::from_slice(&[-1i32, 5, i32::MAX, 8], &[4], device).unwrap();
    let check = |result: Tensor, expected: [bool; 4], what: &str| {
        assert_eq!(result.dtype(), DType::Bool, "{what}");
        assert_eq!(result.to_vec::<bool>().unwrap(), expected, "{what}");
    };
    check(
        unsigned.eq(&signed).unwrap(),
        [false, true, false, false],
        "eq",
    );
    check(
        unsigned.ne(&signed).unwrap(),
        [true, false, true, true],
        "ne",
    );
    check(
        unsigned.lt(&signed).unwrap(),
        [false, false, false, true],
        "lt",
    );
    check(
        unsigned.le(&signed).unwrap(),
        [false, true, false, true],
        "le",
    );
    check(
        unsigned.gt(&signed).unwrap(),
        [true, false, true, false],
        "gt",
    );
    check(
        unsigned.ge(&signed).unwrap(),
        [true, true, true, false],
        "ge",
    );
    check(
        signed.lt(&unsigned).unwrap(),
        [true, false, true, false],
        "i32 lt u32",
    );
    check(
        signed.ge(&unsigned).unwrap(),
        [false, true, false, true],
        "i32 ge u32",
    );
    // With broadcasting: a column of U32 against a row of I32.
    let column = Tensor::from_slice(&[1u32, 3_000_000_000], &[2, 1], device).unwrap();
    let row = Tensor::from_slice(&[-5i32, 1, 2], &[3], device).unwrap();
    let ge = column.ge(&row).unwrap();
    assert_eq!(ge.shape(), &[2, 3]);
    assert_eq!(
        ge.to_vec::<bool>().unwrap(),
        vec![true, true, false, true, true, true]
    );

    // Bool against I32, and integers against floats (the float dtype wins, as in PyTorch).
    let flags = bools(&[true, false, true], &[3], device);
    let ints = Tensor::from_slice(&[1i32, 0, 2], &[3], device).unwrap();
    assert_eq!(
        flags.eq(&ints).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false]
    );
    let counts = Tensor::from_slice(&[1i32, 2, 3], &[3], device).unwrap();
    let thresholds = tensor(&[1.5, 2.0, 2.5], &[3], device);
    assert_eq!(
        counts.lt(&thresholds).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        thresholds.eq(&counts).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, false]
    );
}

fn arithmetic_and_where_promote(device: &Device) {
    let signed = Tensor::from_slice(&[-1i32, 3, 300], &[3], device).unwrap();
    let bytes = Tensor::from_slice(&[250u8, 3, 44], &[3], device).unwrap();
    let sum = signed.add(&bytes).unwrap();
    assert_eq!(sum.dtype(), DType::I32);
    assert_eq!(sum.to_vec::<i32>().unwrap(), vec![249, 6, 344]);

    // A float times a Bool mask stays float, and the gradient reaches the float operand.
    let x = tensor(&[1.0, 2.0, 3.0], &[3], device).requires_grad_(true);
    let mask = bools(&[true, false, true], &[3], device);
    let masked = x.mul(&mask).unwrap();
    assert_eq!(masked.dtype(), DType::F32);
    assert_eq!(values(&masked), vec![1.0, 0.0, 3.0]);
    masked.sum_all().unwrap().backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![1.0, 0.0, 1.0]);

    let shifted = tensor(&[0.5, 0.5, 0.5], &[3], device).add(&signed).unwrap();
    assert_eq!(shifted.dtype(), DType::F32);
    assert_eq!(values(&shifted), vec![-0.5, 3.5, 300.5]);

    let picked = Tensor::where_(&mask, &signed, &tensor(&[0.25; 3], &[3], device)).unwrap();
    assert_eq!(picked.dtype(), DType::F32);
    assert_eq!(values(&picked), vec![-1.0, 0.25, 300.0]);

    // U32 with I32 has no common dtype here (PyTorch's is int64): an error naming the op.
    let unsigned = Tensor::from_slice(&[1u32, 2, 3], &[3], device).unwrap();
    let error = unsigned.add(&signed).unwrap_err();
    assert!(
        matches!(
            error,
            Error::DTypeMismatch {
                op: "add",
                lhs: DType::U32,
                rhs: DType::I32
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains(".to_dtype()"), "{error}");
}

fn view_as_and_expand_as(device: &Device) {
    let x = tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], device).requires_grad_(true);
    let target = Tensor::zeros(&[3, 2], DType::F32, device).unwrap();
    let viewed = x.view_as(&target).unwrap();
    assert_eq!(viewed.shape(), &[3, 2]);
    assert!(viewed.same_storage(&x));
    assert_eq!(values(&viewed), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

    // A transposed tensor has no view of another shape: an error naming view_as.
    let error = x
        .t()
        .unwrap()
        .view_as(&Tensor::zeros(&[6], DType::F32, device).unwrap());
    let error = error.unwrap_err();
    assert!(
        matches!(error, Error::InvalidShape { op: "view_as", .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("reshape"), "{error}");
    let error = x
        .view_as(&Tensor::zeros(&[4], DType::F32, device).unwrap())
        .unwrap_err();
    assert!(error.to_string().starts_with("view_as:"), "{error}");

    let bias = tensor(&[10.0, 20.0], &[2, 1], device).requires_grad_(true);
    let expanded = bias.expand_as(&x).unwrap();
    assert_eq!(expanded.shape(), &[2, 3]);
    assert_eq!(values(&expanded), vec![10.0, 10.0, 10.0, 20.0, 20.0, 20.0]);
    let error = x.expand_as(&target).unwrap_err();
    assert!(
        matches!(
            error,
            Error::ShapeMismatch {
                op: "expand_as",
                ..
            }
        ),
        "{error:?}"
    );

    let loss = viewed
        .mul_scalar(2.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .add(&expanded.sum_all().unwrap())
        .unwrap();
    loss.backward().unwrap();
    assert_eq!(values(&x.grad().unwrap()), vec![2.0; 6]);
    assert_eq!(values(&bias.grad().unwrap()), vec![3.0, 3.0]);
}

anygrad_testing::device_tests!(
    bool_and_u8_sums_count_in_i32,
    bool_mean_names_the_conversion,
    comparisons_promote_integer_dtypes,
    arithmetic_and_where_promote,
    view_as_and_expand_as,
);
