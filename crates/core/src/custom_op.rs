//! User-defined ops. A [`CustomOp`] gives a name, its output shape, a required CPU reference
//! forward (over f32 slices), and a backward written in tensor ops. Applied to CPU tensors the
//! reference runs directly; applied to GPU tensors, an op without a GPU kernel runs on the CPU
//! **only as the fallback policy allows** (`ANYGRAD_FALLBACK=error|warn|allow`), is counted in
//! the fallback statistics, and shows in the profiler as a CPU fallback with its cost.
//!
//! ```
//! use std::sync::Arc;
//! use anygrad_core::custom_op::{apply, CustomOp};
//! use anygrad_core::{Device, Result, Tensor};
//!
//! /// y = x³
//! struct Cube;
//! impl CustomOp for Cube {
//!     fn name(&self) -> &str { "cube" }
//!     fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>> { Ok(shapes[0].to_vec()) }
//!     fn cpu_forward(&self, inputs: &[&[f32]], _shapes: &[&[usize]]) -> Result<Vec<f32>> {
//!         Ok(inputs[0].iter().map(|x| x * x * x).collect())
//!     }
//!     fn backward(&self, inputs: &[Tensor], grad: &Tensor) -> Result<Vec<Option<Tensor>>> {
//!         Ok(vec![Some(grad.mul(&inputs[0].square()?.mul_scalar(3.0)?)?)])
//!     }
//! }
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu)?.requires_grad_(true);
//! let y = apply(Arc::new(Cube), &[&x])?;
//! y.sum_all()?.backward()?;
//! assert_eq!(x.grad().unwrap().to_vec::<f32>()?, vec![3.0, 12.0]);
//! # Ok::<(), anygrad_core::Error>(())
//! ```

use std::sync::Arc;

use crate::autograd::CustomBackward;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::tensor::Tensor;

/// A user-defined op on f32 tensors.
pub trait CustomOp: Send + Sync {
    /// The op's name (shown in errors, fallback statistics and the profiler).
    fn name(&self) -> &str;
    /// The output shape for these input shapes (errors for incompatible inputs).
    fn output_shape(&self, shapes: &[&[usize]]) -> Result<Vec<usize>>;
    /// The reference forward on the CPU: contiguous row-major inputs, one output.
    fn cpu_forward(&self, inputs: &[&[f32]], shapes: &[&[usize]]) -> Result<Vec<f32>>;
    /// Gradients of the inputs given the output gradient, in tensor ops (so they run on the
    /// tensors' device); `None` for inputs that need none.
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>>;
    /// The op's GPU kernel, when it has one: WGSL source defining `fn compute(i: u32) -> f32`,
    /// which returns output element `i` (row-major) and may read the f32 inputs `input0`,
    /// `input1`, ... (contiguous, row-major) and `params[0]` (the output's element count).
    /// `None` means GPU inputs run the CPU reference under the fallback policy.
    fn wgsl(&self) -> Option<String> {
        None
    }
}

/// Run the op's WGSL kernel on GPU inputs.
fn gpu_kernel(
    op: &dyn CustomOp,
    source: &str,
    inputs: &[&Tensor],
    shape: &[usize],
) -> Result<Tensor> {
    // Kernels index inputs from element 0: pass dense copies of views that do not start there.
    let dense: Vec<Tensor> = inputs
        .iter()
        .map(|t| {
            if t.is_contiguous() && t.layout().offset == 0 {
                Ok((*t).clone())
            } else {
                t.copy()
            }
        })
        .collect::<Result<_>>()?;
    let guards: Vec<_> = dense.iter().map(|t| t.storage()).collect();
    let storages: Vec<&Storage> = guards.iter().map(|guard| &**guard).collect();
    let numel = crate::shape::numel(shape);
    let output =
        Storage::custom_kernel(inputs[0].device(), source, &storages, numel).map_err(|error| {
            match error {
                Error::DeviceMismatch { lhs, rhs, .. } => Error::invalid(
                    "custom op",
                    format!("{}: the kernel's inputs are on {lhs} and {rhs}", op.name()),
                ),
                other => other,
            }
        })?;
    Ok(Tensor::from_storage(output, shape, None))
}

struct Backward(Arc<dyn CustomOp>);

impl CustomBackward for Backward {
    fn backward(&self, inputs: &[Tensor], grad_output: &Tensor) -> Result<Vec<Option<Tensor>>> {
        self.0.backward(inputs, grad_output)
    }
}

fn cpu_reference(op: &dyn CustomOp, inputs: &[&Tensor]) -> Result<Tensor> {
    let values: Vec<Vec<f32>> = inputs
        .iter()
        .map(|t| t.to_vec::<f32>())
        .collect::<Result<_>>()?;
    let slices: Vec<&[f32]> = values.iter().map(Vec::as_slice).collect();
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let shape = op.output_shape(&shapes)?;
    let output = op.cpu_forward(&slices, &shapes)?;
    Tensor::from_vec(output, &shape, &Device::Cpu)
}

/// Apply a custom op; the result is differentiable through the op's `backward`.
pub fn apply(op: Arc<dyn CustomOp>, inputs: &[&Tensor]) -> Result<Tensor> {
    let first = inputs.first().ok_or_else(|| {
        Error::invalid(
            "custom op",
            format!("{} needs at least one input", op.name()),
        )
    })?;
    for input in inputs {
        first.same_device_for(op.name(), input)?;
        if input.dtype() != DType::F32 {
            return Err(Error::Unsupported {
                op: "custom op",
                dtype: input.dtype(),
                device: input.device().to_string(),
                hint: format!("; {} takes float32 inputs", op.name()),
            });
        }
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let device = first.device().clone();
    let output = {
        let _no_graph = crate::autograd::no_grad();
        match &device {
            Device::Cpu => crate::profiler::record(
                op.name(),
                &shapes,
                DType::F32,
                &device,
                |t: &Tensor| (t.numel() * 4) as u64,
                || cpu_reference(op.as_ref(), inputs),
            )?,
            Device::Gpu(_) => match op.wgsl() {
                Some(source) => {
                    let shape = op.output_shape(&shapes)?;
                    crate::profiler::record(
                        op.name(),
                        &shapes,
                        DType::F32,
                        &device,
                        |t: &Tensor| (t.numel() * 4) as u64,
                        || gpu_kernel(op.as_ref(), &source, inputs, &shape),
                    )?
                }
                None => {
                    let bytes: u64 = inputs.iter().map(|t| (t.numel() * 4) as u64).sum();
                    let name = format!("custom:{}", op.name());
                    crate::profiler::record_fallback(
                        op.name(),
                        &shapes,
                        DType::F32,
                        &device,
                        || {
                            crate::fallback::run_with_fallback(&name, bytes, || {
                                let on_cpu: Vec<Tensor> = inputs
                                    .iter()
                                    .map(|t| t.to_device(&Device::Cpu))
                                    .collect::<Result<_>>()?;
                                let refs: Vec<&Tensor> = on_cpu.iter().collect();
                                cpu_reference(op.as_ref(), &refs)?.to_device(&device)
                            })
                        },
                    )?
                }
            },
        }
    };
    Ok(Tensor::with_custom_backward(
        &output,
        inputs,
        Arc::new(Backward(op)),
    ))
}

/// Result of [`gradcheck`]: the worst disagreement between autograd and finite differences.
#[derive(Debug, Clone)]
pub struct GradcheckReport {
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    pub checked_elements: usize,
}

/// Compare autograd's gradients of `sum(f(inputs) * w)` (a fixed, uneven weighting `w`) with
/// central finite differences of step `epsilon`, for every element of every input that
/// requires grad. Runs on the inputs' device and dtype; use f64 CPU inputs for tight
/// tolerances, f32 with `epsilon` around 1e-3 otherwise. Errors when the relative error
/// exceeds `tolerance`.
pub fn gradcheck(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    epsilon: f64,
    tolerance: f64,
) -> Result<GradcheckReport> {
    let objective = |tensors: &[Tensor]| -> Result<Tensor> {
        let out = f(tensors)?;
        let weights: Vec<f64> = (0..out.numel())
            .map(|i| 1.0 + 0.37 * (i as f64).sin())
            .collect();
        let w = Tensor::from_vec(weights, out.shape(), &Device::Cpu)?
            .to_dtype(out.dtype())?
            .to_device(out.device())?;
        out.mul(&w)?.sum_all()
    };
    let tracked: Vec<Tensor> = inputs
        .iter()
        .map(|t| t.detach().requires_grad_(t.requires_grad()))
        .collect();
    objective(&tracked)?.backward()?;
    let mut report = GradcheckReport {
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        checked_elements: 0,
    };
    for (which, input) in inputs.iter().enumerate() {
        if !input.requires_grad() {
            continue;
        }
        let analytic = match tracked[which].grad() {
            Some(g) => g.to_vec_f64()?,
            None => vec![0.0; input.numel()],
        };
        let base = input.to_vec_f64()?;
        for i in 0..base.len() {
            let shifted = |delta: f64| -> Result<f64> {
                let mut values = base.clone();
                values[i] += delta;
                let moved = Tensor::from_vec(values, input.shape(), &Device::Cpu)?
                    .to_dtype(input.dtype())?
                    .to_device(input.device())?;
                let mut all: Vec<Tensor> = inputs.iter().map(Tensor::detach).collect();
                all[which] = moved;
                let _guard = crate::autograd::no_grad();
                objective(&all)?.item_f64()
            };
            let numeric = (shifted(epsilon)? - shifted(-epsilon)?) / (2.0 * epsilon);
            let abs = (analytic[i] - numeric).abs();
            let rel = abs / (1.0 + numeric.abs());
            report.max_abs_error = report.max_abs_error.max(abs);
            report.max_rel_error = report.max_rel_error.max(rel);
            report.checked_elements += 1;
            if rel > tolerance {
                return Err(Error::invalid(
                    "gradcheck",
                    format!(
                        "input {which} element {i}: autograd {} vs finite difference {numeric}",
                        analytic[i]
                    ),
                ));
            }
        }
    }
    Ok(report)
}
