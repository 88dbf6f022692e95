//! Running folders in ONNX's backend-test layout (`model.onnx`, `test_data_set_N/input_K.pb`
//! and `output_K.pb`, serialized `TensorProto`s; an optional `tolerance.json` with `rtol` and
//! `atol`): find them under a folder, run each data set and compare the outputs. A case that
//! fails or panics inside is reported, never aborts the caller.

use std::path::{Path, PathBuf};

use anygrad_core::Device;
use prost::Message;

use crate::compare::{compare, Tolerance};
use crate::host_tensor::HostTensor;
use crate::model::OnnxModel;
use crate::proto::TensorProto;
use crate::tensor_data::decode_tensor;

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum CaseOutcome {
    /// Every output of every data set matched.
    Pass,
    /// Loading, running or comparing failed: why.
    Fail(String),
    /// The model uses operators without an implementation: which.
    Unsupported(String),
}

/// The largest `.pb` test tensor read (1 GiB).
const MAX_TENSOR_FILE_BYTES: u64 = 1 << 30;

/// Every case folder (one holding `model.onnx`) at or below `roots`, sorted by path.
pub fn find_cases(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(dir) = stack.pop() {
        if dir.join("model.onnx").is_file() {
            found.push(dir);
            continue;
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                // Do not follow links out of the tree.
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path);
                }
            }
        }
    }
    found.sort();
    found
}

/// Read a `.pb` file holding one `TensorProto`.
pub fn read_tensor_file(path: &Path) -> Result<(String, HostTensor), String> {
    let bytes = anygrad_core::files::read_regular_file(path, MAX_TENSOR_FILE_BYTES, "test tensor")
        .map_err(|e| e.to_string())?;
    let tensor = TensorProto::decode(bytes.as_slice())
        .map_err(|e| format!("{}: malformed TensorProto: {e}", path.display()))?;
    let host = decode_tensor(&tensor, path.parent()).map_err(|e| e.to_string())?;
    Ok((tensor.name, host))
}

/// The `NAME_K.pb` files of a data set folder, by K.
fn numbered(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    let k = name
                        .strip_prefix(prefix)?
                        .strip_suffix(".pb")?
                        .parse::<usize>()
                        .ok()?;
                    Some((k, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.into_iter().map(|(_, p)| p).collect()
}

/// The tolerances of a case: `tolerance.json` beside the model, else the defaults.
fn tolerance_of(dir: &Path) -> Result<Tolerance, String> {
    let path = dir.join("tolerance.json");
    let mut tolerance = Tolerance::default();
    if !path.is_file() {
        return Ok(tolerance);
    }
    let bytes = anygrad_core::files::read_regular_file(&path, 1 << 20, "tolerance file")
        .map_err(|e| e.to_string())?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(r) = json.get("rtol").and_then(serde_json::Value::as_f64) {
        tolerance.rtol = r;
    }
    if let Some(a) = json.get("atol").and_then(serde_json::Value::as_f64) {
        tolerance.atol = a;
    }
    Ok(tolerance)
}

/// Run one case folder on `device`.
pub fn run_case(dir: &Path, device: &Device) -> CaseOutcome {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case_inner(dir, device))) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            CaseOutcome::Fail(format!("panicked: {message}"))
        }
    }
}

fn run_case_inner(dir: &Path, device: &Device) -> CaseOutcome {
    let model = match OnnxModel::load(dir.join("model.onnx"), device) {
        Ok(m) => m,
        Err(e) => return CaseOutcome::Fail(e.to_string()),
    };
    let unsupported = model.unsupported_nodes();
    if !unsupported.is_empty() {
        let mut ops: Vec<String> = unsupported
            .iter()
            .map(|(_, op)| op.split(' ').next().unwrap_or("").to_string())
            .collect();
        ops.sort();
        ops.dedup();
        return CaseOutcome::Unsupported(ops.join(", "));
    }
    let tolerance = match tolerance_of(dir) {
        Ok(t) => t,
        Err(e) => return CaseOutcome::Fail(e),
    };
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
                })
                .collect()
        })
        .unwrap_or_default();
    sets.sort();
    if sets.is_empty() {
        return CaseOutcome::Fail("no test_data_set_N folder".into());
    }
    for set in sets {
        let set_name = set
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut inputs = Vec::new();
        for (k, path) in numbered(&set, "input_").into_iter().enumerate() {
            let (name, host) = match read_tensor_file(&path) {
                Ok(t) => t,
                Err(e) => return CaseOutcome::Fail(e),
            };
            let declared = model.inputs();
            let name = if declared.iter().any(|d| d.name == name) {
                name
            } else if let Some(d) = declared.get(k) {
                d.name.clone()
            } else {
                return CaseOutcome::Fail(format!("{set_name}: input {k} matches no graph input"));
            };
            inputs.push((name, host));
        }
        let refs: Vec<(&str, HostTensor)> = inputs
            .iter()
            .map(|(n, h)| (n.as_str(), h.clone()))
            .collect();
        let outputs = match model.run_host(&refs) {
            Ok(o) => o,
            Err(e) => return CaseOutcome::Fail(e.to_string()),
        };
        let expected_files = numbered(&set, "output_");
        if expected_files.len() != outputs.len() {
            return CaseOutcome::Fail(format!(
                "{set_name}: {} outputs, {} expected",
                outputs.len(),
                expected_files.len()
            ));
        }
        for ((name, actual), path) in outputs.iter().zip(expected_files) {
            let (_, expected) = match read_tensor_file(&path) {
                Ok(t) => t,
                Err(e) => return CaseOutcome::Fail(e),
            };
            if let Err(why) = compare(actual, &expected, tolerance) {
                return CaseOutcome::Fail(format!("{set_name}: output `{name}`: {why}"));
            }
        }
    }
    CaseOutcome::Pass
}
