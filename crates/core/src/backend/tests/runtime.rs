//! GPU runtime tests: CPU/GPU and GPU-to-GPU transfers, counter-based random numbers, memory
//! statistics and the caching allocator, the out-of-memory path, adapter description, and many
//! threads sharing one device. Skips visibly without an adapter unless `ANYGRAD_REQUIRE_GPU=1`.

use super::support::*;
use crate::backend::gpu::{self, GpuDevice};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::random::Distribution;
use crate::storage::Storage;
use crate::{DType, Device, Error, Layout};

#[test]
fn random_matches_cpu() {
    let Some(device) = gpu() else { return };
    for (distribution, tolerance) in [
        (
            Distribution::Uniform {
                low: -2.0,
                high: 3.0,
            },
            1e-6,
        ),
        (
            Distribution::Normal {
                mean: 0.5,
                std: 2.0,
            },
            2e-5,
        ),
    ] {
        for dtype in float_dtypes(&device) {
            let expected =
                Storage::random(&Device::Cpu, 1000, dtype, distribution, 1234, 77).unwrap();
            let actual = Storage::random(&device, 1000, dtype, distribution, 1234, 77).unwrap();
            let rtol = if dtype == DType::F16 { 1e-3 } else { tolerance };
            assert_close(
                &format!("random {distribution:?} {dtype}"),
                &expected,
                &actual,
                rtol,
                rtol,
            );
        }
    }
    assert!(Storage::random(
        &device,
        4,
        DType::I32,
        Distribution::Uniform {
            low: 0.0,
            high: 1.0
        },
        1,
        0
    )
    .is_err());
}

#[test]
fn transfers_are_exact() {
    let Some(device) = gpu() else { return };
    let Device::Gpu(gpu_device) = &device else {
        unreachable!()
    };
    let second =
        Device::Gpu(GpuDevice::open_new_instance(gpu_device.ordinal()).expect("second instance"));
    assert_ne!(device, second);
    let mut dtypes = vec![DType::F32, DType::I32, DType::U32, DType::U8, DType::Bool];
    if super::support::f16_or_skip(&device, "the f16 transfers") {
        dtypes.push(DType::F16);
    }
    for dtype in dtypes {
        for len in [0usize, 1, 3, 1001] {
            let data: Vec<f64> = values(len, 61, 1000.0)
                .into_iter()
                .map(f64::round)
                .collect();
            let cpu = cpu_storage(&data, dtype);
            let on_gpu = to_gpu(&cpu, &device);
            let same_device = on_gpu.to_device(&device).unwrap();
            let other_device = on_gpu.to_device(&second).unwrap();
            assert_eq!(
                on_gpu.to_cpu().unwrap(),
                cpu.to_cpu().unwrap(),
                "{dtype} {len}"
            );
            assert_eq!(
                same_device.to_cpu().unwrap(),
                cpu.to_cpu().unwrap(),
                "{dtype} {len} same device"
            );
            assert_eq!(
                other_device.to_cpu().unwrap(),
                cpu.to_cpu().unwrap(),
                "{dtype} {len} other device"
            );
            assert_eq!(other_device.device(), second);
        }
    }
    // Mixing devices is an error, not a crash.
    let a = to_gpu(&cpu_storage(&[1.0], DType::F32), &device);
    let b = to_gpu(&cpu_storage(&[1.0], DType::F32), &second);
    let layout = Layout::contiguous(&[1]);
    assert!(a.binary(&layout, &b, &layout, BinaryOp::Add).is_err());
}

#[test]
fn f64_is_refused_clearly() {
    let Some(device) = gpu() else { return };
    let error = Storage::full(&device, 4, DType::F64, 1.0).unwrap_err();
    assert!(matches!(error, Error::Unsupported { .. }), "{error}");
}

#[test]
fn out_of_memory_is_an_error_and_device_survives() {
    let Some(device) = gpu() else { return };
    // 4 TiB: stored in pieces in principle (tensors above one buffer are), but more than
    // this adapter's memory — refused before it is attempted on a software adapter (host
    // memory), by the driver on a real GPU.
    let error = Storage::full(&device, 1 << 40, DType::F32, 0.0).unwrap_err();
    assert!(
        matches!(error, Error::OutOfMemory { requested, .. } if requested == 4 << 40),
        "{error}"
    );
    let error = Storage::full(&device, usize::MAX / 2, DType::F32, 0.0).unwrap_err();
    assert!(matches!(error, Error::OutOfMemory { .. }), "{error}");
    let still_fine = Storage::full(&device, 10, DType::F32, 2.0).unwrap();
    assert_eq!(flat(&still_fine), vec![2.0; 10]);
}

#[test]
fn memory_stats_track_allocations() {
    let Some(device) = gpu() else { return };
    // A private context so other tests' allocations do not interfere.
    let Device::Gpu(shared) = &device else {
        unreachable!()
    };
    let own = GpuDevice::open_new_instance(shared.ordinal()).unwrap();
    let own_device = Device::Gpu(own.clone());
    // Whatever ANYGRAD_EXECUTION_MODE says, this test needs the caching allocator on.
    gpu::set_execution_mode(&own, gpu::ExecutionMode::Default).unwrap();
    let before = gpu::memory_stats(&own);
    let bytes = 1 << 20;
    let tensor = Storage::full(&own_device, bytes / 4, DType::F32, 1.0).unwrap();
    let during = gpu::memory_stats(&own);
    assert!(
        during.allocated_bytes >= before.allocated_bytes + bytes as u64,
        "{during:?}"
    );
    assert!(during.peak_allocated_bytes >= during.allocated_bytes);
    assert_eq!(during.allocation_count, before.allocation_count + 1);
    drop(tensor);
    own.synchronize().unwrap();
    let after = gpu::memory_stats(&own);
    assert_eq!(after.allocated_bytes, before.allocated_bytes, "{after:?}");
    assert!(
        after.cached_bytes >= bytes as u64,
        "freed buffer should be cached: {after:?}"
    );
    // Reuse comes from the cache.
    let again = Storage::full(&own_device, bytes / 4, DType::F32, 1.0).unwrap();
    let reused = gpu::memory_stats(&own);
    assert!(reused.cache_hits > after.cache_hits, "{reused:?}");
    drop(again);
    gpu::empty_cache(&own);
    let emptied = gpu::memory_stats(&own);
    assert_eq!(emptied.cached_bytes, 0);
    assert!(emptied.reserved_bytes < reused.reserved_bytes);
    gpu::reset_peak_memory(&own);
    assert_eq!(
        gpu::memory_stats(&own).peak_allocated_bytes,
        gpu::memory_stats(&own).allocated_bytes
    );
    // Memory mode gives buffers back instead of caching them.
    gpu::set_execution_mode(&own, gpu::ExecutionMode::Memory).unwrap();
    let temporary = Storage::full(&own_device, 1024, DType::F32, 1.0).unwrap();
    drop(temporary);
    own.synchronize().unwrap();
    assert_eq!(gpu::memory_stats(&own).cached_bytes, 0);
}

#[test]
fn adapters_are_described() {
    let Some(device) = gpu() else { return };
    let infos = gpu::adapter_infos();
    assert!(!infos.is_empty());
    assert_eq!(infos.len(), gpu::device_count());
    let json = serde_json::to_string(&infos).unwrap();
    assert!(json.contains("max_storage_binding_size"));
    let Device::Gpu(gpu_device) = &device else {
        unreachable!()
    };
    assert_eq!(gpu_device.info().name, infos[0].name);
    assert!(
        GpuDevice::open(0).unwrap() == *gpu_device,
        "open(0) is cached"
    );
    assert!(matches!(GpuDevice::open(999), Err(Error::NoAdapter { .. })));
}

#[test]
fn concurrent_threads_share_one_device_safely() {
    let Some(device) = gpu() else { return };
    // Threads record into one encoder and flush it; buffers freed by one thread must never be
    // reused while another thread's unsubmitted work still reads them.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let device = device.clone();
            std::thread::spawn(move || {
                for round in 0..40 {
                    let value = (t * 100 + round) as f64;
                    let layout = Layout::contiguous(&[300]);
                    let a = Storage::full(&device, 300, DType::F32, value).unwrap();
                    let b = a.binary_scalar(&layout, BinaryOp::Add, 1.0, false).unwrap();
                    drop(a);
                    let c = b.unary(&layout, UnaryOp::Neg).unwrap();
                    drop(b);
                    let sum = c.reduce(&layout, ReduceOp::Sum, &[0]).unwrap();
                    assert_eq!(
                        flat(&sum),
                        vec![-(value + 1.0) * 300.0],
                        "thread {t} round {round}"
                    );
                    // A bad index is reported to the thread that used it, and to no other,
                    // however the threads' readbacks interleave.
                    let picks = if t % 2 == 0 { [1.0, 400.0] } else { [1.0, 2.0] };
                    let picks = to_gpu(&cpu_storage(&picks, DType::I32), &device);
                    let selected = c
                        .index_select(&layout, &picks, &Layout::contiguous(&[2]), 0)
                        .and_then(|selected| selected.to_cpu());
                    match (t % 2, selected) {
                        (0, Err(error)) => {
                            assert!(error.to_string().contains("index_select"), "{error}")
                        }
                        (0, Ok(_)) => panic!("thread {t} round {round}: bad index not reported"),
                        (_, result) => {
                            result.unwrap_or_else(|e| panic!("thread {t} round {round}: {e}"));
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("worker thread");
    }
}

#[test]
fn repeated_parameters_come_from_the_cache_and_stay_right() {
    // Parameter words seen twice are bound from the parameter cache (`context/reuse.rs`),
    // words seen once from the arena: kernels that differ only in a scalar each keep their
    // own words, through execution modes and emptied caches.
    let Some(device) = gpu() else { return };
    let Device::Gpu(shared) = &device else {
        unreachable!()
    };
    let own = GpuDevice::open_new_instance(shared.ordinal()).unwrap();
    let own_device = Device::Gpu(own.clone());
    let layout = Layout::contiguous(&[1000]);
    let before = own.cached_parameter_hits();
    for (round, mode) in [
        gpu::ExecutionMode::Default,
        gpu::ExecutionMode::Memory,
        gpu::ExecutionMode::Default,
    ]
    .into_iter()
    .enumerate()
    {
        gpu::set_execution_mode(&own, mode).unwrap();
        for step in 0..6 {
            // A fill value new each step, scalars that come back every third step.
            let value = (round * 6 + step) as f64 * 0.25;
            let scalar = [1.5, -2.0, 0.5][step % 3];
            let x = Storage::full(&own_device, 1000, DType::F32, value).unwrap();
            let y = x
                .binary_scalar(&layout, BinaryOp::Mul, scalar, false)
                .unwrap();
            let z = y.unary(&layout, UnaryOp::Exp).unwrap();
            let got = flat(&z);
            let want = (value * scalar).exp();
            assert!(
                got.iter().all(|v| (v - want).abs() <= 1e-5 * want.abs()),
                "round {round} step {step}: {:?} against {want}",
                &got[..4]
            );
        }
        gpu::empty_cache(&own);
    }
    assert!(
        own.cached_parameter_hits() > before,
        "no parameter came from the cache"
    );
}
