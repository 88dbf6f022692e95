//! Tensors larger than one GPU buffer. A kernel binds whole buffers of at most the adapter's
//! largest storage binding (2 GiB on an H200, 128 MiB on lavapipe); a larger tensor is stored
//! in pieces and every primitive runs on slices of it. This binary caps the binding at 64 KiB
//! (`ANYGRAD_MAX_BINDING_BYTES`, set before its first GPU opens), so that tensors of a few
//! hundred KB take the same path as multi-GB ones on a real GPU, and checks each result
//! against the CPU, which has no such limit, and that every plan foresaw its slices (no
//! computation refused as too large and run again).

use std::sync::Once;

use anygrad_core::random::Distribution;
use anygrad_core::{Conv2dParams, DType, Device, Error, Tensor};
use anygrad_testing::values;

/// The binding cap of this binary: 16 384 f32 values.
const CAP_BYTES: &str = "65536";

/// Computations that `device` refused as larger than one binding and ran again in smaller
/// slices so far (0 on the CPU).
fn sliced_retries(device: &Device) -> u64 {
    anygrad_core::memory_stats(device).map_or(0, |stats| stats.sliced_retries)
}

/// Run `body` on the CPU and, where one exists, on the GPU with the capped binding.
fn on_devices(name: &str, body: fn(&Device)) {
    static CAP: Once = Once::new();
    CAP.call_once(|| std::env::set_var("ANYGRAD_MAX_BINDING_BYTES", CAP_BYTES));
    body(&Device::Cpu);
    let _serial = anygrad_testing::GPU_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(gpu) = anygrad_testing::gpu_or_skip(name) {
        // Every primitive plans its slices from its operands' and output's sizes: none is
        // computed whole first and again in slices after a refusal (work done twice).
        let retries_before = sliced_retries(&gpu);
        body(&gpu);
        assert_eq!(
            sliced_retries(&gpu) - retries_before,
            0,
            "{name}: computations refused as larger than one binding and run again in slices"
        );
    }
}

/// Deterministic values in [-1, 1) (no two neighbours alike).
fn pattern(count: usize, salt: usize) -> Vec<f32> {
    (0..count)
        .map(|i| (((i * 7919 + salt * 104_729) % 2003) as f32 / 1001.5) - 1.0)
        .collect()
}

/// `data` on `device` (uploaded from the host) and, as a separate tensor, on the CPU.
fn pair(data: &[f32], shape: &[usize], device: &Device) -> (Tensor, Tensor) {
    let cpu = || Tensor::from_vec(data.to_vec(), shape, &Device::Cpu).unwrap();
    (cpu().to_device(device).unwrap(), cpu())
}

/// Assert that `actual` (any device) equals the CPU's `expected` within `tolerance` (absolute
/// plus relative), naming the first element that differs.
fn same(actual: &Tensor, expected: &Tensor, tolerance: f32, what: &str) {
    assert_eq!(actual.shape(), expected.shape(), "{what}: shape");
    let actual = values(&actual.to_dtype(DType::F32).unwrap());
    let expected = values(&expected.to_dtype(DType::F32).unwrap());
    for (i, (&a, &e)) in actual.iter().zip(&expected).enumerate() {
        assert!(
            a == e || (a - e).abs() <= tolerance * (1.0 + e.abs()),
            "{what}: element {i} of {}: got {a}, expected {e}",
            expected.len()
        );
    }
}

fn creation_and_transfers(device: &Device) {
    // 41·3·17·19 = 39 729 f32 (155 KB): three pieces under the 64 KiB cap.
    let shape = [41, 3, 17, 19];
    let data = pattern(39_729, 1);
    let (x, _) = pair(&data, &shape, device);
    assert_eq!(x.to_vec::<f32>().unwrap(), data, "upload and readback");

    let zeros = Tensor::zeros(&[70_001], DType::F32, device).unwrap();
    assert!(values(&zeros).iter().all(|&v| v == 0.0));
    let full = Tensor::full(&[50_000], 2.5, DType::F32, device).unwrap();
    assert!(values(&full).iter().all(|&v| v == 2.5));

    // Counter-based random numbers: the pieces draw the counters of their positions.
    let normal = Distribution::Normal {
        mean: 0.0,
        std: 1.0,
    };
    let drawn = Tensor::random_seeded(&[60_000], normal, DType::F32, 7, 3, device).unwrap();
    let reference =
        Tensor::random_seeded(&[60_000], normal, DType::F32, 7, 3, &Device::Cpu).unwrap();
    same(&drawn, &reference, 1e-4, "random in pieces");

    // f16 with an odd count, and a copy to another tensor on the same device.
    if !anygrad_testing::f16_or_skip(device, "creation_and_transfers_in_pieces") {
        return;
    }
    let half = x.to_dtype(DType::F16).unwrap();
    let expected = Tensor::from_vec(data.clone(), &shape, &Device::Cpu)
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    same(&half, &expected, 0.0, "f16 cast of an odd count");
    let copied = half.copy().unwrap();
    same(&copied, &expected, 0.0, "copy of a tensor in pieces");
}

fn elementwise_reductions_and_views(device: &Device) {
    let shape = [41, 3, 17, 19];
    let (x, cpu) = pair(&pattern(39_729, 2), &shape, device);
    let (bias, cpu_bias) = pair(&[0.5, -0.25, 1.0], &[1, 3, 1, 1], device);
    let chain = |x: &Tensor, bias: &Tensor| -> Tensor {
        x.mul_scalar(2.0)
            .unwrap()
            .add(bias)
            .unwrap()
            .relu()
            .unwrap()
            .exp()
            .unwrap()
    };
    let activated = chain(&x, &bias);
    same(
        &activated,
        &chain(&cpu, &cpu_bias),
        1e-5,
        "fused elementwise chain",
    );

    // An output above one binding from operands far below it: a broadcast outer sum and
    // product of two 300-element vectors (90 000 f32, 360 KB, from 1.2 KB each). Nothing is in
    // pieces on the way in, so only the output's size can tell the plan to slice. Fused (the
    // chain deferred into one kernel) and unfused (each primitive's own sliced plan).
    let column_data = pattern(300, 5);
    let row_data = pattern(300, 6);
    let (column, cpu_column) = pair(&column_data, &[300, 1], device);
    let (row, cpu_row) = pair(&row_data, &[1, 300], device);
    let fusion_was_enabled = anygrad_core::elementwise_fusion_enabled();
    for fused in [true, false] {
        anygrad_core::set_elementwise_fusion(fused);
        same(
            &column.add(&row).unwrap(),
            &cpu_column.add(&cpu_row).unwrap(),
            0.0,
            &format!("broadcast outer sum larger than one binding (fused {fused})"),
        );
        same(
            &column.mul(&row).unwrap().mul_scalar(-1.0).unwrap(),
            &cpu_column.mul(&cpu_row).unwrap().mul_scalar(-1.0).unwrap(),
            0.0,
            &format!("broadcast outer product larger than one binding (fused {fused})"),
        );
    }
    anygrad_core::set_elementwise_fusion(fusion_was_enabled);

    same(
        &x.sum(&[0, 2, 3], true).unwrap(),
        &cpu.sum(&[0, 2, 3], true).unwrap(),
        1e-3,
        "sum over the sliced dim (per-channel statistics)",
    );
    same(
        &x.mean(&[0, 2, 3], true).unwrap(),
        &cpu.mean(&[0, 2, 3], true).unwrap(),
        1e-4,
        "mean over the sliced dim (the slices' sums folded, then divided once)",
    );
    same(
        &x.max(&[0], false).unwrap(),
        &cpu.max(&[0], false).unwrap(),
        0.0,
        "max over the sliced dim",
    );
    same(
        &x.sum(&[3], false).unwrap(),
        &cpu.sum(&[3], false).unwrap(),
        1e-4,
        "sum over a kept-row dim",
    );
    assert_eq!(
        x.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
        cpu.argmax(1, false).unwrap().to_vec::<i32>().unwrap(),
        "argmax over dim 1"
    );
    same(
        &x.sum_all().unwrap(),
        &cpu.sum_all().unwrap(),
        1e-2,
        "sum of all",
    );

    // Views reading far apart: a permutation (each row of its first dim spans every piece),
    // a narrowed window, a concatenation and an in-place write into a tensor in pieces.
    same(
        &x.transpose(0, 1).unwrap().contiguous().unwrap(),
        &cpu.transpose(0, 1).unwrap().contiguous().unwrap(),
        0.0,
        "contiguous copy of a permuted view",
    );
    same(
        &x.narrow(0, 5, 20).unwrap().mul_scalar(3.0).unwrap(),
        &cpu.narrow(0, 5, 20).unwrap().mul_scalar(3.0).unwrap(),
        1e-6,
        "narrowed view",
    );
    let doubled = Tensor::cat(&[&x, &x], 0).unwrap();
    same(
        &doubled,
        &Tensor::cat(&[&cpu, &cpu], 0).unwrap(),
        0.0,
        "concatenation",
    );
    let target = Tensor::zeros(&[82, 3, 17, 19], DType::F32, device).unwrap();
    target.narrow(0, 30, 41).unwrap().assign(&x).unwrap();
    let expected = Tensor::zeros(&[82, 3, 17, 19], DType::F32, &Device::Cpu).unwrap();
    expected.narrow(0, 30, 41).unwrap().assign(&cpu).unwrap();
    same(
        &target,
        &expected,
        0.0,
        "assign into a window of a tensor in pieces",
    );

    // Indexing along a kept dim, and a matmul with a large batch and a large single matrix.
    let (indices, _) = (
        Tensor::from_vec(vec![2i32, 0, 2, 1], &[4], device).unwrap(),
        (),
    );
    let cpu_indices = Tensor::from_vec(vec![2i32, 0, 2, 1], &[4], &Device::Cpu).unwrap();
    same(
        &x.index_select(1, &indices).unwrap(),
        &cpu.index_select(1, &cpu_indices).unwrap(),
        0.0,
        "index_select along dim 1",
    );
    let rows = x.reshape([41 * 3 * 17, 19]).unwrap();
    let cpu_rows = cpu.reshape([41 * 3 * 17, 19]).unwrap();
    let (weight, cpu_weight) = pair(&pattern(19 * 24, 3), &[19, 24], device);
    same(
        &rows.matmul(&weight).unwrap(),
        &cpu_rows.matmul(&cpu_weight).unwrap(),
        1e-4,
        "matmul of a large single matrix",
    );
    let batched = x.reshape([41 * 3, 17, 19]).unwrap();
    let cpu_batched = cpu.reshape([41 * 3, 17, 19]).unwrap();
    same(
        &batched.matmul(&weight).unwrap(),
        &cpu_batched.matmul(&cpu_weight).unwrap(),
        1e-4,
        "batched matmul",
    );
}

fn convolution_network_trains(device: &Device) {
    // conv → relu → max-pool → conv → global sum → linear → loss, forward and backward:
    // activations of 300 KB, so every convolution, gradient and pooling step is sliced.
    let (input, cpu_input) = pair(&pattern(24 * 3 * 20 * 20, 4), &[24, 3, 20, 20], device);
    let (w1, cpu_w1) = pair(&pattern(8 * 3 * 3 * 3, 5), &[8, 3, 3, 3], device);
    let (w2, cpu_w2) = pair(&pattern(16 * 8 * 3 * 3, 6), &[16, 8, 3, 3], device);
    let (head, cpu_head) = pair(&pattern(16 * 10, 7), &[16, 10], device);
    let run = |x: &Tensor, w1: &Tensor, w2: &Tensor, head: &Tensor| {
        let x = x.requires_grad_(true);
        let (w1, w2, head) = (
            w1.requires_grad_(true),
            w2.requires_grad_(true),
            head.requires_grad_(true),
        );
        let same_padding = Conv2dParams {
            padding: (1, 1),
            ..Conv2dParams::default()
        };
        let hidden = x
            .conv2d(&w1, None, same_padding)
            .unwrap()
            .relu()
            .unwrap()
            .max_pool2d((2, 2), (2, 2), (0, 0))
            .unwrap()
            .conv2d(&w2, None, same_padding)
            .unwrap()
            .relu()
            .unwrap();
        let pooled = hidden.mean(&[2, 3], false).unwrap();
        let logits = pooled.matmul(&head).unwrap();
        let loss = logits.square().unwrap().mean_all().unwrap();
        loss.backward().unwrap();
        let grads = [&x, &w1, &w2, &head].map(|t| t.grad().unwrap());
        (hidden.detach(), loss.detach(), grads)
    };
    let (hidden, loss, grads) = run(&input, &w1, &w2, &head);
    let (cpu_hidden, cpu_loss, cpu_grads) = run(&cpu_input, &cpu_w1, &cpu_w2, &cpu_head);
    same(&hidden, &cpu_hidden, 1e-3, "activations");
    same(&loss, &cpu_loss, 1e-3, "loss");
    for (name, (grad, cpu_grad)) in ["input", "conv1", "conv2", "head"]
        .iter()
        .zip(grads.iter().zip(&cpu_grads))
    {
        same(grad, cpu_grad, 1e-3, &format!("gradient of {name}"));
    }
}

fn unsliceable_requests_are_errors(device: &Device) {
    // An arg reduction over the sliced dim cannot fold its slices: a clear error on the GPU,
    // the plain result on the CPU.
    let (x, cpu) = pair(&pattern(40_000, 8), &[40_000], device);
    match (x.argmax(0, false), device) {
        (Ok(index), Device::Cpu) => assert_eq!(
            index.to_vec::<i32>().unwrap(),
            cpu.argmax(0, false).unwrap().to_vec::<i32>().unwrap()
        ),
        (Err(Error::InvalidArgument { op, message }), Device::Gpu(_)) => {
            assert_eq!(op, "argmax");
            assert!(message.contains("larger than one GPU buffer"), "{message}");
        }
        (other, _) => panic!("argmax over 40 000 values on {device}: {other:?}"),
    }
}

fn sort_in_pieces(device: &Device) {
    // 300 rows of 60 (72 KB, two pieces): sorting along dim 1 runs slice by slice and matches
    // the CPU, values (gathered) and positions; along dim 0 (the sliced one) on the GPU it is a
    // clear error, the plain result on the CPU.
    let (x, cpu) = pair(&pattern(18_000, 9), &[300, 60], device);
    let (values, order) = x.sort(1, true).unwrap();
    let (cpu_values, cpu_order) = cpu.sort(1, true).unwrap();
    same(&values, &cpu_values, 0.0, "sorted values in pieces");
    same(&order, &cpu_order, 0.0, "sort positions in pieces");
    match (x.argsort(0, false), device) {
        (Ok(order), Device::Cpu) => same(&order, &cpu.argsort(0, false).unwrap(), 0.0, "argsort"),
        (Err(Error::InvalidArgument { op, message }), Device::Gpu(_)) => {
            assert_eq!(op, "argsort");
            assert!(message.contains("larger than one GPU buffer"), "{message}");
        }
        (other, _) => panic!("argsort along the sliced dim on {device}: {other:?}"),
    }
}

#[test]
fn sort_in_pieces_matches_cpu() {
    on_devices("sort_in_pieces_matches_cpu", sort_in_pieces);
}

#[test]
fn creation_and_transfers_in_pieces() {
    on_devices("creation_and_transfers_in_pieces", creation_and_transfers);
}

#[test]
fn elementwise_reductions_and_views_in_pieces() {
    on_devices(
        "elementwise_reductions_and_views_in_pieces",
        elementwise_reductions_and_views,
    );
}

#[test]
fn convolution_network_trains_in_pieces() {
    on_devices(
        "convolution_network_trains_in_pieces",
        convolution_network_trains,
    );
}

#[test]
fn unsliceable_requests_are_errors_in_pieces() {
    on_devices(
        "unsliceable_requests_are_errors_in_pieces",
        unsliceable_requests_are_errors,
    );
}
