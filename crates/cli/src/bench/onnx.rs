//! An imported ONNX model's inference throughput: `anygrad bench onnx --model FILE.onnx
//! --batch B [--amp]` loads the model with `anygrad-onnx`, feeds random inputs of its declared
//! shapes (a symbolic batch dim takes B) and times inference as the resnet18 workload does:
//! two untimed runs (the first runs each new shape's heuristic kernel, the second the
//! autotuner's candidates), the pipelined figures, then the median of synchronized
//! iterations under `no_grad` (and f16 autocast with `--amp`), samples/s and peak device
//! memory. The note names the model and the convolution chains the importer fused
//! (`docs/ONNX.md`), so that a run with `ANYGRAD_ONNX_FUSION=off` can be compared with one
//! without.

use std::collections::BTreeMap;
use std::path::Path;

use anygrad::{autocast, memory_stats, no_grad, reset_peak_memory, DType, Device, Tensor};
use anygrad_onnx::proto::DataType;
use anygrad_onnx::{Declaration, DeclaredDim, OnnxModel, Value};

use super::{median, time_iterations, time_pipelined, BenchResult};

/// The batch when `--batch` is not given and the model's batch dim is symbolic.
pub const DEFAULT_ONNX_BATCH: usize = 64;

/// Timed iterations (as the resnet18 workload).
const ITERATIONS: usize = 10;

/// The shape a random input for `declared` takes: the first dim is the batch (`batch` where
/// it is symbolic or unknown; a fixed one must agree with a `batch` given), every other dim
/// must be fixed.
fn input_shape(declared: &Declaration, batch: Option<usize>) -> Result<Vec<usize>, String> {
    let dims = declared.shape.as_ref().ok_or_else(|| {
        format!(
            "input `{}` declares no shape; a benchmark needs one to make a random input",
            declared.name
        )
    })?;
    let mut shape = Vec::with_capacity(dims.len());
    for (k, dim) in dims.iter().enumerate() {
        shape.push(match (k, dim) {
            (_, DeclaredDim::Fixed(size)) => {
                if let (0, Some(wanted)) = (k, batch) {
                    if wanted != *size {
                        return Err(format!(
                            "input `{}` has a fixed batch of {size} ({}); --batch {wanted} \
                             cannot change it (export the model with a symbolic batch dim)",
                            declared.name,
                            declared.shape_text()
                        ));
                    }
                }
                *size
            }
            (0, _) => batch.unwrap_or(DEFAULT_ONNX_BATCH),
            (_, other) => {
                return Err(format!(
                    "input `{}` {} has a {} dim at position {k}; only the first (the batch) \
                     may vary",
                    declared.name,
                    declared.shape_text(),
                    match other {
                        DeclaredDim::Symbolic(name) => format!("symbolic (`{name}`)"),
                        _ => "unknown".to_string(),
                    }
                ))
            }
        });
    }
    Ok(shape)
}

/// A random normal input for `declared` of `shape`.
fn random_input(declared: &Declaration, shape: &[usize], device: &Device) -> Result<Value, String> {
    let dtype = match DataType::try_from(declared.element_type) {
        Ok(DataType::Float) => DType::F32,
        Ok(DataType::Float16) => DType::F16,
        Ok(DataType::Double) => DType::F64,
        _ => {
            return Err(format!(
                "input `{}` is {}; the benchmark feeds random float inputs only",
                declared.name,
                declared.element_type_name()
            ))
        }
    };
    Tensor::randn(shape, dtype, device)
        .map(Value::Tensor)
        .map_err(|e| format!("input `{}` {shape:?}: {e}", declared.name))
}

/// The fused chains as `20 convolutions fused: 9 Conv+Relu, 8 Conv+Add+Relu, 3 Conv`, with
/// how many ran node by node.
fn fusion_note(model: &OnnxModel) -> String {
    let chains = model.fused_chains();
    if chains.is_empty() {
        return "no convolutions fused".to_string();
    }
    let mut by_operators: BTreeMap<&str, usize> = BTreeMap::new();
    for chain in &chains {
        *by_operators.entry(chain.operators.as_str()).or_insert(0) += 1;
    }
    let mut counted: Vec<(&str, usize)> = by_operators.into_iter().collect();
    counted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = counted
        .iter()
        .map(|(operators, count)| format!("{count} {operators}"))
        .collect();
    let unfused = chains.iter().filter(|c| c.fused_runs == 0).count();
    let ran = if unfused == 0 {
        String::new()
    } else {
        format!(", {unfused} of them ran node by node")
    };
    format!(
        "{} convolutions fused: {}{ran}",
        chains.len(),
        list.join(", ")
    )
}

/// Inference of the model at `path` on one batch (`None`: the model's fixed batch, else
/// [`DEFAULT_ONNX_BATCH`]).
pub fn run_onnx(
    device: &Device,
    path: &Path,
    batch: Option<usize>,
    amp: bool,
) -> Result<Vec<BenchResult>, String> {
    let model = OnnxModel::load(path, device).map_err(|e| e.to_string())?;
    if model.inputs().is_empty() {
        return Err(format!("{} has no graph inputs to feed", path.display()));
    }
    let mut inputs = Vec::with_capacity(model.inputs().len());
    for declared in model.inputs() {
        let shape = input_shape(declared, batch)?;
        inputs.push((
            declared.name.clone(),
            random_input(declared, &shape, device)?,
        ));
    }
    let samples_per_batch = inputs
        .first()
        .and_then(|(_, value)| value.shape().first().copied())
        .unwrap_or(1);
    let image_input = inputs.first().is_some_and(|(_, v)| v.shape().len() == 4);
    let named: Vec<(&str, Value)> = inputs
        .iter()
        .map(|(name, value)| (name.as_str(), value.clone()))
        .collect();
    let fail = |e: &dyn std::fmt::Display| e.to_string();
    let forward = || -> anygrad::Result<()> {
        model
            .run(&named)
            .map(drop)
            .map_err(|e| anygrad::Error::invalid("onnx", e.to_string()))
    };
    let _inference = no_grad();
    let _autocast = if amp {
        Some(autocast(DType::F16, device).map_err(|e| fail(&e))?)
    } else {
        None
    };
    reset_peak_memory(device);
    for _ in 0..2 {
        forward().map_err(|e| fail(&e))?;
    }
    device.synchronize().map_err(|e| fail(&e))?;
    let pipelined = time_pipelined(device, ITERATIONS, forward).map_err(|e| fail(&e))?;
    reset_peak_memory(device);
    let samples = time_iterations(device, 1, ITERATIONS, forward).map_err(|e| fail(&e))?;
    let rate = samples_per_batch as f64 / (median(&samples) * 1e-3);
    let stats = memory_stats(device);
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let (host, total) = pipelined;
    Ok(vec![BenchResult {
        bench: "onnx".into(),
        framework: "anygrad",
        device: device.description(),
        dtype: if amp { "float16-amp" } else { "float32" }.into(),
        size: samples_per_batch.to_string(),
        median_ms: median(&samples),
        min_ms: samples.first().copied().unwrap_or(f64::NAN),
        max_ms: samples.last().copied().unwrap_or(f64::NAN),
        iterations: samples.len(),
        value: rate,
        unit: if image_input { "images/s" } else { "samples/s" },
        peak_memory_bytes: stats.as_ref().map(|m| m.peak_allocated_bytes),
        peak_requested_bytes: stats.map(|m| m.peak_requested_bytes),
        note: Some(format!(
            "{file}; {}; host {host:.2} ms to issue a batch; {total:.2} ms a batch without a \
             synchronize between batches",
            fusion_note(&model)
        )),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(dims: Vec<DeclaredDim>) -> Declaration {
        Declaration {
            name: "x".into(),
            element_type: DataType::Float as i32,
            shape: Some(dims),
        }
    }

    #[test]
    fn the_batch_dim_takes_the_batch() {
        let symbolic = declared(vec![
            DeclaredDim::Symbolic("batch".into()),
            DeclaredDim::Fixed(3),
            DeclaredDim::Fixed(224),
            DeclaredDim::Fixed(224),
        ]);
        assert_eq!(input_shape(&symbolic, Some(8)), Ok(vec![8, 3, 224, 224]));
        assert_eq!(
            input_shape(&symbolic, None),
            Ok(vec![DEFAULT_ONNX_BATCH, 3, 224, 224])
        );
        let fixed = declared(vec![DeclaredDim::Fixed(1), DeclaredDim::Fixed(3)]);
        assert_eq!(input_shape(&fixed, None), Ok(vec![1, 3]));
        assert_eq!(input_shape(&fixed, Some(1)), Ok(vec![1, 3]));
        assert!(input_shape(&fixed, Some(4))
            .unwrap_err()
            .contains("fixed batch of 1"));
        let inner = declared(vec![
            DeclaredDim::Fixed(1),
            DeclaredDim::Symbolic("h".into()),
        ]);
        assert!(input_shape(&inner, None).unwrap_err().contains("`h`"));
    }
}
