//! Kernel family `BatchNormInputGrad`: batch norm's input gradient in one pass,
//! `dx = k·(g − ḡ − (x − μ)·s)` with four F32 coefficients per channel
//! (`BatchNormalization::batch_norm_backward_input`), reading the gradient and the input in their
//! storage type (F16 directly: no f32 copies of either, so an autocast backward needs no batch
//! slices to bound its temporaries) and computing in f32. The composite it replaces cast both
//! to f32 and chained broadcasts through the fusion engine, whose kernels hold one dtype.
//!
//! One invocation per `vec4` of a dense `[n, c, rest]` pair when `rest` is a multiple of 4
//! (the four lanes share a channel), else per element. Every read is clamped to its buffer.
//! The CPU's `cpu/batch_norm.rs` is the reference.

use crate::backend::checks::check_batch_norm_input;
use crate::backend::gpu::norm::kernel::NormKernel;
use crate::backend::gpu::runtime::operands::{same_device, unsupported};
use crate::backend::gpu::runtime::params::{check_view, kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;

kernel_params! {
    /// Parameters of the batch-norm input gradient.
    struct BatchNormInputParams {
        /// Invocations that write (vec4s or elements).
        count: u32,
        /// Channels.
        channels: u32,
        /// Elements per image and channel (in vec4s for the vector kernel).
        rest: u32,
    }
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<NormKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for vector in [false, true] {
            keys.push(NormKernel::BatchNormInputGrad { dtype, vector });
        }
    }
}

/// WGSL of `NormKernel::BatchNormInputGrad`.
pub(crate) fn source(dtype: DType, vector: bool) -> String {
    let mut w = value_header(dtype);
    w.push_str(BatchNormInputParams::WGSL);
    w.push_str(COMMON);
    let (element, compute) = if vector {
        ("vec4<S>", "vec4<f32>")
    } else {
        ("S", "f32")
    };
    w.push_str(&format!(
        "@group(0) @binding(1) var<storage, read> gradient: array<{element}>;
@group(0) @binding(2) var<storage, read> input: array<{element}>;
// Rows: mean, scale, mean gradient, slope (F32 [4, c]).
@group(0) @binding(3) var<storage, read> coefficients: array<f32>;
@group(0) @binding(4) var<storage, read_write> result: array<{element}>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let c = params.channels;
    let channel = min((i / params.rest) % c, c - 1u);
    let last = arrayLength(&coefficients) - 1u;
    let mean = coefficients[min(channel, last)];
    let scale = coefficients[min(c + channel, last)];
    let mean_gradient = coefficients[min(2u * c + channel, last)];
    let slope = coefficients[min(3u * c + channel, last)];
    let g = {compute}(gradient[min(i, arrayLength(&gradient) - 1u)]);
    let x = {compute}(input[min(i, arrayLength(&input) - 1u)]);
    result[i] = {element}(scale * (g - mean_gradient - (x - mean) * slope));
}}
"
    ));
    w
}

impl GpuStorage {
    /// Batch norm's input gradient (`BatchNormalization::batch_norm_backward_input`); `self` is
    /// the output gradient.
    pub fn batch_norm_backward_input(
        &self,
        layout: &Layout,
        input: &GpuStorage,
        input_layout: &Layout,
        coefficients: &GpuStorage,
        coefficients_layout: &Layout,
    ) -> Result<GpuStorage> {
        const OP: &str = "batch_norm_backward_input";
        same_device(OP, self, input)?;
        same_device(OP, self, coefficients)?;
        check_view(OP, layout, self.len)?;
        check_view(OP, input_layout, input.len)?;
        check_view(OP, coefficients_layout, coefficients.len)?;
        let (n, c, rest) = check_batch_norm_input(
            OP,
            (layout, self.dtype),
            (input_layout, input.dtype),
            (coefficients_layout, coefficients.dtype),
        )?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let numel = n * c * rest;
        let out = GpuStorage::allocate(&self.device, OP, numel, self.dtype)?;
        if numel == 0 {
            return Ok(out);
        }
        let (mut g_copy, mut x_copy, mut k_copy) = (None, None, None);
        let g = self.dense_from_start(layout, &mut g_copy)?;
        let x = input.dense_from_start(input_layout, &mut x_copy)?;
        let k = coefficients.dense_from_start(coefficients_layout, &mut k_copy)?;
        let vector = rest.is_multiple_of(4);
        let unit = if vector { 4 } else { 1 };
        let header = BatchNormInputParams {
            count: word(numel / unit)?,
            channels: word(c)?,
            rest: word(rest / unit)?,
        };
        GpuStorage::launch(
            &self.device,
            &NormKernel::BatchNormInputGrad {
                dtype: self.dtype,
                vector,
            },
            &Params::with_header(&header, 0),
            &[g.raw()?, x.raw()?, k.raw()?, out.raw()?],
            numel / unit,
        )?;
        Ok(out)
    }
}
