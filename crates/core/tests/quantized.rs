//! Block-quantized matrices (`QuantizedMatrix`, `Tensor::linear_quantized`) on every device,
//! for every format: random blocks (scales set to finite values) decoded by the host's
//! reference (`quantization::dequantize_blocks`) give the expected matrix; the device's
//! dequantization, row lookups and products (the vector kernel for up to 8 rows, the tiled
//! kernel beyond, F16 inputs) match it, the input's gradient is `grad · W`, and bad operands
//! are errors naming the op.

use anygrad_core::quantization::dequantize_blocks;
use anygrad_core::{DType, Device, QuantFormat, QuantizedMatrix, Tensor};
use anygrad_testing::{assert_close, f16_or_skip, pseudo_random, random_quantized_blocks, values};

/// `rows` rows of `columns` values of `format`, scales in (-0.1, 0.1).
fn random_blocks(format: QuantFormat, rows: usize, columns: usize, seed: u64) -> Vec<u8> {
    random_quantized_blocks(format, [rows, columns], 0.1, seed)
}

/// The host's f32 matrix of `bytes`.
fn host_matrix(format: QuantFormat, bytes: &[u8]) -> Vec<f32> {
    let mut out = Vec::new();
    dequantize_blocks(format, bytes, &mut out, "test").unwrap();
    out
}

/// `x [m, k] · wᵀ` for `w [n, k]`, in f64.
fn host_product(x: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            let sum: f64 = (0..k)
                .map(|i| x[r * k + i] as f64 * w[c * k + i] as f64)
                .sum();
            out[r * n + c] = sum as f32;
        }
    }
    out
}

/// The largest magnitude of `values` (for tolerances relative to it).
fn largest(values: &[f32]) -> f32 {
    values.iter().fold(0f32, |a, v| a.max(v.abs()))
}

/// Every format's device dequantization equals the host's reference decoding.
fn dequantize_matches_the_host_reference(device: &Device) {
    let (rows, columns) = (5, 512);
    for format in QuantFormat::ALL {
        let bytes = random_blocks(format, rows, columns, 11);
        let matrix = QuantizedMatrix::from_bytes(format, [rows, columns], &bytes, device).unwrap();
        let dense = matrix.dequantize().unwrap();
        assert_eq!(dense.shape(), &[rows, columns]);
        assert_eq!(dense.dtype(), DType::F32);
        let expected = host_matrix(format, &bytes);
        assert_close(
            &values(&dense),
            &expected,
            1e-6 * largest(&expected),
            1e-6,
            &format!("{format} dequantize"),
        );
    }
}

/// Products of 1 to 70 rows (vector and tiled kernels) against the host's f64 product.
fn products_match_the_dense_product(device: &Device) {
    let (n, k) = (70, 512);
    for format in QuantFormat::ALL {
        let bytes = random_blocks(format, n, k, 23);
        let matrix = QuantizedMatrix::from_bytes(format, [n, k], &bytes, device).unwrap();
        let w = host_matrix(format, &bytes);
        for m in [1, 3, 8, 9, 70] {
            let x_values = pseudo_random(m * k, 5 + m as u64);
            let x = Tensor::from_vec(x_values.clone(), &[m, k], device).unwrap();
            let y = x.linear_quantized(&matrix).unwrap();
            assert_eq!(y.shape(), &[m, n]);
            let expected = host_product(&x_values, &w, m, n, k);
            assert_close(
                &values(&y),
                &expected,
                2e-5 * largest(&expected),
                1e-4,
                &format!("{format} x [{m}, {k}]"),
            );
        }
    }
}

/// Leading dims, a view at an offset, and F16 inputs.
fn products_of_views_and_half_inputs(device: &Device) {
    let (n, k) = (24, 256);
    let format = QuantFormat::Q4K;
    let bytes = random_blocks(format, n, k, 31);
    let matrix = QuantizedMatrix::from_bytes(format, [n, k], &bytes, device).unwrap();
    let w = host_matrix(format, &bytes);
    let all = Tensor::from_vec(pseudo_random(2 * 3 * (k + 8), 3), &[2, 3, k + 8], device).unwrap();
    let x = all.narrow(2, 8, k).unwrap();
    let y = x.linear_quantized(&matrix).unwrap();
    assert_eq!(y.shape(), &[2, 3, n]);
    let x_host = values(&x.contiguous().unwrap());
    let expected = host_product(&x_host, &w, 6, n, k);
    assert_close(&values(&y), &expected, 1e-4, 1e-4, "view [2, 3, k]");
    if f16_or_skip(device, "products_of_views_and_half_inputs (f16)") {
        let half_x = x.to_dtype(DType::F16).unwrap();
        let half_y = half_x.linear_quantized(&matrix).unwrap();
        assert_eq!(half_y.dtype(), DType::F16);
        let x_rounded = values(&half_x.contiguous().unwrap());
        let expected = host_product(&x_rounded, &w, 6, n, k);
        assert_close(
            &values(&half_y),
            &expected,
            2e-3 * largest(&expected),
            2e-3,
            "f16 input",
        );
    }
}

/// Embedding rows by index (any index shape, repeats), and an index out of range.
fn select_rows_looks_rows_up(device: &Device) {
    let (rows, columns) = (9, 64);
    for format in [QuantFormat::Q8_0, QuantFormat::Q4_1] {
        let bytes = random_blocks(format, rows, columns, 41);
        let matrix = QuantizedMatrix::from_bytes(format, [rows, columns], &bytes, device).unwrap();
        let w = host_matrix(format, &bytes);
        let picked = [8i32, 0, 3, 3, 7, 1];
        let ids = Tensor::from_vec(picked.to_vec(), &[2, 3], device).unwrap();
        let out = matrix.select_rows(&ids).unwrap();
        assert_eq!(out.shape(), &[2, 3, columns]);
        let expected: Vec<f32> = picked
            .iter()
            .flat_map(|&r| w[r as usize * columns..(r as usize + 1) * columns].to_vec())
            .collect();
        assert_close(&values(&out), &expected, 1e-6, 1e-6, "select_rows");
        let bad = Tensor::from_vec(vec![2i32, 9], &[2], device).unwrap();
        let read = matrix.select_rows(&bad).and_then(|t| t.to_vec::<f32>());
        let message = read.expect_err("row 9 of 9").to_string();
        assert!(message.contains("dequantize_rows"), "{message}");
    }
}

/// The input's gradient is `grad · W`; the matrix has none.
fn gradient_reaches_the_input(device: &Device) {
    let (m, n, k) = (3, 16, 256);
    let format = QuantFormat::Q6K;
    let bytes = random_blocks(format, n, k, 53);
    let matrix = QuantizedMatrix::from_bytes(format, [n, k], &bytes, device).unwrap();
    let w = host_matrix(format, &bytes);
    let x = Tensor::from_vec(pseudo_random(m * k, 7), &[m, k], device)
        .unwrap()
        .requires_grad_(true);
    let scale_values = pseudo_random(m * n, 9);
    let scale = Tensor::from_vec(scale_values.clone(), &[m, n], device).unwrap();
    let loss = x
        .linear_quantized(&matrix)
        .unwrap()
        .mul(&scale)
        .unwrap()
        .sum_all()
        .unwrap();
    loss.backward().unwrap();
    let grad = x.grad().expect("x has a gradient");
    let mut expected = vec![0f32; m * k];
    for r in 0..m {
        for i in 0..k {
            expected[r * k + i] = (0..n)
                .map(|c| scale_values[r * n + c] as f64 * w[c * k + i] as f64)
                .sum::<f64>() as f32;
        }
    }
    assert_close(&values(&grad), &expected, 1e-5, 1e-4, "grad x");
}

/// Bad shapes, dtypes and byte counts are errors naming the op.
fn bad_operands_are_errors(device: &Device) {
    let format = QuantFormat::Q4_0;
    let bytes = random_blocks(format, 4, 64, 61);
    let wrong_length = QuantizedMatrix::from_bytes(format, [4, 64], &bytes[1..], device);
    assert!(wrong_length
        .unwrap_err()
        .to_string()
        .contains("QuantizedMatrix::from_bytes"));
    let partial_block = QuantizedMatrix::from_bytes(format, [4, 48], &bytes, device);
    assert!(partial_block
        .unwrap_err()
        .to_string()
        .contains("whole blocks"));
    let matrix = QuantizedMatrix::from_bytes(format, [4, 64], &bytes, device).unwrap();
    let wrong_k = Tensor::zeros(&[2, 32], DType::F32, device).unwrap();
    let message = wrong_k.linear_quantized(&matrix).unwrap_err().to_string();
    assert!(message.contains("linear_quantized"), "{message}");
    let integers = Tensor::zeros(&[2, 64], DType::I32, device).unwrap();
    let message = integers.linear_quantized(&matrix).unwrap_err().to_string();
    assert!(message.contains("floats"), "{message}");
    let float_ids = Tensor::zeros(&[2], DType::F32, device).unwrap();
    assert!(matrix.select_rows(&float_ids).is_err());
}

anygrad_testing::device_tests!(
    dequantize_matches_the_host_reference,
    products_match_the_dense_product,
    products_of_views_and_half_inputs,
    select_rows_looks_rows_up,
    gradient_reaches_the_input,
    bad_operands_are_errors,
);
