//! `Tensor::max_pool2d` and its gradient (the `max_pool2d` / `max_pool2d_backward`
//! primitives) on every device: the device against the CPU on odd sizes, padding 0 and 1,
//! kernels 2 and 3, strides 1 and 2, permuted and narrowed inputs and strided output
//! gradients; ties route to the first tap; f16 where the device has it; integer inputs are
//! refused. (The CPU against a naive reference, dilation and NaN: the crate's
//! `backend/tests/pooling.rs`; the finite-difference check: `gradcheck.rs`.)

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{assert_close, values};

/// `count` values on a coarse grid (many ties between neighbours), deterministic.
fn coarse(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(2862933555777941757)
        .wrapping_add(3037000493);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(2862933555777941757)
                .wrapping_add(3037000493);
            ((state >> 40) % 9) as f32 * 0.5 - 2.0
        })
        .collect()
}

/// The pooled output and the input gradient for `weights` as the output gradient (routed
/// through a permute, so the primitive sees a strided gradient), on `device`.
fn pool_and_grad(
    (data, shape): (&[f32], &[usize]),
    device: &Device,
    view: &dyn Fn(&Tensor) -> Tensor,
    (kernel, stride, padding): (usize, usize, usize),
    weights: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let leaf = Tensor::from_vec(data.to_vec(), shape, device)
        .unwrap()
        .requires_grad_(true);
    let pooled = view(&leaf)
        .max_pool2d((kernel, kernel), (stride, stride), (padding, padding))
        .unwrap();
    let pooled_shape = pooled.shape().to_vec();
    let permuted = [
        pooled_shape[0],
        pooled_shape[2],
        pooled_shape[3],
        pooled_shape[1],
    ];
    let weights = Tensor::from_vec(weights.to_vec(), &permuted, device).unwrap();
    pooled
        .permute(&[0, 2, 3, 1])
        .unwrap()
        .mul(&weights)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let grad = leaf.grad().unwrap();
    assert_eq!(grad.shape(), shape);
    (values(&pooled), values(&grad))
}

fn max_pool_matches_cpu(device: &Device) {
    type View = Box<dyn Fn(&Tensor) -> Tensor>;
    // (stored shape, view of it as [n, c, h, w], name)
    let views: Vec<([usize; 4], View, &str)> = vec![
        ([2, 3, 7, 9], Box::new(|t: &Tensor| t.clone()), "contiguous"),
        (
            [2, 6, 7, 3],
            Box::new(|t: &Tensor| t.permute(&[0, 3, 1, 2]).unwrap()),
            "permuted",
        ),
        (
            [1, 3, 9, 11],
            Box::new(|t: &Tensor| t.narrow(3, 2, 7).unwrap().narrow(2, 1, 7).unwrap()),
            "narrowed",
        ),
    ];
    let windows = [
        (2, 2, 0),
        (3, 2, 1),
        (3, 1, 1),
        (2, 1, 1),
        (3, 1, 0),
        (2, 2, 1),
    ];
    for (index, (stored, view, name)) in views.iter().enumerate() {
        let numel = stored.iter().product();
        let data = coarse(numel, index as u64);
        let input = Tensor::from_vec(data.clone(), stored, &Device::Cpu).unwrap();
        for window in windows {
            let probe = view(&input)
                .max_pool2d(
                    (window.0, window.0),
                    (window.1, window.1),
                    (window.2, window.2),
                )
                .unwrap();
            let weights: Vec<f32> = (0..probe.numel()).map(|i| 1.0 + i as f32).collect();
            let (cpu_out, cpu_grad) =
                pool_and_grad((&data, stored), &Device::Cpu, view, window, &weights);
            let (out, grad) = pool_and_grad((&data, stored), device, view, window, &weights);
            let what = format!("{name} input, (kernel, stride, padding) {window:?}");
            assert_eq!(out, cpu_out, "{what}: forward");
            assert_close(&grad, &cpu_grad, 1e-4, 1e-6, &format!("{what}: gradient"));
            // Every output's gradient lands somewhere: the gradient sums to the weights'.
            let total: f32 = weights.iter().sum();
            let routed: f32 = grad.iter().sum();
            assert!(
                (routed - total).abs() <= 1e-3 * total,
                "{what}: {routed} vs {total}"
            );
        }
    }
}

fn ties_go_to_the_first_tap(device: &Device) {
    // A constant 5x5 image, 3x3 windows of stride 2 and padding 1: output (i, j)'s first tap
    // inside the image is row max(0, 2i - 1), column max(0, 2j - 1), i.e. rows/columns 0, 1, 3.
    let ones = Tensor::ones(&[1, 1, 5, 5], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let pooled = ones.max_pool2d((3, 3), (2, 2), (1, 1)).unwrap();
    assert_eq!(values(&pooled), vec![1.0; 9]);
    pooled.sum_all().unwrap().backward().unwrap();
    let mut expected = vec![0.0; 25];
    for row in [0, 1, 3] {
        for column in [0, 1, 3] {
            expected[row * 5 + column] = 1.0;
        }
    }
    assert_eq!(values(&ones.grad().unwrap()), expected);
}

fn half_precision_matches_f32(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "half_precision_matches_f32") {
        return;
    }
    let data = coarse(2 * 3 * 9 * 7, 3);
    let input = Tensor::from_vec(data, &[2, 3, 9, 7], device).unwrap();
    let half = input
        .to_dtype(DType::F16)
        .unwrap()
        .detach()
        .requires_grad_(true);
    let single = input.detach().requires_grad_(true);
    let mut results = Vec::new();
    for leaf in [&half, &single] {
        let pooled = leaf.max_pool2d((3, 3), (2, 2), (1, 1)).unwrap();
        assert_eq!(pooled.dtype(), leaf.dtype());
        pooled.sum_all().unwrap().backward().unwrap();
        let grad = leaf.grad().unwrap();
        assert_eq!(grad.dtype(), leaf.dtype());
        results.push((values(&pooled), values(&grad)));
    }
    // The coarse values are exact in f16, and so are the small gradient sums.
    assert_eq!(results[0], results[1]);
}

fn integer_inputs_are_refused(device: &Device) {
    let ints = Tensor::from_vec(vec![1i32; 16], &[1, 1, 4, 4], device).unwrap();
    let error = ints.max_pool2d((2, 2), (2, 2), (0, 0)).unwrap_err();
    assert!(error.to_string().contains("max_pool2d"), "{error}");
}

anygrad_testing::device_tests!(
    max_pool_matches_cpu,
    ties_go_to_the_first_tap,
    half_precision_matches_f32,
    integer_inputs_are_refused,
);
