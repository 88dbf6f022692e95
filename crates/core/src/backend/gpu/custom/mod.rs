//! Users' own GPU kernels (the `wgsl` of a `custom_op::CustomOp`). The user writes one WGSL
//! function, `fn compute(i: u32) -> f32`, that returns output element `i`; it may read the
//! f32 inputs `input0`, `input1`, ... (contiguous, row-major) and `params[0]`, the output's
//! element count (`params` stays a plain `array<u32>` here: it is part of the user's contract,
//! unlike the `kernel_params!` structs of anygrad's own families). anygrad adds the bindings and the entry point, compiles the kernel once per
//! source (pipeline cache), and checks it like its own: a WGSL error comes back as
//! `Error::Shader` with naga's message. User kernels keep wgpu's runtime bounds checks.

pub(crate) mod kernel;

use std::sync::Arc;

use crate::backend::contract::CustomKernels;
use crate::backend::gpu::custom::kernel::CustomKernel;
use crate::backend::gpu::runtime::device::GpuDevice;
use crate::backend::gpu::runtime::params::Params;
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::COMMON;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The complete WGSL of a user kernel with `inputs` inputs.
pub(crate) fn custom_source(inputs: u32, user: &str) -> String {
    let mut text = String::from("@group(0) @binding(0) var<storage, read> params: array<u32>;\n");
    text.push_str(COMMON);
    for i in 0..inputs {
        text.push_str(&format!(
            "@group(0) @binding({}) var<storage, read> input{i}: array<f32>;\n",
            i + 1
        ));
    }
    text.push_str(&format!(
        "@group(0) @binding({}) var<storage, read_write> output: array<f32>;\n",
        inputs + 1
    ));
    text.push_str(user);
    text.push_str(
        "\n@compute @workgroup_size(256)\n\
         fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,\n\
         \x20       @builtin(local_invocation_index) local: u32) {\n\
         \x20   let i = linear_id(workgroup, workgroups, local);\n\
         \x20   if (i >= params[0]) {\n\
         \x20       return;\n\
         \x20   }\n\
         \x20   output[i] = compute(i);\n\
         }\n",
    );
    text
}

impl CustomKernels for GpuStorage {
    /// Run a user kernel over `numel` output elements. Every input must be F32 data starting
    /// at element 0 of its buffer (the caller passes contiguous copies).
    fn custom_kernel(
        device: &GpuDevice,
        wgsl: &str,
        inputs: &[&GpuStorage],
        numel: usize,
    ) -> Result<GpuStorage> {
        if let Some(bad) = inputs.iter().find(|s| s.dtype() != DType::F32) {
            return Err(Error::Unsupported {
                op: "custom kernel",
                dtype: bad.dtype(),
                device: format!("gpu:{}", device.ordinal()),
                hint: "; custom kernels take float32 inputs".into(),
            });
        }
        let out = GpuStorage::allocate(device, "custom kernel", numel, DType::F32)?;
        let key = CustomKernel {
            inputs: inputs.len() as u32,
            source: Arc::from(wgsl),
        };
        let mut params = Params::new();
        params.push(numel)?;
        let mut buffers: Vec<&wgpu::Buffer> =
            inputs.iter().map(|s| s.raw()).collect::<Result<_>>()?;
        buffers.push(out.raw()?);
        GpuStorage::launch(device, &key, &params, &buffers, numel)?;
        Ok(out)
    }
}
