//! `memory_stats` separates what tensors asked for (`requested_bytes`) from what the caching
//! allocator handed out after size-class rounding (`allocated_bytes`) and what it holds from the
//! driver (`reserved_bytes`), so the allocator's waste is visible. The CPU backend has no
//! caching allocator (its `memory_stats` is `None`), so this test runs on the GPU only.

use anygrad_core::{memory_stats, reset_peak_memory, DType, Device, Tensor};

fn requested_and_allocated_track_live_tensors(device: &Device) {
    let before = memory_stats(device).expect("the GPU reports memory statistics");
    reset_peak_memory(device);
    // 1,000,003 f32 elements: not a size class, so rounding must show as waste.
    let elements = 1_000_003usize;
    let tensor = Tensor::full(&[elements], 1.5, DType::F32, device).unwrap();
    device.synchronize().unwrap();
    let during = memory_stats(device).unwrap();
    let asked = (elements * 4) as u64;
    assert_eq!(during.requested_bytes - before.requested_bytes, asked);
    let handed_out = during.allocated_bytes - before.allocated_bytes;
    assert!(
        handed_out >= asked && handed_out <= asked + asked / 8 + 4096,
        "size class {handed_out} for {asked} requested bytes"
    );
    assert!(during.reserved_bytes >= during.allocated_bytes);
    assert!(during.peak_requested_bytes >= during.requested_bytes);
    assert!(during.peak_requested_bytes <= during.peak_allocated_bytes);
    drop(tensor);
    device.synchronize().unwrap();
    let after = memory_stats(device).unwrap();
    assert_eq!(after.requested_bytes, before.requested_bytes);
    assert_eq!(after.allocated_bytes, before.allocated_bytes);
    // The peak remembers the tensor after it is gone.
    assert!(after.peak_requested_bytes >= before.requested_bytes + asked);
}

anygrad_testing::device_tests!(; gpu_only: requested_and_allocated_track_live_tensors);
