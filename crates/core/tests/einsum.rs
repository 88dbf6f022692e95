//! `Tensor::einsum` against products written out by hand: a batched matrix product, a trace, an
//! outer product, an implicit output, `...` dims broadcast between operands, a diagonal, three
//! operands, and errors that name the op. Written once over each device.

use anygrad_core::{Device, Tensor};
use anygrad_testing::{assert_close, random_tensor, values};

/// `a x b` for `[b, i, j]` and `[b, j, k]` by loops over the host values.
fn batched_product(
    a: &[f32],
    b: &[f32],
    (batch, i, j, k): (usize, usize, usize, usize),
) -> Vec<f32> {
    let mut out = vec![0.0f32; batch * i * k];
    for n in 0..batch {
        for r in 0..i {
            for c in 0..k {
                out[(n * i + r) * k + c] = (0..j)
                    .map(|m| a[(n * i + r) * j + m] * b[(n * j + m) * k + c])
                    .sum();
            }
        }
    }
    out
}

fn einsum_matches_hand_written_products(device: &Device) {
    let a = random_tensor(&[2, 3, 4], 1, device);
    let b = random_tensor(&[2, 4, 5], 2, device);
    let expected = batched_product(&values(&a), &values(&b), (2, 3, 4, 5));
    let product = Tensor::einsum("bij,bjk->bik", &[&a, &b]).unwrap();
    assert_eq!(product.shape(), &[2, 3, 5]);
    assert_close(&values(&product), &expected, 1e-5, 1e-5, "bij,bjk->bik");
    // The same with spaces, `...` for the batch dim, and the output permuted.
    let permuted = Tensor::einsum("... i j, ... j k -> ... k i", &[&a, &b]).unwrap();
    assert_close(
        &values(&permuted),
        &values(&product.transpose(1, 2).unwrap().contiguous().unwrap()),
        1e-5,
        1e-5,
        "...ij,...jk->...ki",
    );
    // Implicit output: letters used once, alphabetically (`ik`), after summing j.
    let square = random_tensor(&[4, 4], 3, device);
    let m = values(&square);
    let trace: f32 = (0..4).map(|i| m[i * 5]).sum();
    assert_close(
        &values(&Tensor::einsum("ii->", &[&square]).unwrap()),
        &[trace],
        1e-5,
        1e-5,
        "trace",
    );
    let diagonal: Vec<f32> = (0..4).map(|i| m[i * 5]).collect();
    assert_close(
        &values(&Tensor::einsum("ii->i", &[&square]).unwrap()),
        &diagonal,
        0.0,
        0.0,
        "diagonal",
    );
    let x = random_tensor(&[3], 4, device);
    let y = random_tensor(&[2], 5, device);
    let (xs, ys) = (values(&x), values(&y));
    let outer: Vec<f32> = xs
        .iter()
        .flat_map(|p| ys.iter().map(move |q| p * q))
        .collect();
    assert_close(
        &values(&Tensor::einsum("i,j", &[&x, &y]).unwrap()),
        &outer,
        1e-6,
        1e-6,
        "outer product, implicit output",
    );
    // Three operands: sum_i x_i * M_ij * z_j.
    let matrix = random_tensor(&[3, 2], 6, device);
    let mv = values(&matrix);
    let bilinear: f32 = (0..3)
        .flat_map(|i| (0..2).map(move |j| (i, j)))
        .map(|(i, j)| xs[i] * mv[i * 2 + j] * ys[j])
        .sum();
    assert_close(
        &values(&Tensor::einsum("i,ij,j->", &[&x, &matrix, &y]).unwrap()),
        &[bilinear],
        1e-5,
        1e-5,
        "three operands",
    );
    // `...` dims broadcast between operands: [2, 1, 3] against [4, 3].
    let left = random_tensor(&[2, 1, 3], 7, device);
    let right = random_tensor(&[4, 3], 8, device);
    let broadcast = Tensor::einsum("...i,...i->...", &[&left, &right]).unwrap();
    assert_eq!(broadcast.shape(), &[2, 4]);
    let expected = left.mul(&right).unwrap().sum(&[-1], false).unwrap();
    assert_close(
        &values(&broadcast),
        &values(&expected),
        1e-5,
        1e-5,
        "broadcast ...",
    );
    for (equation, operands, needle) in [
        ("ij,jk->ik", vec![&a], "terms"),
        ("ij->ij", vec![&a], "rank"),
        ("ij,jk->iz", vec![&square, &square], "no input term"),
        ("i1->i", vec![&x], "letters"),
        ("ij,jk->ik", vec![&matrix, &matrix], "sizes"),
    ] {
        let error = Tensor::einsum(equation, &operands).unwrap_err().to_string();
        assert!(
            error.contains("einsum") && error.contains(needle),
            "{equation}: {error}"
        );
    }
}

anygrad_testing::device_tests!(einsum_matches_hand_written_products);
