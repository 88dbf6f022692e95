//! Tests of `index_add` (`Tensor::index_add`, the backward of `index_select`): every result is
//! compared with a host loop, on the CPU and the GPU — one index repeated thousands of times
//! (the GPU's segment crossing many chunks), random indices with repeats, dims 0 and 1 of 3-D
//! tensors, strided views, f16 and i32, empty indices, bad indices and shapes (errors, and the
//! device still works afterwards), the gradients through `index_select` and `index_add`, and
//! the GPU's determinism (two runs give the same bits).

use anygrad_core::{DType, Device, Error, Tensor};
use anygrad_testing::assert_close;

/// Deterministic pseudo-random numbers (a 64-bit LCG), `count` of them below `bound`.
fn lcg(seed: u64, count: usize, bound: u64) -> Vec<u64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        })
        .collect()
}

/// Values that f32 sums exactly in any order (multiples of 1/4 below 8 in magnitude): the GPU's
/// chunked sums then equal the host's sequential ones bit for bit.
fn exact_values(seed: u64, count: usize) -> Vec<f32> {
    lcg(seed, count, 64)
        .into_iter()
        .map(|v| (v as f32 - 32.0) * 0.25)
        .collect()
}

/// The host reference: `base` of `shape` with `src` added at `indices` along `dim`, in f64.
fn host_index_add(
    base: &[f32],
    shape: &[usize],
    dim: usize,
    indices: &[i32],
    src: &[f32],
) -> Vec<f32> {
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let (size, count) = (shape[dim], indices.len());
    let mut out: Vec<f64> = base.iter().map(|&v| v as f64).collect();
    for o in 0..outer {
        for (j, &index) in indices.iter().enumerate() {
            for c in 0..inner {
                out[(o * size + index as usize) * inner + c] +=
                    src[(o * count + j) * inner + c] as f64;
            }
        }
    }
    out.into_iter().map(|v| v as f32).collect()
}

/// Run one `index_add` with exact values on `device` and compare it with the host loop.
fn check_exact(device: &Device, shape: &[usize], dim: usize, indices: &[i32], seed: u64) {
    let numel: usize = shape.iter().product();
    let mut src_shape = shape.to_vec();
    src_shape[dim] = indices.len();
    let base = exact_values(seed, numel);
    let src = exact_values(seed + 1, src_shape.iter().product());
    let expected = host_index_add(&base, shape, dim, indices, &src);
    let out = Tensor::from_vec(base, shape, device)
        .unwrap()
        .index_add(
            dim as isize,
            &Tensor::from_vec(indices.to_vec(), &[indices.len()], device).unwrap(),
            &Tensor::from_vec(src, &src_shape, device).unwrap(),
        )
        .unwrap();
    assert_eq!(out.shape(), shape);
    assert_eq!(
        out.to_vec_f32().unwrap(),
        expected,
        "index_add {shape:?} dim {dim}"
    );
}

fn all_indices_equal(device: &Device) {
    // One row hit by every index (an embedding's token-type row): 8192 on the CPU, 2000 on
    // the (often software) GPU, which still crosses 63 chunks.
    let (count, columns) = match device {
        Device::Cpu => (8192, 32),
        _ => (2000, 64),
    };
    check_exact(device, &[5, columns], 0, &vec![3; count], 1);
}

fn random_indices_with_repeats(device: &Device) {
    let indices: Vec<i32> = lcg(7, 300, 7).into_iter().map(|v| v as i32).collect();
    check_exact(device, &[7, 5], 0, &indices, 2);
    // Long runs of a few values next to single ones.
    let mut mixed: Vec<i32> = vec![1; 90];
    mixed.extend(lcg(8, 40, 9).into_iter().map(|v| v as i32));
    mixed.extend(vec![4; 70]);
    check_exact(device, &[9, 3], 0, &mixed, 3);
}

fn dims_of_a_3d_tensor(device: &Device) {
    let along_0: Vec<i32> = lcg(9, 40, 5).into_iter().map(|v| v as i32).collect();
    check_exact(device, &[5, 3, 2], 0, &along_0, 4);
    let along_1: Vec<i32> = lcg(10, 50, 6).into_iter().map(|v| v as i32).collect();
    check_exact(device, &[3, 6, 4], 1, &along_1, 5);
    check_exact(device, &[3, 4, 6], 2, &along_1, 6);
}

fn strided_views(device: &Device) {
    // base: the transpose of a [4, 6] tensor; src: a narrowed transpose; indices: every other
    // element of a longer vector.
    let base_data = exact_values(11, 24);
    let src_data = exact_values(12, 8 * 10);
    let index_data: Vec<i32> = lcg(13, 10, 6).into_iter().map(|v| v as i32).collect();
    let base = Tensor::from_vec(base_data.clone(), &[4, 6], device)
        .unwrap()
        .t()
        .unwrap();
    let src = Tensor::from_vec(src_data.clone(), &[8, 10], device)
        .unwrap()
        .narrow(0, 2, 4)
        .unwrap()
        .t()
        .unwrap();
    let spread: Vec<i32> = index_data.iter().flat_map(|&i| [i, -1]).collect();
    let indices = Tensor::from_vec(spread, &[20], device)
        .unwrap()
        .reshape([10, 2])
        .unwrap()
        .narrow(1, 0, 1)
        .unwrap()
        .reshape([10])
        .unwrap();
    let out = base.index_add(0, &indices, &src).unwrap();
    // The same on contiguous host copies.
    let base_host: Vec<f32> = (0..6)
        .flat_map(|r| (0..4).map(move |c| (r, c)))
        .map(|(r, c)| base_data[c * 6 + r])
        .collect();
    let src_host: Vec<f32> = (0..10)
        .flat_map(|r| (0..4).map(move |c| (r, c)))
        .map(|(r, c)| src_data[(c + 2) * 10 + r])
        .collect();
    let expected = host_index_add(&base_host, &[6, 4], 0, &index_data, &src_host);
    assert_eq!(out.to_vec_f32().unwrap(), expected);
}

fn half_and_integer_dtypes(device: &Device) {
    let indices: Vec<i32> = lcg(14, 120, 4).into_iter().map(|v| v as i32).collect();
    let base = exact_values(15, 12);
    let src = exact_values(16, 120 * 3);
    let expected = host_index_add(&base, &[4, 3], 0, &indices, &src);
    let index = Tensor::from_vec(indices.clone(), &[120], device).unwrap();
    // f16: the values and their sums (below 256 in magnitude, quarters) are exact in f16.
    let to = |data: &[f32], shape: &[usize], dtype| {
        Tensor::from_vec(data.to_vec(), shape, device)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    if anygrad_testing::f16_or_skip(device, "half_and_integer_dtypes") {
        let half = to(&base, &[4, 3], DType::F16)
            .index_add(0, &index, &to(&src, &[120, 3], DType::F16))
            .unwrap();
        assert_eq!(half.dtype(), DType::F16);
        assert_eq!(half.to_vec_f32().unwrap(), expected);
    }
    // i32 (values times 4, exact integers) with u8 indices.
    let scale = |data: &[f32]| data.iter().map(|v| v * 4.0).collect::<Vec<f32>>();
    let index_u8 = index.to_dtype(DType::U8).unwrap();
    let integers = to(&scale(&base), &[4, 3], DType::I32)
        .index_add(0, &index_u8, &to(&scale(&src), &[120, 3], DType::I32))
        .unwrap();
    assert_eq!(integers.dtype(), DType::I32);
    assert_eq!(integers.to_vec_f32().unwrap(), scale(&expected));
}

fn empty_indices(device: &Device) {
    let base = Tensor::from_vec(exact_values(17, 6), &[3, 2], device).unwrap();
    let indices = Tensor::from_vec(Vec::<i32>::new(), &[0], device).unwrap();
    let src = Tensor::zeros(&[0, 2], DType::F32, device).unwrap();
    let out = base.index_add(0, &indices, &src).unwrap();
    assert_eq!(out.to_vec_f32().unwrap(), base.to_vec_f32().unwrap());
}

fn bad_indices_and_shapes(device: &Device) {
    let base = Tensor::zeros(&[4, 3], DType::F32, device).unwrap();
    let src = Tensor::ones(&[2, 3], DType::F32, device).unwrap();
    for bad in [[0i32, 4], [-1, 2]] {
        let indices = Tensor::from_vec(bad.to_vec(), &[2], device).unwrap();
        let error = base
            .index_add(0, &indices, &src)
            .and_then(|t| t.to_vec_f32())
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::InvalidArgument {
                    op: "index_add",
                    ..
                }
            ),
            "{bad:?}: {error}"
        );
    }
    // The device still works after the error.
    let indices = Tensor::from_vec(vec![3i32, 3], &[2], device).unwrap();
    let out = base.index_add(0, &indices, &src).unwrap();
    assert_eq!(out.to_vec_f32().unwrap()[9..], [2.0, 2.0, 2.0]);
    // Wrong shapes and dtypes name the op.
    let wrong_src = Tensor::ones(&[2, 4], DType::F32, device).unwrap();
    let two_d = Tensor::from_vec(vec![0i32, 1], &[1, 2], device).unwrap();
    let float_indices = Tensor::zeros(&[2], DType::F32, device).unwrap();
    let mut errors = vec![
        base.index_add(0, &indices, &wrong_src).unwrap_err(),
        base.index_add(0, &two_d, &src).unwrap_err(),
        base.index_add(0, &float_indices, &src).unwrap_err(),
        base.index_add(2, &indices, &src).unwrap_err(),
    ];
    if anygrad_testing::f16_or_skip(device, "bad_indices_and_shapes") {
        let half_src = src.to_dtype(DType::F16).unwrap();
        errors.push(base.index_add(0, &indices, &half_src).unwrap_err());
    }
    for error in errors {
        assert!(error.to_string().contains("index_add"), "{error}");
    }
}

fn embedding_gradient(device: &Device) {
    // y = weight[idx] (an embedding lookup); loss = sum(y * ramp): d weight[r] = sum of the
    // ramp rows whose index is r.
    let weight = Tensor::from_vec(exact_values(18, 40), &[10, 4], device)
        .unwrap()
        .requires_grad_(true);
    let indices: Vec<i32> = lcg(19, 64, 10).into_iter().map(|v| v as i32).collect();
    let index = Tensor::from_vec(indices.clone(), &[64], device).unwrap();
    let ramp = exact_values(20, 64 * 4);
    let y = weight.index_select(0, &index).unwrap();
    y.mul(&Tensor::from_vec(ramp.clone(), &[64, 4], device).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let expected = host_index_add(&[0.0; 40], &[10, 4], 0, &indices, &ramp);
    assert_eq!(weight.grad().unwrap().to_vec_f32().unwrap(), expected);
}

fn index_add_gradient(device: &Device) {
    // out = base.index_add(1, idx, src); loss = sum(out * ramp): d base = ramp,
    // d src = ramp[:, idx].
    let base = Tensor::zeros(&[2, 5], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let src = Tensor::ones(&[2, 3], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let index = Tensor::from_vec(vec![4i32, 0, 4], &[3], device).unwrap();
    let ramp: Vec<f32> = (0..10).map(|v| v as f32).collect();
    base.index_add(1, &index, &src)
        .unwrap()
        .mul(&Tensor::from_vec(ramp.clone(), &[2, 5], device).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(base.grad().unwrap().to_vec_f32().unwrap(), ramp);
    assert_eq!(
        src.grad().unwrap().to_vec_f32().unwrap(),
        [4.0, 0.0, 4.0, 9.0, 5.0, 9.0]
    );
}

fn deterministic_and_close_to_the_cpu(device: &Device) {
    // Random floats (sums round): two runs give the same bits, and match the CPU closely.
    let mut indices: Vec<i32> = vec![0; 700];
    indices.extend(lcg(21, 600, 50).into_iter().map(|v| v as i32));
    let count = indices.len();
    let src: Vec<f32> = lcg(22, count * 48, 1 << 20)
        .into_iter()
        .map(|v| v as f32 / (1 << 19) as f32 - 1.0)
        .collect();
    let run = || {
        Tensor::zeros(&[50, 48], DType::F32, device)
            .unwrap()
            .index_add(
                0,
                &Tensor::from_vec(indices.clone(), &[count], device).unwrap(),
                &Tensor::from_vec(src.clone(), &[count, 48], device).unwrap(),
            )
            .unwrap()
            .to_vec_f32()
            .unwrap()
    };
    let (first, second) = (run(), run());
    let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    assert_eq!(bits(&first), bits(&second), "two runs differ");
    let expected = host_index_add(&[0.0; 50 * 48], &[50, 48], 0, &indices, &src);
    assert_close(&first, &expected, 1e-4, 1e-5, "index_add of random floats");
}

anygrad_testing::device_tests!(
    all_indices_equal,
    random_indices_with_repeats,
    dims_of_a_3d_tensor,
    strided_views,
    half_and_integer_dtypes,
    empty_indices,
    bad_indices_and_shapes,
    embedding_gradient,
    index_add_gradient,
    deterministic_and_close_to_the_cpu,
);
