//! Kernel families `SgdStep`, `AdamStep` and `Unscale`. `SgdStep`: one SGD step in place
//! (`Update::sgd_step`), one invocation
//! per element reading the parameter, its gradient and (with momentum) its buffer and writing
//! the new parameter and buffer: one kernel per parameter where the composite ops recorded
//! five and a copy. The arithmetic is `update::SgdStep::element`'s, in the same order, in f32
//! (F16 data is widened and narrowed once); `cpu/update.rs` is the reference. F32 and F16.
//! With a skip flag (`OptimizerKernel::SgdStep { skip: true }`) every invocation first reads the
//! flag that `Unscale` set and returns where it is nonzero: a mixed-precision step with
//! inf/NaN gradients is skipped on the GPU, without a readback.
//! `AdamStep`: one Adam / AdamW step in place (`Update::adam_step`), one invocation per element
//! reading the parameter, its gradient and moments (and AMSGrad's maximum) and writing all but
//! the gradient back: one kernel per parameter where the composite ops recorded about a dozen
//! elementwise ops and three copies. The arithmetic is `update::AdamStep::element`'s, in f32.
//! `Unscale`: mixed precision's gradient unscaling in place (`Update::unscale`), each
//! element divided by the scale and an inf or NaN setting a U32 flag (`atomicOr`, so every
//! workgroup may set it; it is only ever set, so the result does not depend on the order).

mod contract;
pub(crate) mod kernel;

use crate::backend::checks::{check_adam_step, check_sgd_step, check_skip_flag, check_unscale};
use crate::backend::contract::AdamMoments;
use crate::backend::gpu::optimizer::kernel::OptimizerKernel;
use crate::backend::gpu::runtime::operands::{same_device, unsupported};
use crate::backend::gpu::runtime::params::{kernel_params, word, KernelParams, Params};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::backend::gpu::runtime::wgsl::{value_header, COMMON};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::update::{AdamStep, SgdStep};

kernel_params! {
    /// Parameters of the SGD step kernel.
    struct SgdStepParams {
        /// Elements.
        count: u32,
        /// First elements of the parameter, gradient and buffer views.
        parameter_offset: u32,
        gradient_offset: u32,
        buffer_offset: u32,
        /// 1 where the step adds `weight_decay · p` to the gradient.
        decay: u32,
        /// 1 on the first step with momentum (the buffer becomes the gradient).
        first: u32,
        /// 1 for Nesterov momentum.
        nesterov: u32,
        /// 1 where the dampening multiplies the gradient (dampening ≠ 0).
        dampened: u32,
        lr: f32,
        momentum: f32,
        /// 1 − dampening.
        keep: f32,
        weight_decay: f32,
    }
}

kernel_params! {
    /// Parameters of the Adam step kernel (`update::AdamStep::scalars`).
    struct AdamStepParams {
        /// Elements.
        count: u32,
        /// First elements of the parameter, gradient, moment and maximum views.
        parameter_offset: u32,
        gradient_offset: u32,
        exp_avg_offset: u32,
        exp_avg_sq_offset: u32,
        maximum_offset: u32,
        /// 0: no weight decay; 1: an L2 term in the gradient; 2: decoupled (AdamW).
        decay: u32,
        beta1: f32,
        /// 1 − β1.
        keep1: f32,
        beta2: f32,
        /// 1 − β2.
        keep2: f32,
        eps: f32,
        weight_decay: f32,
        /// 1 − lr · weight decay.
        shrink: f32,
        /// lr / (1 − β1^step).
        step_size: f32,
        /// √(1 − β2^step).
        bias2_root: f32,
    }
}

kernel_params! {
    /// Parameters of the unscaling kernel.
    struct UnscaleParams {
        /// Elements.
        count: u32,
        /// The gradient view's first element.
        offset: u32,
        /// The divisor.
        scale: f32,
    }
}

/// The catalogue entries (`kernel_catalog.rs`).
pub(crate) fn catalogue(keys: &mut Vec<OptimizerKernel>, dtype: DType) {
    if matches!(dtype, DType::F32 | DType::F16) {
        for momentum in [false, true] {
            for skip in [false, true] {
                keys.push(OptimizerKernel::SgdStep {
                    dtype,
                    momentum,
                    skip,
                });
            }
        }
        for amsgrad in [false, true] {
            keys.push(OptimizerKernel::AdamStep { dtype, amsgrad });
        }
        keys.push(OptimizerKernel::Unscale { dtype });
    }
}

/// WGSL of `OptimizerKernel::Unscale`.
pub(crate) fn unscale_source(dtype: DType) -> String {
    let mut w = value_header(dtype);
    w.push_str(UnscaleParams::WGSL);
    w.push_str(COMMON);
    w.push_str(
        "@group(0) @binding(1) var<storage, read_write> gradient: array<S>;
@group(0) @binding(2) var<storage, read_write> found: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {
        return;
    }
    let value = f32(load_value(gradient[params.offset + i]));
    // Inf and NaN have every exponent bit set.
    if ((bitcast<u32>(value) & 0x7f800000u) == 0x7f800000u) {
        atomicOr(&found[0], 1u);
    }
    gradient[params.offset + i] = store_value(T(value / params.scale));
}
",
    );
    w
}

/// WGSL of `OptimizerKernel::SgdStep` (`momentum`: with the buffer binding and its update; `skip`:
/// with a flag binding after the others, the step skipped where its first element is nonzero).
pub(crate) fn source(dtype: DType, momentum: bool, skip: bool) -> String {
    let mut w = value_header(dtype);
    w.push_str(SgdStepParams::WGSL);
    w.push_str(COMMON);
    let (binding, update) = if momentum {
        (
            "@group(0) @binding(3) var<storage, read_write> momentum_buffer: array<S>;\n",
            "    var next: f32;
    if (params.first != 0u) {
        next = g;
    } else if (params.dampened != 0u) {
        next = f32(load_value(momentum_buffer[params.buffer_offset + i])) * params.momentum + g * params.keep;
    } else {
        next = f32(load_value(momentum_buffer[params.buffer_offset + i])) * params.momentum + g;
    }
    momentum_buffer[params.buffer_offset + i] = store_value(T(next));
    if (params.nesterov != 0u) {
        g = g + next * params.momentum;
    } else {
        g = next;
    }
",
        )
    } else {
        ("", "")
    };
    let (skip_binding, skip_check) = if skip {
        (
            format!(
                "@group(0) @binding({}) var<storage, read> skip: array<u32>;\n",
                if momentum { 4 } else { 3 }
            ),
            "    if (skip[0] != 0u) {\n        return;\n    }\n",
        )
    } else {
        (String::new(), "")
    };
    w.push_str(&format!(
        "@group(0) @binding(1) var<storage, read_write> parameter: array<S>;
@group(0) @binding(2) var<storage, read> gradient: array<S>;
{binding}{skip_binding}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
{skip_check}    let p = f32(load_value(parameter[params.parameter_offset + i]));
    var g = f32(load_value(gradient[params.gradient_offset + i]));
    if (params.decay != 0u) {{
        g = g + p * params.weight_decay;
    }}
{update}    parameter[params.parameter_offset + i] = store_value(T(p - g * params.lr));
}}
"
    ));
    w
}

impl GpuStorage {
    /// One SGD step in place (`Update::sgd_step`); `self` is the parameter.
    pub fn sgd_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&GpuStorage, &Layout),
        buffer: Option<(&mut GpuStorage, &Layout)>,
        step: &SgdStep,
        skip: Option<&GpuStorage>,
    ) -> Result<()> {
        const OP: &str = "sgd_step";
        same_device(OP, self, grad)?;
        if let Some((buffer, _)) = &buffer {
            same_device(OP, self, buffer)?;
        }
        if let Some(skip) = skip {
            same_device(OP, self, skip)?;
            check_skip_flag(skip.len, skip.dtype)?;
        }
        let numel = check_sgd_step(
            (layout, self.len, self.dtype),
            (grad_layout, grad.len, grad.dtype),
            buffer.as_ref().map(|(b, l)| (*l, b.len, b.dtype)),
            step,
        )?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let flag = |on: bool| u32::from(on);
        let header = SgdStepParams {
            count: word(numel)?,
            parameter_offset: word(layout.offset)?,
            gradient_offset: word(grad_layout.offset)?,
            buffer_offset: word(buffer.as_ref().map_or(0, |(_, l)| l.offset))?,
            decay: flag(step.weight_decay != 0.0),
            first: flag(step.first),
            nesterov: flag(step.nesterov),
            dampened: flag(step.dampening != 0.0),
            lr: step.lr as f32,
            momentum: step.momentum as f32,
            keep: (1.0 - step.dampening) as f32,
            weight_decay: step.weight_decay as f32,
        };
        let momentum = step.uses_buffer();
        let key = OptimizerKernel::SgdStep {
            dtype: self.dtype,
            momentum,
            skip: skip.is_some(),
        };
        let mut buffers = vec![self.raw()?, grad.raw()?];
        if let (true, Some((buffer, _))) = (momentum, &buffer) {
            buffers.push(buffer.raw()?);
        }
        if let Some(skip) = skip {
            buffers.push(skip.raw()?);
        }
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            numel,
        )
    }
}

/// WGSL of `OptimizerKernel::AdamStep` (`amsgrad`: with the maximum's binding, the
/// denominator reading it).
pub(crate) fn adam_source(dtype: DType, amsgrad: bool) -> String {
    let mut w = value_header(dtype);
    w.push_str(AdamStepParams::WGSL);
    w.push_str(COMMON);
    let (binding, second) = if amsgrad {
        (
            "@group(0) @binding(5) var<storage, read_write> maximum: array<S>;\n",
            "    let largest = max(f32(load_value(maximum[params.maximum_offset + i])), v);
    maximum[params.maximum_offset + i] = store_value(T(largest));
    let second = largest;
",
        )
    } else {
        ("", "    let second = v;\n")
    };
    w.push_str(&format!(
        "@group(0) @binding(1) var<storage, read_write> parameter: array<S>;
@group(0) @binding(2) var<storage, read> gradient: array<S>;
@group(0) @binding(3) var<storage, read_write> exp_avg: array<S>;
@group(0) @binding(4) var<storage, read_write> exp_avg_sq: array<S>;
{binding}
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {{
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.count) {{
        return;
    }}
    let p = f32(load_value(parameter[params.parameter_offset + i]));
    var current = p;
    var g = f32(load_value(gradient[params.gradient_offset + i]));
    if (params.decay == 1u) {{
        g = g + p * params.weight_decay;
    }} else if (params.decay == 2u) {{
        current = p * params.shrink;
    }}
    let m = f32(load_value(exp_avg[params.exp_avg_offset + i])) * params.beta1 + g * params.keep1;
    let v = f32(load_value(exp_avg_sq[params.exp_avg_sq_offset + i])) * params.beta2 + g * g * params.keep2;
    exp_avg[params.exp_avg_offset + i] = store_value(T(m));
    exp_avg_sq[params.exp_avg_sq_offset + i] = store_value(T(v));
{second}    let denominator = sqrt(second) / params.bias2_root + params.eps;
    parameter[params.parameter_offset + i] = store_value(T(current - m / denominator * params.step_size));
}}
"
    ));
    w
}

impl GpuStorage {
    /// One Adam / AdamW step in place (`Update::adam_step`); `self` is the parameter.
    pub fn adam_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&GpuStorage, &Layout),
        moments: AdamMoments<'_, GpuStorage>,
        step: &AdamStep,
    ) -> Result<()> {
        const OP: &str = "adam_step";
        let AdamMoments {
            exp_avg: (m, m_layout),
            exp_avg_sq: (v, v_layout),
            maximum,
        } = moments;
        let maximum = maximum.filter(|_| step.amsgrad);
        same_device(OP, self, grad)?;
        same_device(OP, self, m)?;
        same_device(OP, self, v)?;
        if let Some((x, _)) = &maximum {
            same_device(OP, self, x)?;
        }
        let numel = check_adam_step(
            (layout, self.len, self.dtype),
            [
                Some((grad_layout, grad.len, grad.dtype)),
                Some((m_layout, m.len, m.dtype)),
                Some((v_layout, v.len, v.dtype)),
                maximum.as_ref().map(|(x, l)| (*l, x.len, x.dtype)),
            ],
            step,
        )?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let [_lr, beta1, keep1, beta2, keep2, eps, weight_decay, shrink, step_size, bias2_root] =
            step.scalars().map(|s| s as f32);
        let decay = match (step.weight_decay != 0.0, step.decoupled) {
            (false, _) => 0,
            (true, false) => 1,
            (true, true) => 2,
        };
        let header = AdamStepParams {
            count: word(numel)?,
            parameter_offset: word(layout.offset)?,
            gradient_offset: word(grad_layout.offset)?,
            exp_avg_offset: word(m_layout.offset)?,
            exp_avg_sq_offset: word(v_layout.offset)?,
            maximum_offset: word(maximum.as_ref().map_or(0, |(_, l)| l.offset))?,
            decay,
            beta1,
            keep1,
            beta2,
            keep2,
            eps,
            weight_decay,
            shrink,
            step_size,
            bias2_root,
        };
        let key = OptimizerKernel::AdamStep {
            dtype: self.dtype,
            amsgrad: maximum.is_some(),
        };
        let mut buffers = vec![self.raw()?, grad.raw()?, m.raw()?, v.raw()?];
        if let Some((x, _)) = &maximum {
            buffers.push(x.raw()?);
        }
        GpuStorage::launch(
            &self.device,
            &key,
            &Params::with_header(&header, 0),
            &buffers,
            numel,
        )
    }
}

impl GpuStorage {
    /// Gradient unscaling in place (`Update::unscale`); `self` is the gradient.
    pub fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut GpuStorage) -> Result<()> {
        const OP: &str = "unscale";
        same_device(OP, self, found)?;
        let numel = check_unscale((layout, self.len, self.dtype), (found.len, found.dtype))?;
        if !matches!(self.dtype, DType::F32 | DType::F16) {
            return Err(unsupported(OP, self.dtype, &self.device));
        }
        let header = UnscaleParams {
            count: word(numel)?,
            offset: word(layout.offset)?,
            scale: scale as f32,
        };
        GpuStorage::launch(
            &self.device,
            &OptimizerKernel::Unscale { dtype: self.dtype },
            &Params::with_header(&header, 0),
            &[self.raw()?, found.raw()?],
            numel,
        )
    }
}
