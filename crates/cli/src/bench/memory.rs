//! Memory-bound workloads: `a*b + a` on 64M f32 elements (reported as effective bandwidth of
//! the minimal traffic, 12 bytes per element) as written, which the GPU fuses into one kernel,
//! and again with fusion off (two kernels, 24 bytes moved per element); and a device-to-device
//! copy (8 bytes per element), the ceiling elementwise kernels are measured against.

use anygrad::{DType, Device, Result, Tensor};

use super::{median, time_iterations, BenchResult};

fn result(
    bench: &str,
    device: &Device,
    elements: usize,
    bytes_per_element: f64,
    samples: &[f64],
) -> BenchResult {
    let med = median(samples);
    BenchResult {
        bench: bench.into(),
        framework: "anygrad",
        device: device.description(),
        dtype: "float32".into(),
        size: elements.to_string(),
        median_ms: med,
        min_ms: samples[0],
        max_ms: samples[samples.len() - 1],
        iterations: samples.len(),
        value: bytes_per_element * elements as f64 / (med * 1e-3) / 1e9,
        unit: "GB/s",
        peak_memory_bytes: None,
        peak_requested_bytes: None,
        note: None,
    }
}

/// `a*b + a` (fused, then with fusion off) and a copy over `elements` f32 values. Each result
/// is kept until after the synchronize that ends its iteration, so the work is really done.
pub fn run_elementwise(
    device: &Device,
    elements: usize,
    iterations: usize,
) -> Result<Vec<BenchResult>> {
    let a = Tensor::rand(&[elements], DType::F32, device)?;
    let b = Tensor::rand(&[elements], DType::F32, device)?;
    let mut kept: Option<Tensor> = None;
    let time_expression = |kept: &mut Option<Tensor>| {
        time_iterations(device, 3, iterations, || {
            *kept = Some(a.mul(&b)?.add(&a)?);
            Ok(())
        })
    };
    let fused = time_expression(&mut kept)?;
    let was_enabled = anygrad::elementwise_fusion_enabled();
    anygrad::set_elementwise_fusion(false);
    let unfused = time_expression(&mut kept);
    anygrad::set_elementwise_fusion(was_enabled);
    let unfused = unfused?;
    let copy = time_iterations(device, 3, iterations, || {
        kept = Some(a.copy()?);
        Ok(())
    })?;
    let mut fused_result = result("elementwise", device, elements, 12.0, &fused);
    fused_result.note = Some(format!(
        "fusion {}",
        if was_enabled {
            "on"
        } else {
            "off (ANYGRAD_FUSION)"
        }
    ));
    let mut unfused_result = result("elementwise-unfused", device, elements, 12.0, &unfused);
    unfused_result.note = Some("fusion off: two kernels".into());
    Ok(vec![
        fused_result,
        unfused_result,
        result("copy", device, elements, 8.0, &copy),
    ])
}
