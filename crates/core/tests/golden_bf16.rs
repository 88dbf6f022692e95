//! PyTorch's bfloat16 results replayed on every device: `tests/golden/bf16_ops.json`, written
//! by `scripts/golden/generate_bf16.py` (PyTorch's CPU: casts of float32 values at and around
//! rounding ties, and matmul, add, mul, div, exp, tanh, sum and softmax of bfloat16 tensors).
//! Casts must match bit for bit; the ops, which PyTorch and anygrad both compute in f32 and
//! round once, within one bfloat16 unit (their f32 sums may run in another order, and
//! transcendental functions differ in the last f32 bits).
//!
//! The file is read when the test runs: where it has not been generated yet, the test skips
//! visibly (`SKIP` line), or fails under `ANYGRAD_REQUIRE_DATA=1`.

use anygrad_core::{DType, Device, Tensor};
use anygrad_testing::{skip_unless_required, Requirement};
use serde_json::Value;

/// Where `generate_bf16.py` writes its file.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/bf16_ops.json");

/// One bfloat16 unit relative to a value (8 significant bits: at most 2^-7).
const ONE_UNIT: f64 = 1.0 / 128.0;

/// A record's tensor on `device`: float32 data as F32, bfloat16 data as BF16 (exact).
fn tensor_of(record: &Value, device: &Device) -> Tensor {
    let shape: Vec<usize> = record["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data: Vec<f32> = record["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|v| v.as_f64().expect("number") as f32)
        .collect();
    let wide = Tensor::from_vec(data, &shape, device).expect("tensor");
    match record["dtype"].as_str() {
        Some("bfloat16") => wide.to_dtype(DType::BF16).expect("to bfloat16"),
        Some("float32") => wide,
        other => panic!("unexpected dtype {other:?}"),
    }
}

/// The op of a case on its inputs.
fn run(case: &Value, inputs: &[Tensor]) -> anygrad_core::Result<Tensor> {
    let params = &case["params"];
    match case["op"].as_str().expect("op") {
        "to_bfloat16" => inputs[0].to_dtype(DType::BF16),
        "matmul" => inputs[0].matmul(&inputs[1]),
        "add" => inputs[0].add(&inputs[1]),
        "mul" => inputs[0].mul(&inputs[1]),
        "div" => inputs[0].div(&inputs[1]),
        "exp" => inputs[0].exp(),
        "tanh" => inputs[0].tanh(),
        "sum" => {
            let dims: Vec<isize> = params["dims"]
                .as_array()
                .expect("dims")
                .iter()
                .map(|d| d.as_i64().expect("dim") as isize)
                .collect();
            inputs[0].sum(&dims, params["keepdim"].as_bool().expect("keepdim"))
        }
        "softmax" => inputs[0].softmax(params["dim"].as_i64().expect("dim") as isize),
        other => panic!("unknown op {other}"),
    }
}

fn matches_pytorch_bf16(device: &Device) {
    let text = match std::fs::read_to_string(GOLDEN) {
        Ok(text) => text,
        Err(error) => {
            skip_unless_required(
                Requirement::Data,
                &anygrad_testing::current_test(),
                &format!(
                    "{GOLDEN}: {error} (generate it with PyTorch: \
                     python scripts/golden/generate_bf16.py)"
                ),
            );
            return;
        }
    };
    let golden: Value = serde_json::from_str(&text).expect("bf16_ops.json is JSON");
    let cases = golden["cases"].as_array().expect("cases");
    assert!(!cases.is_empty(), "no cases in {GOLDEN}");
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let inputs: Vec<Tensor> = case["inputs"]
            .as_array()
            .expect("inputs")
            .iter()
            .map(|record| tensor_of(record, device))
            .collect();
        let expected = tensor_of(&case["output"], &Device::Cpu);
        let got = match run(case, &inputs) {
            Ok(got) => got,
            Err(error) => {
                failures.push(format!("{name}: {error}"));
                continue;
            }
        };
        if got.dtype() != DType::BF16 || got.shape() != expected.shape() {
            failures.push(format!(
                "{name}: got {:?} {}, expected {:?} bfloat16",
                got.shape(),
                got.dtype(),
                expected.shape()
            ));
            continue;
        }
        let got = got.to_vec_f64().expect("values");
        let want = expected.to_vec_f64().expect("values");
        let exact = case["op"] == "to_bfloat16";
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let close = if exact {
                g.to_bits() == w.to_bits()
            } else {
                (g - w).abs() <= ONE_UNIT * w.abs() + 1e-30
            };
            if !close {
                failures.push(format!("{name}: element {i}: got {g}, PyTorch {w}"));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch on {device}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

anygrad_testing::device_tests!(matches_pytorch_bf16);
