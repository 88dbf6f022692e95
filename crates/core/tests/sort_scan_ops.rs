//! Tests of the sorting and scan ops beyond the PyTorch goldens (`golden_ops.rs` with
//! `golden/sort_scan_ops.json` checks values, indices and gradients): NaN and signed zeros,
//! integer dtypes past f32's exact range, strided views, empty and scalar inputs, and the
//! errors of bad arguments.

use std::sync::Mutex;

use anygrad_core::{DType, Device, Tensor};

/// Serializes the profiled sections (profiles do not nest, and variants run in parallel).
static PROFILE: Mutex<()> = Mutex::new(());

fn indices(tensor: &Tensor) -> Vec<i64> {
    tensor
        .to_vec_f64()
        .unwrap()
        .into_iter()
        .map(|v| v as i64)
        .collect()
}

fn sort_nan_and_signed_zero(device: &Device) {
    let x = Tensor::from_vec(
        vec![
            f32::NAN,
            1.0,
            -0.0,
            0.0,
            f32::NEG_INFINITY,
            3.0,
            f32::NAN,
            -0.0,
        ],
        &[8],
        device,
    )
    .unwrap();
    // NaN after every number; -0.0 equals 0.0 (stable order among them).
    assert_eq!(
        indices(&x.argsort(0, false).unwrap()),
        [4, 2, 3, 7, 1, 5, 0, 6]
    );
    assert_eq!(
        indices(&x.argsort(0, true).unwrap()),
        [0, 6, 5, 1, 2, 3, 7, 4]
    );
    let (values, _) = x.sort(0, true).unwrap();
    let values = values.to_vec_f32().unwrap();
    assert!(values[0].is_nan() && values[1].is_nan());
    assert_eq!(values[2..4], [3.0, 1.0]);
}

fn sort_integers_exactly(device: &Device) {
    // Values f32 cannot tell apart: the sort compares integers exactly.
    let big = 1 << 25;
    let x = Tensor::from_vec(vec![big + 1, big, -big - 1, big + 3, -big], &[5], device).unwrap();
    assert_eq!(indices(&x.argsort(0, false).unwrap()), [2, 4, 1, 0, 3]);
    let u = Tensor::from_vec(
        vec![u32::MAX, 0, 4_000_000_001, 4_000_000_000],
        &[4],
        device,
    )
    .unwrap();
    assert_eq!(indices(&u.argsort(0, true).unwrap()), [0, 2, 3, 1]);
    let flags = Tensor::from_vec(vec![true, false, true, false], &[4], device).unwrap();
    assert_eq!(indices(&flags.argsort(0, false).unwrap()), [1, 3, 0, 2]);
    let (values, _) = x.sort(0, false).unwrap();
    assert_eq!(values.dtype(), DType::I32);
}

fn sort_strided_view(device: &Device) {
    // Sort along dim 0 of a transposed view: rows of the original.
    let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3], device).unwrap();
    let view = x.transpose(0, 1).unwrap(); // [3, 2]
    let (values, order) = view.sort(0, false).unwrap();
    assert_eq!(values.to_vec_f32().unwrap(), [1.0, 0.0, 2.0, 4.0, 3.0, 5.0]);
    assert_eq!(indices(&order), [1, 0, 2, 2, 0, 1]);
    let (top, at) = view.topk(1, 0, true, true).unwrap();
    assert_eq!(top.shape(), &[1, 2]);
    assert_eq!(top.to_vec_f32().unwrap(), [3.0, 5.0]);
    assert_eq!(indices(&at), [0, 1]);
}

fn sort_empty_and_scalar(device: &Device) {
    let empty = Tensor::zeros(&[2, 0], DType::F32, device).unwrap();
    let (values, order) = empty.sort(1, false).unwrap();
    assert_eq!((values.shape(), order.shape()), (&[2, 0][..], &[2, 0][..]));
    let scalar = Tensor::full(&[], 4.0, DType::F32, device).unwrap();
    let (value, index) = scalar.sort(0, false).unwrap();
    assert_eq!(value.to_vec_f32().unwrap(), [4.0]);
    assert_eq!(index.shape(), &[] as &[usize]);
    let (top, _) = scalar.topk(1, 0, true, true).unwrap();
    assert_eq!(top.to_vec_f32().unwrap(), [4.0]);
}

fn sort_and_scan_errors(device: &Device) {
    let x = Tensor::zeros(&[2, 3], DType::F32, device).unwrap();
    let message = x.topk(4, 1, true, true).unwrap_err().to_string();
    assert!(
        message.contains("topk") && message.contains("k = 4"),
        "{message}"
    );
    assert!(x.argsort(2, false).is_err());
    assert!(x.sort(-3, false).is_err());
    assert!(x.topk(1, 5, true, true).is_err());
    assert!(x.prod(&[2], false).is_err());
    assert!(x.cumprod(2).is_err());
    assert!(x.to_dtype(DType::I32).unwrap().cumprod(0).is_err());
}

fn prod_integers_and_empty(device: &Device) {
    let x = Tensor::from_vec(vec![2i32, -3, 4, 5, 1, -1, 7], &[7], device).unwrap();
    assert_eq!(indices(&x.prod(&[], false).unwrap()), [840]);
    let empty = Tensor::zeros(&[3, 0], DType::F32, device).unwrap();
    assert_eq!(
        empty.prod(&[1], false).unwrap().to_vec_f32().unwrap(),
        [1.0; 3]
    );
}

fn nonzero_and_masked_select(device: &Device) {
    let x = Tensor::from_vec(vec![0.0f32, 2.0, 0.0, f32::NAN, 0.0, -1.0], &[2, 3], device)
        .unwrap()
        .requires_grad_(true);
    let coordinates = x.nonzero().unwrap();
    assert_eq!(coordinates.shape(), &[3, 2]);
    assert_eq!(indices(&coordinates), [0, 1, 1, 0, 1, 2]);
    let none = Tensor::zeros(&[4], DType::I32, device)
        .unwrap()
        .nonzero()
        .unwrap();
    assert_eq!(none.shape(), &[0, 1]);
    // The mask broadcasts over rows; the gradient lands on the selected positions.
    let mask = Tensor::from_vec(vec![true, false, true], &[3], device).unwrap();
    let picked = x.masked_select(&mask).unwrap();
    let values = picked.to_vec_f32().unwrap();
    assert_eq!((values[0], values[1], values[3]), (0.0, 0.0, -1.0));
    assert!(values[2].is_nan());
    let weight = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4], device).unwrap();
    picked
        .mul(&weight)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec_f32().unwrap(),
        [1.0, 0.0, 2.0, 3.0, 0.0, 4.0]
    );
    assert!(x.masked_select(&x).is_err());
}

/// `cumsum` as one primitive: every dtype (integers exact and wrapping, Bool summed as I32),
/// along every dim of a strided view, lines shorter and longer than the GPU kernel's 256
/// chunks, F16 summed in f32; its gradient is the reversed running sum.
fn cumsum_everywhere(device: &Device) {
    use anygrad_core::profiler::profile;
    let ints = Tensor::from_vec(vec![i32::MAX, 1, -5, 7, 0, 3], &[2, 3], device).unwrap();
    let summed = ints.cumsum(1).unwrap();
    assert_eq!(summed.dtype(), DType::I32);
    assert_eq!(
        summed.to_vec::<i32>().unwrap(),
        [i32::MAX, i32::MIN, i32::MAX - 4, 7, 7, 10]
    );
    assert_eq!(
        ints.cumsum(0).unwrap().to_vec::<i32>().unwrap(),
        [i32::MAX, 1, -5, i32::MAX.wrapping_add(7), 1, -2]
    );
    let mask = Tensor::from_vec(vec![true, false, true, true], &[4], device).unwrap();
    let positions = mask.cumsum(0).unwrap();
    assert_eq!(
        (positions.dtype(), positions.to_vec::<i32>().unwrap()),
        (DType::I32, vec![1, 1, 2, 3])
    );
    // Floats: against a running sum in f64, for short and long lines, every dim, a view.
    for length in [1usize, 7, 300, 5000] {
        let data: Vec<f32> = (0..3 * length)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
            .collect();
        let x = Tensor::from_vec(data.clone(), &[3, length], device).unwrap();
        // One profile at a time in this binary; other tests' ops may land in it, so only this
        // device's ops on this shape count: one cumsum and none of the composite's.
        let (y, recorded) = {
            let _serial = PROFILE.lock().unwrap_or_else(|p| p.into_inner());
            profile(|| x.cumsum(-1)).unwrap()
        };
        let here: Vec<&str> = recorded
            .events
            .iter()
            .filter(|e| {
                e.device == device.to_string() && e.input_shapes.first() == Some(&vec![3, length])
            })
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(here, ["cumsum"], "length {length} on {device}");
        let got = y.to_vec::<f32>().unwrap();
        for row in 0..3 {
            let mut running = 0.0f64;
            for i in 0..length {
                running += f64::from(data[row * length + i]);
                let value = f64::from(got[row * length + i]);
                assert!(
                    (value - running).abs() <= 1e-4 * (1.0 + running.abs()),
                    "length {length} [{row}, {i}]: {value} vs {running}"
                );
            }
        }
        let down = x.t().unwrap().cumsum(0).unwrap().t().unwrap();
        anygrad_testing::assert_close(
            &anygrad_testing::values(&down),
            &got,
            1e-5,
            1e-4,
            "cumsum of a transposed view",
        );
    }
    let cube = Tensor::arange(0.0, 24.0, 1.0, DType::F32, device)
        .unwrap()
        .reshape([2, 3, 4])
        .unwrap();
    let middle = cube.cumsum(1).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(&middle[..8], &[0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0]);
    if anygrad_testing::f16_or_skip(device, "cumsum_everywhere (f16)") {
        let half = Tensor::full(&[4096], 0.1, DType::F16, device).unwrap();
        let total = half
            .cumsum(0)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[4095];
        // 4096 · f16(0.1) = 409.5 summed in f32 (an f16 accumulator would stall at 256).
        assert!((total - 409.5).abs() < 0.5, "{total}");
    }
    // The gradient: each input sees the upstream gradient of itself and every later slot.
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4], device)
        .unwrap()
        .requires_grad_(true);
    let weights = Tensor::from_vec(vec![1.0f32, 10.0, 100.0, 1000.0], &[4], device).unwrap();
    x.cumsum(0)
        .unwrap()
        .mul(&weights)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        [1111.0, 1110.0, 1100.0, 1000.0]
    );
    let empty = Tensor::zeros(&[0, 3], DType::F32, device).unwrap();
    assert_eq!(empty.cumsum(1).unwrap().shape(), &[0, 3]);
    let scalar = Tensor::from_vec(vec![2.5f32], &[], device).unwrap();
    assert_eq!(scalar.cumsum(0).unwrap().to_vec::<f32>().unwrap(), [2.5]);
}

anygrad_testing::device_tests!(
    cumsum_everywhere,
    nonzero_and_masked_select,
    sort_nan_and_signed_zero,
    sort_integers_exactly,
    sort_strided_view,
    sort_empty_and_scalar,
    sort_and_scan_errors,
    prod_integers_and_empty,
);

/// randperm and bernoulli draw on the device from the global generator: the same seed gives
/// the same numbers on the CPU and the GPU. (The only test of this binary that draws random
/// numbers, so the global generator is not shared with a concurrent test.)
#[test]
fn randperm_and_bernoulli_match_across_devices() {
    let draw = |device: &Device| {
        anygrad_core::random::manual_seed(7);
        let permutation = indices(&Tensor::randperm(1000, device).unwrap());
        let p = Tensor::from_vec(vec![0.0f32, 1.0, 0.5, 0.5], &[4], device)
            .unwrap()
            .expand(&[1000, 4])
            .unwrap();
        let coins = p.bernoulli().unwrap().to_vec_f32().unwrap();
        (permutation, coins)
    };
    let (permutation, coins) = draw(&Device::Cpu);
    let mut sorted = permutation.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<i64>>());
    assert_ne!(permutation[..10], sorted[..10], "not shuffled");
    let column = |c: usize| coins.iter().skip(c).step_by(4).sum::<f32>();
    assert_eq!((column(0), column(1)), (0.0, 1000.0));
    let half = column(2) / 1000.0;
    assert!((0.45..0.55).contains(&half), "bernoulli(0.5) mean {half}");
    assert!(Tensor::zeros(&[2], DType::I32, &Device::Cpu)
        .unwrap()
        .bernoulli()
        .is_err());
    let _serial = anygrad_testing::GPU_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(gpu) = anygrad_testing::gpu_or_skip("randperm_and_bernoulli_match_across_devices") {
        assert_eq!(draw(&gpu), (permutation, coins));
    }
}
