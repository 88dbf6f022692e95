//! `anygrad onnx run` as scripts/onnx/compare_with_onnxruntime.py drives it: `.npy` inputs,
//! `--output OUT.npz`, `--json` with the timings of every `--repeat` run, `--profile`'s table,
//! and one `error:` line for a bad `--repeat`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A protobuf field key.
fn key(field: u32, wire_type: u32) -> Vec<u8> {
    varint(u64::from(field << 3 | wire_type))
}

fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A length-delimited field.
fn message(field: u32, body: &[u8]) -> Vec<u8> {
    let mut out = key(field, 2);
    out.extend(varint(body.len() as u64));
    out.extend_from_slice(body);
    out
}

fn integer(field: u32, value: u64) -> Vec<u8> {
    let mut out = key(field, 0);
    out.extend(varint(value));
    out
}

/// `ValueInfoProto` of a float tensor `[size]`.
fn float_vector(name: &str, size: u64) -> Vec<u8> {
    let dim = message(1, &integer(1, size));
    let shape = message(2, &dim);
    let tensor_type = message(1, &[integer(1, 1), shape].concat());
    [message(1, name.as_bytes()), message(2, &tensor_type)].concat()
}

/// The bytes of a model computing `y = Relu(x)` over float `[4]` (opset 13), encoded by hand
/// from onnx.proto's field numbers.
fn relu_model() -> Vec<u8> {
    let node = [
        message(1, b"x"),
        message(2, b"y"),
        message(3, b"relu"),
        message(4, b"Relu"),
    ]
    .concat();
    let graph = [
        message(1, &node),
        message(2, b"relu_graph"),
        message(11, &float_vector("x", 4)),
        message(12, &float_vector("y", 4)),
    ]
    .concat();
    [
        integer(1, 8),
        message(7, &graph),
        message(8, &integer(2, 13)),
    ]
    .concat()
}

/// A float32 `.npy` of a vector.
fn npy(values: &[f32]) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    for v in values {
        out.extend(v.to_le_bytes());
    }
    out
}

/// A fresh folder under the target dir's temporary space.
fn folder(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).expect("temporary folder");
    path
}

fn anygrad(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .output()
        .expect("run anygrad");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn repeat_reports_every_run_and_profile_prints_the_op_table() {
    let dir = folder("onnx_run_repeat");
    let model = dir.join("relu.onnx");
    std::fs::write(&model, relu_model()).expect("write model");
    let input = dir.join("x.npy");
    std::fs::write(&input, npy(&[-2.0, -0.5, 0.5, 3.0])).expect("write input");
    let output = dir.join("out.npz");
    let input_arg = format!("x={}", input.display());
    let (ok, stdout, stderr) = anygrad(&[
        "onnx",
        "run",
        model.to_str().expect("path"),
        "--input",
        &input_arg,
        "--device",
        "cpu",
        "--output",
        output.to_str().expect("path"),
        "--repeat",
        "3",
        "--profile",
        "--json",
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a line")).expect("JSON");
    let runs = report["run_seconds_all"]
        .as_array()
        .expect("every run's time");
    assert_eq!(runs.len(), 3, "{report}");
    assert_eq!(report["run_seconds"], runs[0]);
    let later: Vec<f64> = runs[1..].iter().filter_map(|v| v.as_f64()).collect();
    let best = report["run_seconds_best_after_first"]
        .as_f64()
        .expect("best");
    assert_eq!(best, later.iter().copied().fold(f64::INFINITY, f64::min));
    assert_eq!(report["outputs"][0]["name"], "y");
    // The profile goes to standard error with --json: the per-op table names the Relu.
    assert!(
        stderr.contains("relu") && stderr.contains("calls"),
        "{stderr}"
    );
    // The outputs written are the model's (the last run's): relu of the input.
    let mut archive =
        zip::ZipArchive::new(std::fs::File::open(&output).expect("npz written")).expect("a zip");
    let member = archive.by_name("y.npy").expect("member y.npy");
    let values: Vec<f32> = npyz::NpyFile::new(member)
        .expect("an .npy member")
        .into_vec()
        .expect("float32 values");
    assert_eq!(values, vec![0.0, 0.0, 0.5, 3.0]);
}

#[test]
fn zero_repeats_is_one_error_line() {
    let dir = folder("onnx_run_zero_repeats");
    let model = dir.join("relu.onnx");
    std::fs::write(&model, relu_model()).expect("write model");
    let (ok, _, stderr) = anygrad(&[
        "onnx",
        "run",
        model.to_str().expect("path"),
        "--device",
        "cpu",
        "--repeat",
        "0",
    ]);
    assert!(!ok);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("--repeat"), "{stderr}");
}
