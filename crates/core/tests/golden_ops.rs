//! Golden-value tests: replays the PyTorch cases in `tests/golden/core_ops.json` on every
//! device. Each case names a `Tensor` method, its parameters and inputs, the expected output,
//! a fixed upstream tensor `w` and the expected gradients of `(output * w).sum()` with respect
//! to every float input. The JSON is produced by `scripts/golden/generate_core_ops.py`
//! (PyTorch, float64 maths, values stored rounded to f32), so `cargo test` needs no Python.
//!
//! Tolerances: outputs `|got - want| <= 1e-5 + 1e-4 * |want|`; gradients
//! `|got - want| <= 1e-4 + 1e-4 * |want|`. Integer and Bool outputs must match exactly.
//!
//! Every case runs even when an earlier one fails (panics inside an op are caught per case);
//! the test then fails listing every failing case by name. Set `ANYGRAD_GOLDEN_FILTER=text`
//! to run only the cases whose name contains `text` (a debugging aid for this test only); a
//! filter that selects no case of a golden file fails that file's tests, so select the tests
//! by name too.
//!
//! The GPU variant opens the GPU through `anygrad_testing::gpu_or_skip`; with no adapter it
//! prints a visible `SKIP` line, unless `ANYGRAD_REQUIRE_GPU=1`, where a missing adapter fails
//! the test.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anygrad_core::{Conv2dParams, DType, Device, Tensor};
use serde_json::Value;

const GOLDEN: &str = include_str!("golden/core_ops.json");
/// Composite ops from issue 15 (`scripts/golden/generate_composite_ops.py`), same format.
const GOLDEN_COMPOSITE: &str = include_str!("golden/composite_ops.json");

/// Sorting and scan ops (`scripts/golden/generate_sort_scan_ops.py`), same format.
const GOLDEN_SORT_SCAN: &str = include_str!("golden/sort_scan_ops.json");

const OUTPUT_RTOL: f64 = 1e-4;
const OUTPUT_ATOL: f64 = 1e-5;
const GRAD_RTOL: f64 = 1e-4;
const GRAD_ATOL: f64 = 1e-4;

type CaseResult = std::result::Result<(), String>;

/// Shape of a JSON tensor record.
fn shape_of(record: &Value) -> Vec<usize> {
    record["shape"]
        .as_array()
        .expect("record has a shape")
        .iter()
        .map(|d| d.as_u64().expect("dims are unsigned integers") as usize)
        .collect()
}

/// Flat data of a JSON tensor record, as f64.
fn data_of(record: &Value) -> Vec<f64> {
    record["data"]
        .as_array()
        .expect("record has data")
        .iter()
        .map(|v| v.as_f64().expect("data are numbers"))
        .collect()
}

fn dtype_of(record: &Value) -> DType {
    match record["dtype"].as_str().unwrap_or("float32") {
        "float32" => DType::F32,
        "int32" => DType::I32,
        "bool" => DType::Bool,
        other => panic!("golden file uses an unknown dtype {other}"),
    }
}

/// Build a tensor on `device` from a JSON record (float inputs get `requires_grad`).
fn tensor_from(record: &Value, device: &Device) -> anygrad_core::Result<Tensor> {
    let shape = shape_of(record);
    let data = data_of(record);
    match dtype_of(record) {
        DType::F32 => {
            let values: Vec<f32> = data.iter().map(|&v| v as f32).collect();
            Ok(Tensor::from_vec(values, &shape, device)?.requires_grad_(true))
        }
        DType::I32 => Tensor::from_vec(
            data.iter().map(|&v| v as i32).collect::<Vec<i32>>(),
            &shape,
            device,
        ),
        DType::Bool => Tensor::from_vec(
            data.iter().map(|&v| v != 0.0).collect::<Vec<bool>>(),
            &shape,
            device,
        ),
        _ => unreachable!(),
    }
}

fn param_i64(params: &Value, key: &str) -> i64 {
    params[key]
        .as_i64()
        .unwrap_or_else(|| panic!("param {key} missing or not an integer"))
}

fn param_isize(params: &Value, key: &str) -> isize {
    param_i64(params, key) as isize
}

fn param_usize(params: &Value, key: &str) -> usize {
    param_i64(params, key) as usize
}

fn param_f64(params: &Value, key: &str) -> f64 {
    params[key]
        .as_f64()
        .unwrap_or_else(|| panic!("param {key} missing or not a number"))
}

fn param_bool(params: &Value, key: &str) -> bool {
    params[key]
        .as_bool()
        .unwrap_or_else(|| panic!("param {key} missing or not a bool"))
}

fn param_dims(params: &Value, key: &str) -> Vec<isize> {
    params[key]
        .as_array()
        .unwrap_or_else(|| panic!("param {key} missing or not a list"))
        .iter()
        .map(|d| d.as_i64().expect("dims are integers") as isize)
        .collect()
}

fn param_pair(params: &Value, key: &str) -> (usize, usize) {
    let dims = param_dims(params, key);
    assert_eq!(dims.len(), 2, "param {key} must be a [height, width] pair");
    (dims[0] as usize, dims[1] as usize)
}

/// Call the `Tensor` method the case names.
fn apply(op: &str, p: &Value, x: &[Tensor]) -> anygrad_core::Result<Tensor> {
    match op {
        // unary
        "neg" => x[0].neg(),
        "abs" => x[0].abs(),
        "exp" => x[0].exp(),
        "log" => x[0].log(),
        "sqrt" => x[0].sqrt(),
        "rsqrt" => x[0].rsqrt(),
        "sin" => x[0].sin(),
        "cos" => x[0].cos(),
        "tanh" => x[0].tanh(),
        "sigmoid" => x[0].sigmoid(),
        "relu" => x[0].relu(),
        "gelu" => x[0].gelu(),
        "silu" => x[0].silu(),
        "pow_scalar" => x[0].pow_scalar(param_f64(p, "exponent")),
        "clamp" => x[0].clamp(param_f64(p, "min"), param_f64(p, "max")),
        // binary (broadcasting)
        "add" => x[0].add(&x[1]),
        "sub" => x[0].sub(&x[1]),
        "mul" => x[0].mul(&x[1]),
        "div" => x[0].div(&x[1]),
        "maximum" => x[0].maximum(&x[1]),
        "minimum" => x[0].minimum(&x[1]),
        "pow" => x[0].pow(&x[1]),
        "eq" => x[0].eq(&x[1]),
        "lt" => x[0].lt(&x[1]),
        "ge" => x[0].ge(&x[1]),
        "where_" => Tensor::where_(&x[0], &x[1], &x[2]),
        // reductions
        "sum" => x[0].sum(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "mean" => x[0].mean(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "max" => x[0].max(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "min" => x[0].min(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "sum_all" => x[0].sum_all(),
        "mean_all" => x[0].mean_all(),
        "max_all" => x[0].max_all(),
        "min_all" => x[0].min_all(),
        "argmax" => x[0].argmax(param_isize(p, "dim"), param_bool(p, "keepdim")),
        "argmin" => x[0].argmin(param_isize(p, "dim"), param_bool(p, "keepdim")),
        "var" => x[0].var(
            &param_dims(p, "dims"),
            param_bool(p, "keepdim"),
            param_bool(p, "unbiased"),
        ),
        // linear algebra
        "matmul" => x[0].matmul(&x[1]),
        // indexing
        "index_select" => x[0].index_select(param_isize(p, "dim"), &x[1]),
        "gather" => x[0].gather(param_isize(p, "dim"), &x[1]),
        "scatter_add" => x[0].scatter_add(param_isize(p, "dim"), &x[1], &x[2]),
        "one_hot" => {
            let dtype =
                DType::parse(p["dtype"].as_str().unwrap_or("float32")).expect("known dtype");
            x[0].one_hot(param_usize(p, "num_classes"), dtype)
        }
        // composites
        "softmax" => x[0].softmax(param_isize(p, "dim")),
        "log_softmax" => x[0].log_softmax(param_isize(p, "dim")),
        "logsumexp" => x[0].logsumexp(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "log_softmax_gather" => {
            let dim = param_isize(p, "dim");
            x[0].log_softmax(dim)?.gather(dim, &x[1])
        }
        "conv2d" => {
            let params = Conv2dParams {
                stride: param_pair(p, "stride"),
                padding: param_pair(p, "padding"),
                dilation: param_pair(p, "dilation"),
                groups: param_usize(p, "groups"),
            };
            x[0].conv2d(&x[1], x.get(2), params)
        }
        "max_pool2d" => x[0].max_pool2d(
            param_pair(p, "kernel"),
            param_pair(p, "stride"),
            param_pair(p, "padding"),
        ),
        "avg_pool2d" => x[0].avg_pool2d(
            param_pair(p, "kernel"),
            param_pair(p, "stride"),
            param_pair(p, "padding"),
        ),
        // composites for ported scripts (golden/composite_ops.json)
        "flip" => x[0].flip(&param_dims(p, "dims")),
        "roll" => x[0].roll(param_isize(p, "shift"), param_isize(p, "dim")),
        "repeat" => {
            let reps: Vec<usize> = param_dims(p, "dims").iter().map(|&r| r as usize).collect();
            x[0].repeat(&reps)
        }
        "pad" => {
            let sides = param_dims(p, "dims");
            let side = |i: usize| sides[i] as usize;
            x[0].pad(side(0), side(1), side(2), side(3), param_f64(p, "value"))
        }
        "tril" => x[0].tril(param_isize(p, "diagonal")),
        "triu" => x[0].triu(param_isize(p, "diagonal")),
        "masked_fill" => x[0].masked_fill(&x[1], param_f64(p, "value")),
        "max_dim_values" => Ok(x[0]
            .max_dim(param_isize(p, "dim"), param_bool(p, "keepdim"))?
            .0),
        "max_dim_indices" => Ok(x[0]
            .max_dim(param_isize(p, "dim"), param_bool(p, "keepdim"))?
            .1),
        "min_dim_values" => Ok(x[0]
            .min_dim(param_isize(p, "dim"), param_bool(p, "keepdim"))?
            .0),
        "min_dim_indices" => Ok(x[0]
            .min_dim(param_isize(p, "dim"), param_bool(p, "keepdim"))?
            .1),
        "any" => x[0].any(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "all" => x[0].all(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "std" => x[0].std(
            &param_dims(p, "dims"),
            param_bool(p, "unbiased"),
            param_bool(p, "keepdim"),
        ),
        "norm" => {
            let order = if p["p"] == "inf" {
                f64::INFINITY
            } else {
                param_f64(p, "p")
            };
            x[0].norm(order, &param_dims(p, "dims"), param_bool(p, "keepdim"))
        }
        "cumsum" => x[0].cumsum(param_isize(p, "dim")),
        // sorting and scans (golden/sort_scan_ops.json)
        "sort_values" => Ok(x[0]
            .sort(param_isize(p, "dim"), param_bool(p, "descending"))?
            .0),
        "sort_indices" => Ok(x[0]
            .sort(param_isize(p, "dim"), param_bool(p, "descending"))?
            .1),
        "argsort" => x[0].argsort(param_isize(p, "dim"), param_bool(p, "descending")),
        "topk_values" => Ok(x[0]
            .topk(
                param_usize(p, "k"),
                param_isize(p, "dim"),
                param_bool(p, "largest"),
                true,
            )?
            .0),
        "topk_indices" => Ok(x[0]
            .topk(
                param_usize(p, "k"),
                param_isize(p, "dim"),
                param_bool(p, "largest"),
                true,
            )?
            .1),
        "prod" => x[0].prod(&param_dims(p, "dims"), param_bool(p, "keepdim")),
        "cumprod" => x[0].cumprod(param_isize(p, "dim")),
        other => panic!("golden file names an op this test does not know: {other}"),
    }
}

/// Compare values; on mismatch describe the worst element.
fn compare(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) -> CaseResult {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    let mut bad = 0usize;
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let error = (g - w).abs();
        let allowed = atol + rtol * w.abs();
        if error.is_nan() || error > allowed {
            bad += 1;
            let excess = if error.is_nan() {
                f64::INFINITY
            } else {
                error / allowed
            };
            if worst.is_none_or(|(_, e)| excess > e) {
                worst = Some((i, excess));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, _)) => Err(format!(
            "{what}: {bad}/{} elements out of tolerance; worst at flat index {i}: got {}, want {} (|diff| {:.3e})",
            want.len(),
            got[i],
            want[i],
            (got[i] - want[i]).abs()
        )),
    }
}

fn check_tensor(
    what: &str,
    tensor: &Tensor,
    record: &Value,
    dtype: DType,
    rtol: f64,
    atol: f64,
) -> CaseResult {
    let want_shape = shape_of(record);
    if tensor.shape() != want_shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, expected {:?}",
            tensor.shape(),
            want_shape
        ));
    }
    if tensor.dtype() != dtype {
        return Err(format!(
            "{what}: dtype {:?}, expected {:?}",
            tensor.dtype(),
            dtype
        ));
    }
    let got = tensor
        .to_vec_f64()
        .map_err(|e| format!("{what}: readback failed: {e}"))?;
    let (rtol, atol) = if dtype.is_float() {
        (rtol, atol)
    } else {
        (0.0, 0.0)
    };
    compare(what, &got, &data_of(record), rtol, atol)
}

/// Run one case: forward, compare, backward, compare gradients.
fn run_case(case: &Value, device: &Device) -> CaseResult {
    let op = case["op"].as_str().expect("case has an op");
    let inputs: Vec<Tensor> = case["inputs"]
        .as_array()
        .expect("case has inputs")
        .iter()
        .map(|record| tensor_from(record, device))
        .collect::<anygrad_core::Result<_>>()
        .map_err(|e| format!("building inputs failed: {e}"))?;

    let output = apply(op, &case["params"], &inputs)
        .map_err(|e| format!("forward returned an error: {e}"))?;
    let expected = &case["output"];
    check_tensor(
        "output",
        &output,
        expected,
        dtype_of(expected),
        OUTPUT_RTOL,
        OUTPUT_ATOL,
    )?;

    let upstream = &case["upstream"];
    if upstream.is_null() {
        return Ok(());
    }
    let upstream_values: Vec<f32> = data_of(upstream).iter().map(|&v| v as f32).collect();
    let weight = Tensor::from_vec(upstream_values, &shape_of(upstream), device)
        .map_err(|e| format!("building upstream failed: {e}"))?;
    let loss = output
        .mul(&weight)
        .and_then(|t| t.sum_all())
        .map_err(|e| format!("(output * upstream).sum_all() failed: {e}"))?;
    loss.backward()
        .map_err(|e| format!("backward returned an error: {e}"))?;

    let mut failures = Vec::new();
    for (index, (input, grad_record)) in inputs
        .iter()
        .zip(case["grads"].as_array().expect("case has grads"))
        .enumerate()
    {
        if grad_record.is_null() {
            continue;
        }
        let what = format!("grad of input {index}");
        let result = match input.grad() {
            Some(grad) => check_tensor(&what, &grad, grad_record, DType::F32, GRAD_RTOL, GRAD_ATOL),
            // No gradient at all is right only when the expected one is all zeros.
            None if data_of(grad_record).iter().all(|&v| v == 0.0) => Ok(()),
            None => Err(format!("{what}: no gradient was recorded")),
        };
        if let Err(message) = result {
            failures.push(message);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// The cases of the golden file `file` whose name contains `filter` (all of them for an empty
/// filter). Selecting nothing is an error: a run of no case would pass without checking
/// anything, whether the filter is mistyped or the file has lost its cases.
fn selected_cases<'a>(
    cases: &'a [Value],
    filter: &str,
    file: &str,
) -> Result<Vec<&'a Value>, String> {
    let selected: Vec<&Value> = cases
        .iter()
        .filter(|case| {
            case["name"]
                .as_str()
                .expect("case has a name")
                .contains(filter)
        })
        .collect();
    if !selected.is_empty() {
        Ok(selected)
    } else if filter.is_empty() {
        Err(format!("golden file {file} has no cases"))
    } else {
        Err(format!(
            "ANYGRAD_GOLDEN_FILTER=`{filter}` matches none of the {} cases of {file}: a run of no \
             case checks nothing (name this file's test too, e.g. `cargo test -p anygrad-core \
             --test golden_ops golden_ops_cpu`)",
            cases.len()
        ))
    }
}

/// Every golden case of the JSON `golden` (the file `file`) on `device`; fails listing every
/// failing case, and when `ANYGRAD_GOLDEN_FILTER` selects none.
fn run_all(golden: &str, file: &str, device: &Device) {
    let document: Value = serde_json::from_str(golden).expect("golden file parses");
    let cases = document["cases"]
        .as_array()
        .expect("golden file has a cases list");
    let filter = std::env::var("ANYGRAD_GOLDEN_FILTER").unwrap_or_default();
    let selected = selected_cases(cases, &filter, file).unwrap_or_else(|error| panic!("{error}"));
    let mut ran = 0usize;
    let mut failures = Vec::new();
    for case in selected {
        let name = case["name"].as_str().expect("case has a name");
        ran += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| run_case(case, device)));
        let outcome = match outcome {
            Ok(result) => result,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-string panic".into());
                Err(format!("PANICKED: {message}"))
            }
        };
        if let Err(message) = outcome {
            failures.push(format!(
                "{name} [{}]: {message}",
                case["op"].as_str().unwrap_or("?")
            ));
        }
    }
    println!(
        "golden ops on {}: {} cases, {} failed",
        device.description(),
        ran,
        failures.len()
    );
    if !failures.is_empty() {
        panic!(
            "{} of {ran} golden cases failed on {}:\n  {}",
            failures.len(),
            device.description(),
            failures.join("\n  ")
        );
    }
}

/// The checker itself must notice a wrong output and a wrong gradient (guards against a
/// comparison that silently passes everything).
#[test]
fn golden_checker_detects_mismatches() {
    let document: Value = serde_json::from_str(GOLDEN).expect("golden/core_ops.json parses");
    let case = document["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == "mul_bcast_3x1_4")
        .expect("case mul_bcast_3x1_4 exists")
        .clone();
    let device = Device::cpu();
    assert_eq!(run_case(&case, &device), Ok(()));

    let mut wrong_output = case.clone();
    let value = wrong_output["output"]["data"][5].as_f64().unwrap();
    wrong_output["output"]["data"][5] = Value::from(value * (1.0 + 1e-3) + 1e-3);
    assert!(
        run_case(&wrong_output, &device).is_err(),
        "a wrong output went unnoticed"
    );

    let mut wrong_grad = case.clone();
    let value = wrong_grad["grads"][1]["data"][2].as_f64().unwrap();
    wrong_grad["grads"][1]["data"][2] = Value::from(value + 1e-2);
    assert!(
        run_case(&wrong_grad, &device).is_err(),
        "a wrong gradient went unnoticed"
    );

    let mut wrong_shape = case;
    wrong_shape["output"]["shape"] = serde_json::json!([4, 3]);
    assert!(
        run_case(&wrong_shape, &device).is_err(),
        "a wrong shape went unnoticed"
    );
}

/// The filter selects by name, and a filter that selects nothing fails instead of passing a
/// run of no case.
#[test]
fn golden_filter_selecting_nothing_fails() {
    let document: Value = serde_json::from_str(GOLDEN).expect("golden/core_ops.json parses");
    let cases = document["cases"].as_array().expect("cases");
    let all = selected_cases(cases, "", "core_ops.json").expect("no filter selects every case");
    assert_eq!(all.len(), cases.len());
    let some = selected_cases(cases, "mul_bcast", "core_ops.json").expect("mul_bcast cases");
    assert!(!some.is_empty() && some.len() < cases.len());
    assert!(some
        .iter()
        .all(|case| case["name"].as_str().unwrap().contains("mul_bcast")));
    let error = selected_cases(cases, "no_such_case", "core_ops.json")
        .expect_err("a filter matching no case must fail");
    assert!(
        error.contains("no_such_case") && error.contains("core_ops.json"),
        "{error}"
    );
    let error = selected_cases(&[], "", "empty.json").expect_err("a file without cases must fail");
    assert!(error.contains("empty.json"), "{error}");
}

#[test]
fn golden_ops_cpu() {
    run_all(GOLDEN, "core_ops.json", &Device::cpu());
}

#[test]
fn golden_composite_ops_cpu() {
    run_all(GOLDEN_COMPOSITE, "composite_ops.json", &Device::cpu());
}

#[test]
fn golden_composite_ops_gpu() {
    if let Some(device) = anygrad_testing::gpu_or_skip("golden_composite_ops_gpu") {
        run_all(GOLDEN_COMPOSITE, "composite_ops.json", &device);
    }
}

#[test]
fn golden_sort_scan_ops_cpu() {
    run_all(GOLDEN_SORT_SCAN, "sort_scan_ops.json", &Device::cpu());
}

#[test]
fn golden_sort_scan_ops_gpu() {
    if let Some(device) = anygrad_testing::gpu_or_skip("golden_sort_scan_ops_gpu") {
        run_all(GOLDEN_SORT_SCAN, "sort_scan_ops.json", &device);
    }
}

#[test]
fn golden_ops_gpu() {
    if let Some(device) = anygrad_testing::gpu_or_skip("golden_ops_gpu") {
        run_all(GOLDEN, "core_ops.json", &device);
    }
}
