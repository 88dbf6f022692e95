//! Test support: the shared `anygrad-testing` helpers (tests written once over `&Device`, run
//! on CPU and GPU; see that crate) plus two small tensor shorthands.
#![allow(dead_code, unused_imports)]

use anygrad_core::{Device, Tensor};

pub use anygrad_testing::{assert_close, gpu_or_skip, temp_dir, GPU_LOCK};

/// Values of a tensor as f32.
pub fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().expect("readback")
}

/// An f32 tensor from values and a shape.
pub fn tensor(values: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_slice(values, shape, device).expect("tensor")
}

pub mod conv_reference;
