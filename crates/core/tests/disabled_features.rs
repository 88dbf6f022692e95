//! `ANYGRAD_DISABLE_FEATURES=all`: the GPU is opened without cooperative matrices, subgroups,
//! f16, f32 atomics and timestamps even where the adapter has them, reports them absent, and
//! refuses what needs them with an error instead of using them. The variable is read once per
//! process, when the adapters are first listed, so this binary holds this one test.

use anygrad_core::{DType, Device, Tensor};

#[test]
fn disabled_features_are_reported_absent_and_never_used() {
    // Before anything lists the adapters (no other test runs in this process).
    std::env::set_var("ANYGRAD_DISABLE_FEATURES", "all");
    let Some(device) = anygrad_testing::gpu_or_skip("disabled_features_are_reported_absent") else {
        return;
    };
    let Device::Gpu(gpu) = &device else {
        unreachable!("gpu_or_skip returns a GPU")
    };
    let everything = ["coop", "subgroups", "f16", "float-atomics", "timestamps"];
    for info in anygrad_core::gpu::adapter_infos() {
        assert_eq!(info.disabled_features, everything, "{info:?}");
        assert!(
            !info.shader_f16 && !info.subgroups && !info.timestamp_query && !info.float_atomics,
            "{info:?}"
        );
        assert!(info.cooperative_matrix.is_empty(), "{info:?}");
    }
    assert_eq!(gpu.info().disabled_features, everything);

    // No f16 tensor, and a clear error naming the dtype rather than a failed kernel build.
    assert!(!gpu.supports_f16());
    let error = Tensor::zeros(&[4], DType::F16, &device)
        .and_then(|t| t.to_vec::<f32>())
        .expect_err("f16 on a device opened without SHADER_F16");
    assert!(error.to_string().to_lowercase().contains("f16"), "{error}");

    // No tensor-core path is chosen.
    assert!(!gpu.has_cooperative_f16_f32());
    assert!(gpu.cooperative_matmul().is_none());
    assert!(!gpu.cooperative_attention());
    assert!(!gpu.channels_last_conv());

    // No timestamps: the profiler's timing is refused, and f32 work still runs.
    assert!(!gpu.begin_timing().expect("begin timing"));
    let a = Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[4, 4], &device).unwrap();
    let product = a.matmul(&a).unwrap().to_vec::<f32>().unwrap();
    let expected: f32 = (0..4).map(|k| (k as f32) * ((k * 4) as f32)).sum();
    assert_eq!(product[0], expected);
}
