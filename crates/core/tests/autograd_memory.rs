//! Autograd keeps alive only what backward reads ("saved tensors"), as PyTorch does: an op
//! whose derivative needs no values (a copy, a permutation, an add) holds its input as a graph
//! edge only, and relu holds its output instead of its input; backward releases each record
//! once used (`backward_retain_graph` keeps them). Measured with the GPU caching
//! allocator's `requested_bytes` (one test per binary, so no other test allocates meanwhile);
//! on the CPU only the gradients are checked.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::requested_bytes;

fn backward_keeps_only_saved_tensors(device: &Device) {
    // 1. A chain of copies saves nothing: only the last result stays alive.
    let x = Tensor::randn(&[256, 1024], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let bytes = (256 * 1024 * 4) as u64;
    let before = requested_bytes(device);
    let mut chained = x.clone();
    for _ in 0..8 {
        chained = chained.transpose(0, 1).unwrap().contiguous().unwrap();
    }
    if let (Some(before), Some(after)) = (before, requested_bytes(device)) {
        assert!(
            after - before <= 2 * bytes,
            "8 chained copies keep {} bytes alive (one result is {bytes})",
            after - before
        );
    }
    chained.sum_all().unwrap().backward().unwrap();
    let grad = x.grad().unwrap().to_vec::<f32>().unwrap();
    assert!(grad.iter().all(|&value| value == 1.0));

    // 2. relu keeps its output, so the matmul result before it can be freed.
    let input = Tensor::randn(&[128, 256], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let weight = Tensor::randn(&[256, 512], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let activation_bytes = (128 * 512 * 4) as u64;
    let before = requested_bytes(device);
    let activated = {
        let product = input.matmul(&weight).unwrap();
        product.relu().unwrap()
    };
    if let (Some(before), Some(after)) = (before, requested_bytes(device)) {
        assert!(
            after - before <= activation_bytes + activation_bytes / 2,
            "matmul + relu keep {} bytes alive (one activation is {activation_bytes})",
            after - before
        );
    }
    activated.sum_all().unwrap().backward().unwrap();
    let expected = {
        let _guard = anygrad_core::no_grad();
        let mask = input
            .matmul(&weight)
            .unwrap()
            .gt_scalar(0.0)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap();
        mask.matmul(&weight.transpose(0, 1).unwrap()).unwrap()
    };
    let got = input.grad().unwrap().to_vec::<f32>().unwrap();
    let want = expected.to_vec::<f32>().unwrap();
    for (index, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-3 * (1.0 + w.abs()),
            "input gradient {index}: {g} vs {w}"
        );
    }

    // 3. backward frees what the graph saved, even while the loss is still held; a second
    // backward through it is an error, unless the first one retained the graph.
    let leaf = Tensor::randn(&[256, 256], DType::F32, device)
        .unwrap()
        .requires_grad_(true);
    let square_bytes = (256 * 256 * 4) as u64;
    let before = requested_bytes(device);
    let loss = leaf
        .matmul(&leaf)
        .unwrap()
        .relu()
        .unwrap()
        .sum_all()
        .unwrap();
    loss.backward_retain_graph().unwrap();
    let once = leaf.grad().unwrap().to_vec::<f32>().unwrap();
    loss.backward().unwrap();
    let twice = leaf.grad().unwrap().to_vec::<f32>().unwrap();
    for (one, two) in once.iter().zip(&twice) {
        assert!((2.0 * one - two).abs() <= 1e-3 * (1.0 + two.abs()));
    }
    if let (Some(before), Some(after)) = (before, requested_bytes(device)) {
        // Alive: the leaf's gradient and the loss; the relu output it saved is gone.
        assert!(
            after - before <= square_bytes + square_bytes / 2,
            "after backward {} bytes stay alive (the gradient is {square_bytes})",
            after - before
        );
    }
    let again = loss.backward().unwrap_err().to_string();
    assert!(again.contains("second time"), "{again}");
}

anygrad_testing::device_tests!(backward_keeps_only_saved_tensors);
