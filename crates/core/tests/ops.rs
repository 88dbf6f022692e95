//! Ops against hand-computed values, on every device (one body over `&Device`).

use anygrad_core::op::UnaryOp;
use anygrad_core::{Conv2dParams, DType, Device, Error, MemoryFormat, Tensor};
use anygrad_testing::{assert_close, tensor, values};

fn creation(device: &Device) {
    assert_eq!(
        values(&Tensor::zeros(&[2, 2], DType::F32, device).unwrap()),
        vec![0.0; 4]
    );
    assert_eq!(
        values(&Tensor::full(&[3], 2.5, DType::F32, device).unwrap()),
        vec![2.5; 3]
    );
    assert_eq!(
        values(&Tensor::arange(0.0, 5.0, 2.0, DType::F32, device).unwrap()),
        vec![0.0, 2.0, 4.0]
    );
    let ints = Tensor::arange(1.0, 4.0, 1.0, DType::I32, device).unwrap();
    assert_eq!(ints.to_vec::<i32>().unwrap(), vec![1, 2, 3]);
    let r = Tensor::randint(-3, 3, &[1000], device).unwrap();
    let v = r.to_vec::<i32>().unwrap();
    assert!(v.iter().all(|&x| (-3..3).contains(&x)));
    assert!(v.contains(&-3) && v.contains(&2));
    assert_eq!(
        Tensor::scalar(7.0, DType::F32, device)
            .unwrap()
            .item_f64()
            .unwrap(),
        7.0
    );
}

fn random_is_seeded(device: &Device) {
    anygrad_core::manual_seed(7);
    let a = values(&Tensor::randn(&[64], DType::F32, device).unwrap());
    anygrad_core::manual_seed(7);
    let b = values(&Tensor::randn(&[64], DType::F32, device).unwrap());
    assert_eq!(a, b);
    // Same numbers on the CPU as on this device.
    anygrad_core::manual_seed(7);
    let cpu = values(&Tensor::randn(&[64], DType::F32, &Device::Cpu).unwrap());
    assert_close(&a, &cpu, 1e-5, 1e-5, "randn cpu parity");
    let u = values(&Tensor::rand(&[4096], DType::F32, device).unwrap());
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
}

fn unary_values(device: &Device) {
    let x = tensor(&[-2.0, -0.5, 0.0, 0.5, 2.0], &[5], device);
    let close = |t: anygrad_core::Result<Tensor>, expected: &[f32], name: &str| {
        assert_close(&values(&t.unwrap()), expected, 1e-5, 1e-5, name)
    };
    close(x.neg(), &[2.0, 0.5, 0.0, -0.5, -2.0], "neg");
    close(x.abs(), &[2.0, 0.5, 0.0, 0.5, 2.0], "abs");
    close(x.relu(), &[0.0, 0.0, 0.0, 0.5, 2.0], "relu");
    close(
        x.exp(),
        &[0.135_335_28, 0.606_530_66, 1.0, 1.648_721_3, 7.389_056],
        "exp",
    );
    close(
        x.tanh(),
        &[-0.964_027_6, -0.462_117_16, 0.0, 0.462_117_16, 0.964_027_6],
        "tanh",
    );
    close(
        x.sigmoid(),
        &[0.119_202_92, 0.377_540_67, 0.5, 0.622_459_3, 0.880_797_1],
        "sigmoid",
    );
    close(
        x.gelu(),
        &[-0.045_500_26, -0.154_268_8, 0.0, 0.345_731_2, 1.954_499_7],
        "gelu",
    );
    close(
        x.silu(),
        &[-0.238_405_84, -0.188_770_33, 0.0, 0.311_229_67, 1.761_594_2],
        "silu",
    );
    close(x.clamp(-1.0, 1.0), &[-1.0, -0.5, 0.0, 0.5, 1.0], "clamp");
    close(
        x.abs().unwrap().sqrt(),
        &[
            2.0f32.sqrt(),
            0.5f32.sqrt(),
            0.0,
            0.5f32.sqrt(),
            2.0f32.sqrt(),
        ],
        "sqrt",
    );
    close(
        x.pow_scalar(2.0),
        &[4.0, 0.25, 0.0, 0.25, 4.0],
        "pow_scalar",
    );
    // Guarded against overflow: large |x| saturates instead of giving NaN.
    let big = tensor(&[-1000.0, 1000.0], &[2], device);
    close(big.sigmoid(), &[0.0, 1.0], "sigmoid saturates");
    close(big.tanh(), &[-1.0, 1.0], "tanh saturates");
}

fn binary_broadcasting(device: &Device) {
    let a = tensor(&[1.0, 2.0, 3.0], &[3, 1], device);
    let b = tensor(&[10.0, 20.0], &[2], device);
    let sum = a.add(&b).unwrap();
    assert_eq!(sum.shape(), &[3, 2]);
    assert_eq!(values(&sum), vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    assert_eq!(
        values(&a.mul(&b).unwrap()),
        vec![10.0, 20.0, 20.0, 40.0, 30.0, 60.0]
    );
    assert_eq!(values(&b.div_scalar(10.0).unwrap()), vec![1.0, 2.0]);
    assert_eq!(values(&b.rsub_scalar(30.0).unwrap()), vec![20.0, 10.0]);
    assert_eq!(
        values(&a.maximum(&tensor(&[2.0], &[1], device)).unwrap()),
        vec![2.0, 2.0, 3.0]
    );
    let lt = a.lt_scalar(2.5).unwrap();
    assert_eq!(lt.dtype(), DType::Bool);
    assert_eq!(lt.to_vec::<bool>().unwrap(), vec![true, true, false]);
    let picked = Tensor::where_(&lt, &a, &a.neg().unwrap()).unwrap();
    assert_eq!(values(&picked), vec![1.0, 2.0, -3.0]);
    let ia = Tensor::from_vec(vec![7i32, -8, 9], &[3], device).unwrap();
    assert_eq!(
        ia.add_scalar(1.0).unwrap().to_vec::<i32>().unwrap(),
        vec![8, -7, 10]
    );
}

/// Rows of every length from 1 to past a workgroup (the GPU folds short rows several to a
/// workgroup, a few lanes each), reduced along the last dim and along a strided dim, against
/// loops on the host: sums, extremes with ties, and arg reductions (first index wins).
fn reductions_of_short_and_long_rows(device: &Device) {
    for count in [1usize, 2, 3, 5, 8, 31, 128, 300, 1025] {
        let rows = 37;
        // Small integers: every sum is exact in f32, and values repeat (ties).
        let data: Vec<f32> = (0..rows * count)
            .map(|i| ((i * 7919 + count) % 13) as f32 - 6.0)
            .collect();
        let x = Tensor::from_vec(data.clone(), &[rows, count], device).unwrap();
        let row = |r: usize| &data[r * count..(r + 1) * count];
        let sums: Vec<f32> = (0..rows).map(|r| row(r).iter().sum()).collect();
        let maxima: Vec<f32> = (0..rows)
            .map(|r| row(r).iter().fold(f32::MIN, |a, &b| a.max(b)))
            .collect();
        let first_max: Vec<i32> = (0..rows)
            .map(|r| {
                let best = row(r).iter().fold(f32::MIN, |a, &b| a.max(b));
                row(r).iter().position(|&v| v == best).unwrap() as i32
            })
            .collect();
        let first_min: Vec<i32> = (0..rows)
            .map(|r| {
                let best = row(r).iter().fold(f32::MAX, |a, &b| a.min(b));
                row(r).iter().position(|&v| v == best).unwrap() as i32
            })
            .collect();
        assert_eq!(values(&x.sum(&[1], false).unwrap()), sums, "sum, {count}");
        assert_eq!(values(&x.max(&[1], false).unwrap()), maxima, "max, {count}");
        assert_eq!(
            x.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
            first_max,
            "argmax, {count}"
        );
        assert_eq!(
            x.argmin(1, false).unwrap().to_vec::<i32>().unwrap(),
            first_min,
            "argmin, {count}"
        );
        // The same rows as the columns of a transposed view (strided reads).
        let transposed = x.t().unwrap().contiguous().unwrap().t().unwrap();
        assert_eq!(
            values(&transposed.sum(&[1], false).unwrap()),
            sums,
            "strided sum, {count}"
        );
    }
    // A NaN wins its row's max and argmax.
    let mut data = vec![1.0f32; 4 * 128];
    data[128 + 77] = f32::NAN;
    let x = Tensor::from_vec(data, &[4, 128], device).unwrap();
    let max = values(&x.max(&[1], false).unwrap());
    assert!(max[1].is_nan() && max[0] == 1.0 && max[2] == 1.0, "{max:?}");
    assert_eq!(
        x.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
        vec![0, 77, 0, 0]
    );
}

fn reductions(device: &Device) {
    let x = tensor(&[1.0, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3], device);
    assert_eq!(values(&x.sum(&[1], false).unwrap()), vec![9.0, 12.0]);
    assert_eq!(x.sum(&[0], true).unwrap().shape(), &[1, 3]);
    assert_eq!(values(&x.sum(&[0], true).unwrap()), vec![5.0, 7.0, 9.0]);
    assert_eq!(x.sum_all().unwrap().item_f64().unwrap(), 21.0);
    assert_eq!(values(&x.mean(&[-1], false).unwrap()), vec![3.0, 4.0]);
    assert_eq!(values(&x.max(&[1], false).unwrap()), vec![5.0, 6.0]);
    assert_eq!(values(&x.min(&[0], false).unwrap()), vec![1.0, 2.0, 3.0]);
    assert_eq!(
        x.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 2]
    );
    assert_eq!(
        x.argmin(0, false).unwrap().to_vec::<i32>().unwrap(),
        vec![0, 1, 0]
    );
    assert_close(
        &values(&x.var(&[1], false, true).unwrap()),
        &[4.0, 4.0],
        1e-6,
        1e-6,
        "var",
    );
    assert_close(
        &values(&x.var(&[1], false, false).unwrap()),
        &[8.0 / 3.0, 8.0 / 3.0],
        1e-6,
        1e-6,
        "var biased",
    );
    // Reducing a transposed view.
    assert_eq!(
        values(&x.t().unwrap().sum(&[1], false).unwrap()),
        vec![5.0, 7.0, 9.0]
    );
    // Empty tensors sum to zero.
    let empty = Tensor::zeros(&[0, 3], DType::F32, device).unwrap();
    assert_eq!(values(&empty.sum(&[0], false).unwrap()), vec![0.0; 3]);
}

fn matmul_cases(device: &Device) {
    let a = tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], device);
    let b = tensor(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2], device);
    assert_eq!(
        values(&a.matmul(&b).unwrap()),
        vec![58.0, 64.0, 139.0, 154.0]
    );
    // Transposed operand (a view), vector operands, batch broadcasting.
    assert_eq!(
        values(&a.matmul(&a.t().unwrap()).unwrap()),
        vec![14.0, 32.0, 32.0, 77.0]
    );
    let v = tensor(&[1.0, 1.0, 1.0], &[3], device);
    assert_eq!(values(&a.matmul(&v).unwrap()), vec![6.0, 15.0]);
    let batched = Tensor::stack(&[&a, &a.mul_scalar(2.0).unwrap()], 0).unwrap();
    let out = batched.matmul(&b).unwrap();
    assert_eq!(out.shape(), &[2, 2, 2]);
    assert_eq!(
        values(&out),
        vec![58.0, 64.0, 139.0, 154.0, 116.0, 128.0, 278.0, 308.0]
    );
    let bb = Tensor::stack(&[&b, &b], 0).unwrap().unsqueeze(0).unwrap(); // [1, 2, 3, 2]
    assert_eq!(batched.matmul(&bb).unwrap().shape(), &[1, 2, 2, 2]);
    // Transposed views over several tiles and a partial k block (the GPU kernel loads them
    // along their contiguous dim), as `linear` multiplies by its weight, in f32 and f16.
    for dtype in [DType::F32, DType::F16] {
        if dtype == DType::F16 && !anygrad_testing::f16_or_skip(device, "matmul_cases (f16)") {
            continue;
        }
        let (m, k, n) = (70, 37, 130);
        let a_t = Tensor::randn(&[k, m], DType::F32, device).unwrap();
        let b_t = Tensor::randn(&[n, k], DType::F32, device).unwrap();
        let (a_t, b_t) = (a_t.to_dtype(dtype).unwrap(), b_t.to_dtype(dtype).unwrap());
        let (a, b) = (a_t.t().unwrap(), b_t.t().unwrap());
        let dense = |t: &Tensor| t.contiguous().unwrap().to_device(&Device::Cpu).unwrap();
        let expected = dense(&a).to_dtype(DType::F32).unwrap();
        let expected = expected
            .matmul(&dense(&b).to_dtype(DType::F32).unwrap())
            .unwrap();
        for (what, product) in [
            ("a^T b^T", a.matmul(&b).unwrap()),
            (
                "a b^T",
                dense(&a).to_device(device).unwrap().matmul(&b).unwrap(),
            ),
            (
                "a^T b",
                a.matmul(&dense(&b).to_device(device).unwrap()).unwrap(),
            ),
        ] {
            let tolerance = if dtype == DType::F16 { 3e-2 } else { 1e-4 };
            assert_close(
                &values(&product.to_dtype(DType::F32).unwrap()),
                &values(&expected),
                tolerance,
                tolerance,
                &format!("{what} {dtype}"),
            );
        }
    }
}

fn views_and_joins(device: &Device) {
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32, device)
        .unwrap()
        .reshape([3, 4])
        .unwrap();
    assert_eq!(
        values(&x.narrow(1, 1, 2).unwrap()),
        vec![1.0, 2.0, 5.0, 6.0, 9.0, 10.0]
    );
    assert_eq!(x.reshape([-1, 6]).unwrap().shape(), &[2, 6]);
    assert_eq!(
        values(&x.t().unwrap().contiguous().unwrap())[..4],
        [0.0, 4.0, 8.0, 1.0]
    );
    assert_eq!(x.unsqueeze(0).unwrap().shape(), &[1, 3, 4]);
    assert_eq!(x.unsqueeze(0).unwrap().squeeze(0).unwrap().shape(), &[3, 4]);
    assert_eq!(x.permute(&[1, 0]).unwrap().shape(), &[4, 3]);
    let parts = x.chunk(2, 1).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(values(&parts[1]), vec![2.0, 3.0, 6.0, 7.0, 10.0, 11.0]);
    let split = x.split(2, 0).unwrap();
    assert_eq!(
        split.iter().map(|t| t.shape()[0]).collect::<Vec<_>>(),
        vec![2, 1]
    );
    let joined = Tensor::cat(&[&split[1], &split[0]], 0).unwrap();
    assert_eq!(values(&joined)[..4], [8.0, 9.0, 10.0, 11.0]);
    let stacked = Tensor::stack(&[&x, &x], 1).unwrap();
    assert_eq!(stacked.shape(), &[3, 2, 4]);
    let expanded = tensor(&[1.0, 2.0], &[2, 1], device)
        .expand(&[2, 3])
        .unwrap();
    assert_eq!(values(&expanded), vec![1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    // A transposed reshape copies; flatten merges dims.
    assert_eq!(
        values(&x.t().unwrap().reshape([12]).unwrap())[..3],
        [0.0, 4.0, 8.0]
    );
    assert_eq!(
        x.unsqueeze(0).unwrap().flatten(1, -1).unwrap().shape(),
        &[1, 12]
    );
}

fn indexing(device: &Device) {
    let x = tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2], device);
    let idx = Tensor::from_vec(vec![2i32, 0], &[2], device).unwrap();
    assert_eq!(
        values(&x.index_select(0, &idx).unwrap()),
        vec![5.0, 6.0, 1.0, 2.0]
    );
    let g = Tensor::from_vec(vec![1i32, 0, 0], &[3, 1], device).unwrap();
    assert_eq!(values(&x.gather(1, &g).unwrap()), vec![2.0, 3.0, 5.0]);
    let base = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    let sidx = Tensor::from_vec(vec![0i32, 0, 2, 1], &[2, 2], device).unwrap();
    let src = tensor(&[1.0, 2.0, 3.0, 4.0], &[2, 2], device);
    assert_eq!(
        values(&base.scatter_add(1, &sidx, &src).unwrap()),
        vec![3.0, 0.0, 0.0, 0.0, 4.0, 3.0]
    );
    let labels = Tensor::from_vec(vec![0i32, 2], &[2], device).unwrap();
    assert_eq!(
        values(&labels.one_hot(3, DType::F32).unwrap()),
        vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    );
    // Out-of-range indices are errors, not crashes.
    let bad = Tensor::from_vec(vec![3i32], &[1], device).unwrap();
    assert!(x
        .index_select(0, &bad)
        .and_then(|t| t.to_vec::<f32>())
        .is_err());
}

fn composites(device: &Device) {
    let x = tensor(&[1.0, 2.0, 3.0, 1.0, 1.0, 1.0], &[2, 3], device);
    assert_close(
        &values(&x.softmax(-1).unwrap()),
        &[
            0.090_030_57,
            0.244_728_48,
            0.665_240_94,
            1.0 / 3.0,
            1.0 / 3.0,
            1.0 / 3.0,
        ],
        1e-6,
        1e-5,
        "softmax",
    );
    assert_close(
        &values(&x.log_softmax(1).unwrap()),
        &[
            -2.407_605_6,
            -1.407_605_6,
            -0.407_605_6,
            -1.098_612_3,
            -1.098_612_3,
            -1.098_612_3,
        ],
        1e-5,
        1e-5,
        "log_softmax",
    );
    assert_close(
        &values(&x.logsumexp(&[1], false).unwrap()),
        &[3.407_605_6, 2.098_612_3],
        1e-5,
        1e-5,
        "logsumexp",
    );
    // Stable for huge logits.
    let big = tensor(&[1000.0, 0.0], &[1, 2], device);
    assert_close(
        &values(&big.softmax(1).unwrap()),
        &[1.0, 0.0],
        1e-6,
        0.0,
        "softmax stable",
    );
}

fn convolution_and_pooling(device: &Device) {
    // 1 image, 1 channel, 3x3, a 2x2 kernel of ones: sums of each 2x2 window.
    let x = Tensor::arange(1.0, 10.0, 1.0, DType::F32, device)
        .unwrap()
        .reshape([1, 1, 3, 3])
        .unwrap();
    let w = Tensor::ones(&[1, 1, 2, 2], DType::F32, device).unwrap();
    let y = x.conv2d(&w, None, Conv2dParams::default()).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 2]);
    assert_eq!(values(&y), vec![12.0, 16.0, 24.0, 28.0]);
    let padded = x
        .conv2d(
            &w,
            Some(&tensor(&[0.5], &[1], device)),
            Conv2dParams {
                padding: (1, 1),
                stride: (2, 2),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(padded.shape(), &[1, 1, 2, 2]);
    assert_eq!(values(&padded), vec![1.5, 5.5, 11.5, 28.5]);
    // Groups: two channels, each convolved with its own kernel.
    let two = Tensor::cat(&[&x, &x.mul_scalar(10.0).unwrap()], 1).unwrap();
    let wg = Tensor::cat(&[&w, &w.mul_scalar(2.0).unwrap()], 0).unwrap();
    let yg = two
        .conv2d(
            &wg,
            None,
            Conv2dParams {
                groups: 2,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        values(&yg),
        vec![12.0, 16.0, 24.0, 28.0, 240.0, 320.0, 480.0, 560.0]
    );
    assert_eq!(
        values(&x.max_pool2d((2, 2), (1, 1), (0, 0)).unwrap()),
        vec![5.0, 6.0, 8.0, 9.0]
    );
    assert_eq!(
        values(&x.avg_pool2d((2, 2), (1, 1), (0, 0)).unwrap()),
        vec![3.0, 4.0, 6.0, 7.0]
    );
    assert_eq!(
        values(&x.max_pool2d((2, 2), (2, 2), (1, 1)).unwrap()),
        vec![1.0, 3.0, 7.0, 9.0]
    );
    // Ties: each output's gradient goes to the first maximal input of its window (row-major),
    // as PyTorch routes it; overlapping windows add up.
    let ties = tensor(
        &[1.0, 2.0, 2.0, 0.0, 2.0, 2.0, 1.0, 1.0, 0.0],
        &[1, 1, 3, 3],
        device,
    )
    .requires_grad_(true);
    let pooled = ties.max_pool2d((2, 2), (1, 1), (0, 0)).unwrap();
    assert_eq!(values(&pooled), vec![2.0, 2.0, 2.0, 2.0]);
    pooled
        .mul(&tensor(&[1.0, 10.0, 100.0, 1000.0], &[1, 1, 2, 2], device))
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        values(&ties.grad().unwrap()),
        vec![0.0, 11.0, 0.0, 0.0, 1100.0, 0.0, 0.0, 0.0, 0.0]
    );
}

fn dtype_conversions(device: &Device) {
    let x = tensor(&[1.5, -2.5, 3.0], &[3], device);
    assert_eq!(
        x.to_dtype(DType::I32).unwrap().to_vec::<i32>().unwrap(),
        vec![1, -2, 3]
    );
    if anygrad_testing::f16_or_skip(device, "dtype_conversions (f16)") {
        let h = x.to_dtype(DType::F16).unwrap();
        assert_eq!(h.dtype(), DType::F16);
        assert_eq!(
            values(&h.to_dtype(DType::F32).unwrap()),
            vec![1.5, -2.5, 3.0]
        );
    }
    let moved = x
        .to_device(&Device::Cpu)
        .unwrap()
        .to_device(device)
        .unwrap();
    assert_eq!(values(&moved), vec![1.5, -2.5, 3.0]);
    // Views that are not their whole storage (offset, prefix, strided) move as their values,
    // from this device to the CPU and from the CPU to this device.
    for home in [device.clone(), Device::Cpu] {
        let grid = Tensor::arange(0.0, 12.0, 1.0, DType::F32, &home)
            .unwrap()
            .reshape([3, 4])
            .unwrap();
        let destination = if home == Device::Cpu {
            device.clone()
        } else {
            Device::Cpu
        };
        let cases = [
            (
                grid.narrow(0, 1, 2).unwrap(),
                vec![4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
            ),
            (grid.narrow(0, 0, 1).unwrap(), vec![0.0, 1.0, 2.0, 3.0]),
            (
                grid.narrow(1, 1, 2).unwrap().t().unwrap(),
                vec![1.0, 5.0, 9.0, 2.0, 6.0, 10.0],
            ),
        ];
        for (view, expected) in cases {
            let moved = view.to_device(&destination).unwrap();
            assert_eq!(moved.shape(), view.shape());
            assert_eq!(values(&moved), expected, "{home:?} -> {destination:?}");
        }
    }
    let display = format!("{x}");
    assert!(
        display.starts_with("tensor([ 1.5000, -2.5000,  3.0000]"),
        "{display}"
    );
    assert!(display.contains("dtype=float32"), "{display}");
}

/// Elementwise ops keep a channels-last operand's memory format (PyTorch's rule): unary ops,
/// scalar ops, casts and binary ops of two channels-last operands return channels-last
/// results; a channels-last and a row-major operand give a row-major one. Values and
/// gradients equal the row-major computation's.
fn elementwise_ops_keep_channels_last(device: &Device) {
    let values_of = |t: &Tensor| values(t);
    let rows = Tensor::randn(&[2, 8, 5, 6], DType::F32, device).unwrap();
    let other = Tensor::randn(&[2, 8, 5, 6], DType::F32, device).unwrap();
    let last = rows.contiguous_in(MemoryFormat::ChannelsLast).unwrap();
    let other_last = other.contiguous_in(MemoryFormat::ChannelsLast).unwrap();
    let channels_last = MemoryFormat::ChannelsLast;
    let cases: Vec<(&str, Tensor, Tensor, MemoryFormat)> = vec![
        (
            "relu",
            last.relu().unwrap(),
            rows.relu().unwrap(),
            channels_last,
        ),
        (
            "exp",
            last.exp().unwrap(),
            rows.exp().unwrap(),
            channels_last,
        ),
        (
            "mul_scalar",
            last.mul_scalar(3.0).unwrap(),
            rows.mul_scalar(3.0).unwrap(),
            channels_last,
        ),
        (
            "add of two channels-last",
            last.add(&other_last).unwrap(),
            rows.add(&other).unwrap(),
            channels_last,
        ),
        (
            "mixed formats",
            last.mul(&other).unwrap(),
            rows.mul(&other).unwrap(),
            MemoryFormat::Contiguous,
        ),
        (
            "to f16 (where the device has it)",
            last.to_dtype(DType::F16).unwrap_or_else(|_| last.clone()),
            rows.to_dtype(DType::F16).unwrap_or_else(|_| rows.clone()),
            channels_last,
        ),
    ];
    for (name, got, expected, format) in cases {
        assert_eq!(got.memory_format(), format, "{name} on {device}");
        assert_eq!(got.shape(), expected.shape(), "{name} on {device}");
        assert_close(&values_of(&got), &values_of(&expected), 1e-6, 1e-6, name);
    }
    // Gradients through kept formats equal the row-major ones.
    let grad_of = |x: &Tensor, y: &Tensor| {
        let x = x.requires_grad_(true);
        x.relu()
            .unwrap()
            .mul(y)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        values_of(&x.grad().unwrap())
    };
    let expected = grad_of(&rows.copy().unwrap(), &other);
    let got = grad_of(
        &last.copy().unwrap().contiguous_in(channels_last).unwrap(),
        &other_last,
    );
    assert_close(&got, &expected, 1e-6, 1e-6, "gradient");
}

/// Views of empty tensors at non-zero positions (a zero-size dim beside the narrowed one):
/// reading, copying and computing with them gives empty results, never an out-of-range read.
fn views_of_empty_tensors(device: &Device) {
    let empty = Tensor::zeros(&[0, 4, 3], DType::F32, device).unwrap();
    let views = [
        empty.narrow(1, 2, 2).unwrap(),
        empty.narrow(2, 1, 2).unwrap(),
        empty.slice(1, 3, 4).unwrap(),
        empty.narrow(1, 2, 2).unwrap().transpose(1, 2).unwrap(),
        empty.chunk(2, 1).unwrap().remove(1),
    ];
    for view in &views {
        assert_eq!(view.numel(), 0, "{:?}", view.shape());
        assert!(values(view).is_empty());
        assert!(values(&view.contiguous().unwrap()).is_empty());
        assert!(values(&view.add_scalar(1.0).unwrap()).is_empty());
        assert!(values(&view.mul(view).unwrap()).is_empty());
        assert!(values(&view.exp().unwrap()).is_empty());
        assert_eq!(values(&view.sum_all().unwrap()), vec![0.0]);
        let joined = Tensor::cat(&[view, view], 1).unwrap();
        assert_eq!(joined.numel(), 0);
    }
}

/// Integer tensors take the unary ops that make sense on integers (PyTorch's set: neg, abs,
/// sign, relu, and the rounding ops as identities) with exact results; every other unary op refuses them with an error that names
/// the op (as PyTorch's "exp" on a LongTensor does) and the dtype.
fn unary_ops_on_integers(device: &Device) {
    let x = Tensor::from_vec(vec![-3i32, -1, 0, 2, 5], &[5], device).unwrap();
    let integer_results: [(&str, [i32; 5]); 8] = [
        ("neg", [3, 1, 0, -2, -5]),
        ("abs", [3, 1, 0, 2, 5]),
        ("sign", [-1, -1, 0, 1, 1]),
        ("relu", [0, 0, 0, 2, 5]),
        ("floor", [-3, -1, 0, 2, 5]),
        ("ceil", [-3, -1, 0, 2, 5]),
        ("round", [-3, -1, 0, 2, 5]),
        ("trunc", [-3, -1, 0, 2, 5]),
    ];
    let float_only = [
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "reciprocal",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "gelu",
        "erf",
        "silu",
    ];
    let mut seen = Vec::new();
    for op in UnaryOp::ALL {
        match x.unary(op) {
            Ok(y) => {
                let (name, expected) = integer_results
                    .iter()
                    .find(|(name, _)| *name == op.name())
                    .unwrap_or_else(|| panic!("{op:?} ran on int32"));
                assert_eq!(y.dtype(), DType::I32, "{name}");
                assert_eq!(y.to_vec::<i32>().unwrap(), expected, "{name} on int32");
                seen.push(*name);
            }
            Err(Error::Unsupported {
                op: name, dtype, ..
            }) => {
                assert!(
                    float_only.contains(&name),
                    "{op:?} refused int32 as `{name}`"
                );
                assert_eq!(dtype, DType::I32, "{name}");
                seen.push(name);
            }
            Err(other) => panic!("{op:?} on int32: {other}"),
        }
    }
    seen.sort_unstable();
    let mut expected: Vec<&str> = integer_results.iter().map(|(name, _)| *name).collect();
    expected.extend(float_only);
    expected.sort_unstable();
    assert_eq!(seen, expected, "every unary op, each under its own name");
}

/// floor, ceil, round (halves to even, as `torch.round`) and trunc at halves, near-halves,
/// signed zeros and NaN, in F32 and F16, with zero gradients (PyTorch's).
fn rounding_ops(device: &Device) {
    let input = [
        -2.5f32,
        -1.5,
        -0.5,
        0.5,
        1.5,
        2.5,
        1.7,
        -1.7,
        2.49,
        -0.0,
        f32::NAN,
        1e6 + 0.5,
    ];
    let expected: [(&str, [f32; 12]); 4] = [
        (
            "floor",
            [
                -3.0,
                -2.0,
                -1.0,
                0.0,
                1.0,
                2.0,
                1.0,
                -2.0,
                2.0,
                -0.0,
                f32::NAN,
                1e6,
            ],
        ),
        (
            "ceil",
            [
                -2.0,
                -1.0,
                -0.0,
                1.0,
                2.0,
                3.0,
                2.0,
                -1.0,
                3.0,
                -0.0,
                f32::NAN,
                1e6 + 1.0,
            ],
        ),
        (
            "round",
            [
                -2.0,
                -2.0,
                -0.0,
                0.0,
                2.0,
                2.0,
                2.0,
                -2.0,
                2.0,
                -0.0,
                f32::NAN,
                1e6,
            ],
        ),
        (
            "trunc",
            [
                -2.0,
                -1.0,
                -0.0,
                0.0,
                1.0,
                2.0,
                1.0,
                -1.0,
                2.0,
                -0.0,
                f32::NAN,
                1e6,
            ],
        ),
    ];
    let x = tensor(&input, &[12], device).requires_grad_(true);
    for (name, want) in expected {
        let y = match name {
            "floor" => x.floor(),
            "ceil" => x.ceil(),
            "round" => x.round(),
            _ => x.trunc(),
        }
        .unwrap();
        let got = values(&y);
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let same = (g.is_nan() && w.is_nan())
                || (*g == w && g.is_sign_negative() == w.is_sign_negative());
            assert!(same, "{name}({}) = {g}, expected {w} on {device}", input[i]);
        }
        y.sum_all().unwrap().backward().unwrap();
        assert!(
            values(&x.grad().unwrap()).iter().all(|&g| g == 0.0),
            "{name} gradient"
        );
        x.zero_grad();
    }
    if anygrad_testing::f16_or_skip(device, "rounding_ops (f16)") {
        let half = tensor(&input[..9], &[9], device)
            .to_dtype(DType::F16)
            .unwrap();
        assert_eq!(
            values(&half.round().unwrap()),
            [-2.0, -2.0, 0.0, 0.0, 2.0, 2.0, 2.0, -2.0, 2.0],
            "round f16"
        );
    }
}

/// Comparisons at equal operands and at NaN (false, but `!=` true), and maximum/minimum
/// propagating a NaN from either side, as in PyTorch.
fn comparisons_and_nan(device: &Device) {
    let a = tensor(&[1.0, 2.0, 3.0, f32::NAN], &[4], device);
    let b = tensor(&[2.0, 2.0, 2.0, 2.0], &[4], device);
    let truth = |t: Tensor| values(&t.to_dtype(DType::F32).unwrap());
    assert_eq!(truth(a.lt(&b).unwrap()), [1.0, 0.0, 0.0, 0.0], "<");
    assert_eq!(truth(a.le(&b).unwrap()), [1.0, 1.0, 0.0, 0.0], "<=");
    assert_eq!(truth(a.gt(&b).unwrap()), [0.0, 0.0, 1.0, 0.0], ">");
    assert_eq!(truth(a.ge(&b).unwrap()), [0.0, 1.0, 1.0, 0.0], ">=");
    assert_eq!(truth(a.eq(&b).unwrap()), [0.0, 1.0, 0.0, 0.0], "==");
    assert_eq!(truth(a.ne(&b).unwrap()), [1.0, 0.0, 1.0, 1.0], "!=");
    for (x, y, what) in [(&a, &b, "NaN first"), (&b, &a, "NaN second")] {
        let max = values(&x.maximum(y).unwrap());
        let min = values(&x.minimum(y).unwrap());
        assert_eq!(max[..3], [2.0, 2.0, 3.0], "maximum, {what}");
        assert_eq!(min[..3], [1.0, 2.0, 2.0], "minimum, {what}");
        assert!(
            max[3].is_nan() && min[3].is_nan(),
            "{what}: {max:?} {min:?}"
        );
    }
}

anygrad_testing::device_tests!(
    comparisons_and_nan,
    rounding_ops,
    unary_ops_on_integers,
    elementwise_ops_keep_channels_last,
    creation,
    random_is_seeded,
    unary_values,
    binary_broadcasting,
    reductions,
    reductions_of_short_and_long_rows,
    matmul_cases,
    views_and_joins,
    views_of_empty_tensors,
    indexing,
    composites,
    convolution_and_pooling,
    dtype_conversions,
);
