//! Tests of the bit operators (`bitwise_and/or/xor/not`, `bitwise_left_shift/right_shift`):
//! every integer dtype and Bool against values computed here with Rust's own operators, the
//! scalar forms on either side, broadcasting, shift amounts past the width or negative, and
//! the refusal of float operands.

use anygrad_core::{DType, Device, Tensor};

/// The values of `tensor` as i64.
fn values(tensor: &Tensor) -> Vec<i64> {
    tensor
        .to_vec_f64()
        .unwrap()
        .into_iter()
        .map(|v| v as i64)
        .collect()
}

fn integer(data: &[i64], dtype: DType, device: &Device) -> Tensor {
    let floats: Vec<f64> = data.iter().map(|&v| v as f64).collect();
    Tensor::from_vec(floats, &[data.len()], &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
        .to_device(device)
        .unwrap()
}

fn and_or_xor_match_rust(device: &Device) {
    let a = [0i64, 1, 5, -6, 1 << 20, -1, 12345, -98765];
    let b = [3i64, -1, 9, 12, 7, 0, -2, 4096];
    let ta = integer(&a, DType::I32, device);
    let tb = integer(&b, DType::I32, device);
    let expect = |f: fn(i32, i32) -> i32| -> Vec<i64> {
        a.iter()
            .zip(&b)
            .map(|(&x, &y)| f(x as i32, y as i32) as i64)
            .collect()
    };
    assert_eq!(values(&ta.bitwise_and(&tb).unwrap()), expect(|x, y| x & y));
    assert_eq!(values(&ta.bitwise_or(&tb).unwrap()), expect(|x, y| x | y));
    assert_eq!(values(&ta.bitwise_xor(&tb).unwrap()), expect(|x, y| x ^ y));
    let not: Vec<i64> = a.iter().map(|&x| !(x as i32) as i64).collect();
    assert_eq!(values(&ta.bitwise_not().unwrap()), not);
    assert_eq!(ta.bitwise_and(&tb).unwrap().dtype(), DType::I32);

    // Unsigned bytes: results stay in 0..=255; a negative scalar acts through its low bits.
    let bytes = [0i64, 1, 127, 128, 200, 255];
    let tu = integer(&bytes, DType::U8, device);
    let not_bytes: Vec<i64> = bytes.iter().map(|&x| !(x as u8) as i64).collect();
    assert_eq!(values(&tu.bitwise_not().unwrap()), not_bytes);
    let masked: Vec<i64> = bytes.iter().map(|&x| x & 0x0F).collect();
    assert_eq!(values(&tu.bitwise_and_scalar(15.0).unwrap()), masked);
    let with_negative: Vec<i64> = bytes
        .iter()
        .map(|&x| ((x as u8) & (-2i64 as u8)) as i64)
        .collect();
    assert_eq!(values(&tu.bitwise_and_scalar(-2.0).unwrap()), with_negative);

    // U32 past i32's range.
    let words = [0i64, 1, 0x8000_0000, 0xFFFF_FFFF, 0x1234_5678];
    let tw = integer(&words, DType::U32, device);
    let flipped: Vec<i64> = words.iter().map(|&x| !(x as u32) as i64).collect();
    assert_eq!(values(&tw.bitwise_not().unwrap()), flipped);
    let xored: Vec<i64> = words
        .iter()
        .map(|&x| ((x as u32) ^ 0xFF00) as i64)
        .collect();
    assert_eq!(values(&tw.bitwise_xor_scalar(65280.0).unwrap()), xored);
}

fn bool_operators_are_logical(device: &Device) {
    let p = integer(&[0, 0, 1, 1], DType::Bool, device);
    let q = integer(&[0, 1, 0, 1], DType::Bool, device);
    assert_eq!(values(&p.bitwise_and(&q).unwrap()), [0, 0, 0, 1]);
    assert_eq!(values(&p.bitwise_or(&q).unwrap()), [0, 1, 1, 1]);
    assert_eq!(values(&p.bitwise_xor(&q).unwrap()), [0, 1, 1, 0]);
    assert_eq!(values(&p.bitwise_not().unwrap()), [1, 1, 0, 0]);
    assert_eq!(p.bitwise_not().unwrap().dtype(), DType::Bool);
    // Bool with an integer tensor computes in the integer dtype.
    let n = integer(&[6, 6, 6, 7], DType::I32, device);
    let mixed = p.bitwise_or(&n).unwrap();
    assert_eq!(mixed.dtype(), DType::I32);
    assert_eq!(values(&mixed), [6, 6, 7, 7]);
}

fn shifts_match_rust(device: &Device) {
    let a = [1i64, -8, 255, 0x4000_0000, -1, 3];
    let amounts = [0i64, 1, 4, 1, 31, 2];
    let ta = integer(&a, DType::I32, device);
    let ts = integer(&amounts, DType::I32, device);
    let left: Vec<i64> = a
        .iter()
        .zip(&amounts)
        .map(|(&x, &s)| (x as i32).wrapping_shl(s as u32) as i64)
        .collect();
    let right: Vec<i64> = a
        .iter()
        .zip(&amounts)
        .map(|(&x, &s)| ((x as i32) >> s) as i64)
        .collect();
    assert_eq!(values(&ta.bitwise_left_shift(&ts).unwrap()), left);
    // Arithmetic for signed values: -8 >> 1 is -4.
    assert_eq!(values(&ta.bitwise_right_shift(&ts).unwrap()), right);

    // Amounts past the width or negative shift every bit out (WGSL alone would wrap them).
    let far = integer(&[32, 40, -1, 33], DType::I32, device);
    let base = integer(&[5, -5, 5, -5], DType::I32, device);
    assert_eq!(
        values(&base.bitwise_left_shift(&far).unwrap()),
        [0, 0, 0, 0]
    );
    assert_eq!(
        values(&base.bitwise_right_shift(&far).unwrap()),
        [0, -1, 0, -1]
    );

    // Bytes lose the bits shifted past 8; scalars on either side and broadcasting.
    let bytes = integer(&[1, 3, 129, 255], DType::U8, device);
    assert_eq!(
        values(&bytes.bitwise_left_shift_scalar(1.0).unwrap()),
        [2, 6, 2, 254]
    );
    assert_eq!(
        values(&bytes.bitwise_right_shift_scalar(4.0).unwrap()),
        [0, 0, 8, 15]
    );
    let powers = ta
        .narrow(0, 0, 1)
        .unwrap()
        .binary_scalar(anygrad_core::op::BinaryOp::ShiftLeft, 1.0, true)
        .unwrap();
    assert_eq!(values(&powers), [2]);
    let column = integer(&[1, 2], DType::I32, device)
        .reshape([2, 1])
        .unwrap();
    let row = integer(&[0, 1, 2], DType::I32, device);
    assert_eq!(
        values(&column.bitwise_left_shift(&row).unwrap()),
        [1, 2, 4, 2, 4, 8]
    );
}

fn float_operands_are_refused(device: &Device) {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], device).unwrap();
    for result in [
        x.bitwise_and(&x),
        x.bitwise_or_scalar(1.0),
        x.bitwise_not(),
        x.bitwise_left_shift(&x),
    ] {
        let message = result.unwrap_err().to_string();
        assert!(message.contains("bitwise"), "{message}");
        assert!(message.contains("float32"), "{message}");
    }
}

anygrad_testing::device_tests!(
    and_or_xor_match_rust,
    bool_operators_are_logical,
    shifts_match_rust,
    float_operands_are_refused
);
