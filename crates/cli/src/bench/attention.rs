//! Scaled dot-product attention, forward + backward, at `[batch, heads, length, head_dim]`
//! in f32 or f16: milliseconds per step and the peak device memory, the same workload as
//! `bench/pytorch_reference.py attention` (PyTorch's `F.scaled_dot_product_attention`).
//! The value reported is TFLOPS over the 4·B·H·T²·d multiply-adds ×2 of forward and ×2.5 of
//! backward that flash-attention papers count (3.5 × 4·B·H·T²·d in all).
//!
//! On a GPU this measures the fused kernel (online softmax, memory linear in T) and its fused
//! backward; `--composite-attention` (or `ANYGRAD_FUSED_ATTENTION=off`) measures the composite
//! (matmul, softmax, matmul) instead, for comparison. The note of the result says which path ran.

use anygrad::{memory_stats, reset_peak_memory, DType, Device, Result, Tensor};

use super::{median, time_iterations, time_pipelined, BenchResult};

/// The workload's tensors (query, key and value needing gradients, and the upstream
/// gradient) and one step of it: forward, backward, gradients cleared (so no step adds into
/// the last one's). `anygrad profile attention` runs the same step.
pub struct AttentionWorkload {
    query: Tensor,
    key: Tensor,
    value: Tensor,
    upstream: Tensor,
    causal: bool,
}

impl AttentionWorkload {
    /// Random operands of `shape = [batch, heads, length, head_dim]` in `dtype`.
    pub fn new(device: &Device, shape: [usize; 4], dtype: DType, causal: bool) -> Result<Self> {
        let make =
            || -> Result<Tensor> { Ok(Tensor::randn(&shape, dtype, device)?.requires_grad_(true)) };
        Ok(AttentionWorkload {
            query: make()?,
            key: make()?,
            value: make()?,
            upstream: Tensor::randn(&shape, dtype, device)?,
            causal,
        })
    }

    /// One forward + backward.
    pub fn step(&self) -> Result<()> {
        let (query, key, value) = (&self.query, &self.key, &self.value);
        let out =
            anygrad::scaled_dot_product_attention(query, key, value, None, 0.0, self.causal, None)?;
        out.backward_with(&self.upstream)?;
        for tensor in [query, key, value] {
            tensor.set_grad(None);
        }
        Ok(())
    }
}

/// One forward + backward of self-attention at `shape = [batch, heads, length, head_dim]`.
pub fn run_attention(
    device: &Device,
    shape: [usize; 4],
    dtype: DType,
    causal: bool,
    seconds_per_case: f64,
) -> Result<Vec<BenchResult>> {
    let [batch, heads, length, head_dim] = shape;
    let path = if matches!(device, Device::Gpu(_)) && anygrad::fused_attention_enabled() {
        "fused kernel (where it covers the shape)"
    } else {
        "composite (--composite-attention, ANYGRAD_FUSED_ATTENTION=off or CPU)"
    };
    let workload = AttentionWorkload::new(device, shape, dtype, causal)?;
    let step = || workload.step();
    let probe = time_iterations(device, 1, 1, step)?;
    let iterations = ((seconds_per_case * 1e3 / probe[0].max(1e-3)) as usize).clamp(3, 200);
    // Steps issued back to back (no synchronize between them) say how much of a step is the
    // host's recording and the wait rather than the kernels; measured before the peak is
    // reset, as steps in flight together are not the peak of one.
    let (host, pipelined) = time_pipelined(device, iterations.min(50), step)?;
    device.synchronize()?;
    reset_peak_memory(device);
    let samples = time_iterations(device, 2, iterations, step)?;
    let stats = memory_stats(device);
    let med = median(&samples);
    let flops = 3.5 * 4.0 * (batch * heads) as f64 * (length * length) as f64 * head_dim as f64;
    let flops = if causal { flops / 2.0 } else { flops };
    Ok(vec![BenchResult {
        bench: "attention".into(),
        framework: "anygrad",
        device: device.description(),
        dtype: dtype.name().into(),
        size: format!(
            "B{batch}xH{heads}xT{length}xd{head_dim}{}",
            if causal { "-causal" } else { "" }
        ),
        median_ms: med,
        min_ms: samples[0],
        max_ms: samples[samples.len() - 1],
        iterations,
        value: flops / (med * 1e-3) / 1e12,
        unit: "TFLOPS",
        peak_memory_bytes: stats.as_ref().map(|s| s.peak_allocated_bytes),
        peak_requested_bytes: stats.as_ref().map(|s| s.peak_requested_bytes),
        note: Some(format!(
            "forward + backward, {path}; host {host:.3} ms to issue a step, {pipelined:.3} ms a step without a synchronize between steps"
        )),
    }])
}
