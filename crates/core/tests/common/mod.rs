//! Shared test support: every test body takes `&Device` and `device_tests!` generates a CPU and
//! a GPU variant. Without a GPU adapter the GPU variant prints a visible SKIP, unless
//! `ANYGRAD_REQUIRE_GPU=1` (set in CI with lavapipe), where a missing adapter fails the test.
#![allow(dead_code)]

use anygrad_core::{Device, Tensor};

/// The GPU device for tests, or `None` (after printing SKIP) when none exists and none is
/// required.
pub fn gpu_or_skip(test: &str) -> Option<Device> {
    match Device::gpu(0) {
        Ok(device) => Some(device),
        Err(error) => {
            if std::env::var("ANYGRAD_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("ANYGRAD_REQUIRE_GPU=1 but no GPU adapter: {error}");
            }
            println!("SKIP {test}: no GPU adapter ({error})");
            None
        }
    }
}

/// Generate `<name>_cpu` and `<name>_gpu` tests from `fn name(device: &Device)`.
#[macro_export]
macro_rules! device_tests {
    ($($name:ident),* $(,)?) => {
        mod on_cpu {
            $(
                #[test]
                fn $name() {
                    super::$name(&anygrad_core::Device::Cpu);
                }
            )*
        }
        mod on_gpu {
            $(
                #[test]
                fn $name() {
                    if let Some(device) = $crate::common::gpu_or_skip(stringify!($name)) {
                        super::$name(&device);
                    }
                }
            )*
        }
    };
}

/// Assert two float slices agree within `atol + rtol * |expected|` (NaN equals NaN).
pub fn assert_close(actual: &[f32], expected: &[f32], atol: f32, rtol: f32, what: &str) {
    assert_eq!(
        actual.len(),
        expected.len(),
        "{what}: length {} vs {}",
        actual.len(),
        expected.len()
    );
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let ok = (a.is_nan() && e.is_nan()) || a == e || (a - e).abs() <= atol + rtol * e.abs();
        assert!(ok, "{what}: element {i}: got {a}, expected {e}\nactual   {actual:?}\nexpected {expected:?}");
    }
}

/// Values of a tensor as f32.
pub fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().expect("readback")
}

/// An f32 tensor from values and a shape.
pub fn tensor(values: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_slice(values, shape, device).expect("tensor")
}
