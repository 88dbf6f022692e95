//! Tests of `scaled_dot_product_attention`: the PyTorch golden cases in
//! `tests/golden/attention.json` (written by `scripts/golden/generate_attention.py`: no mask,
//! causal with L == S and L != S, Bool padding mask, additive float mask with a `-inf`, a custom
//! scale, unbatched inputs, a fully masked row) replayed on every device for the output and the
//! gradients of `(out * w).sum()` with respect to query, key and value; an f16 replay; dropout;
//! and the errors for bad operands.

use anygrad_core::{scaled_dot_product_attention, DType, Device, Error, Tensor};
use anygrad_testing::{assert_close, values};
use serde_json::Value;

const GOLDEN: &str = include_str!("golden/attention.json");

fn load(record: &Value, dtype: DType, device: &Device) -> Tensor {
    let shape: Vec<usize> = record["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    if record["dtype"] == "bool" {
        let data: Vec<bool> = record["data"]
            .as_array()
            .expect("data")
            .iter()
            .map(|v| v.as_bool().expect("bool"))
            .collect();
        return Tensor::from_vec(data, &shape, device).expect("bool mask");
    }
    let data: Vec<f32> = record["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|v| v.as_f64().map(|x| x as f32).unwrap_or(f32::NEG_INFINITY))
        .collect();
    Tensor::from_vec(data, &shape, device)
        .and_then(|t| t.to_dtype(dtype))
        .expect("float tensor")
}

fn expected(record: &Value) -> Vec<f32> {
    record["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|v| v.as_f64().expect("number") as f32)
        .collect()
}

/// Replays every golden case in `dtype` with the given tolerance.
fn replay(device: &Device, dtype: DType, tolerance: f32) {
    let golden: Value = serde_json::from_str(GOLDEN).expect("golden JSON");
    for case in golden["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let query = load(&case["query"], dtype, device).requires_grad_(true);
        let key = load(&case["key"], dtype, device).requires_grad_(true);
        let value = load(&case["value"], dtype, device).requires_grad_(true);
        let mask = (!case["mask"].is_null()).then(|| load(&case["mask"], dtype, device));
        let out = scaled_dot_product_attention(
            &query,
            &key,
            &value,
            mask.as_ref(),
            0.0,
            case["is_causal"].as_bool().expect("is_causal"),
            case["scale"].as_f64(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(
            &values(&out),
            &expected(&case["out"]),
            tolerance,
            tolerance,
            &format!("{name} output"),
        );
        let w = load(&case["w"], dtype, device);
        out.mul(&w)
            .and_then(|t| t.sum_all())
            .and_then(|t| t.backward())
            .unwrap_or_else(|e| panic!("{name} backward: {e}"));
        for (operand, tensor) in [("query", &query), ("key", &key), ("value", &value)] {
            let grad = tensor
                .grad()
                .unwrap_or_else(|| panic!("{name}: no {operand} grad"));
            assert_close(
                &values(&grad),
                &expected(&case[format!("grad_{operand}").as_str()]),
                tolerance,
                tolerance,
                &format!("{name} grad of {operand}"),
            );
        }
    }
}

fn golden_f32(device: &Device) {
    replay(device, DType::F32, 1e-4);
}

fn golden_f16(device: &Device) {
    if !anygrad_testing::f16_or_skip(device, "golden_f16") {
        return;
    }
    replay(device, DType::F16, 3e-2);
}

/// With uniform weights (q = 0) and ones as values every output is 1 without dropout; with
/// dropout each output is (kept keys) · 1/S · 1/(1-p): a multiple of 2/S for p = 0.5, and not
/// all of them 1.
fn dropout_scales_kept_weights(device: &Device) {
    let (length, keys) = (64, 8);
    let query = Tensor::zeros(&[length, 4], DType::F32, device).expect("q");
    let key = Tensor::randn(&[keys, 4], DType::F32, device).expect("k");
    let value = Tensor::ones(&[keys, 1], DType::F32, device).expect("v");
    let plain =
        scaled_dot_product_attention(&query, &key, &value, None, 0.0, false, None).expect("plain");
    assert_close(
        &values(&plain),
        &vec![1.0; length],
        1e-6,
        1e-6,
        "no dropout",
    );
    let dropped = scaled_dot_product_attention(&query, &key, &value, None, 0.5, false, None)
        .expect("dropout");
    let got = values(&dropped);
    for &x in &got {
        let steps = x * keys as f32 / 2.0;
        assert!(
            (steps - steps.round()).abs() < 1e-4,
            "{x} is not a multiple of 2/S"
        );
    }
    assert!(
        got.iter().any(|&x| (x - 1.0).abs() > 1e-3),
        "dropout changed nothing"
    );
}

anygrad_testing::device_tests!(golden_f32, golden_f16, dropout_scales_kept_weights);

fn expect_error(result: anygrad_core::Result<Tensor>, needle: &str) {
    match result {
        Ok(t) => panic!(
            "expected an error mentioning {needle:?}, got shape {:?}",
            t.shape()
        ),
        Err(error) => {
            let text = error.to_string();
            assert!(
                text.contains("scaled_dot_product_attention") && text.contains(needle),
                "error {text:?} should name the op and mention {needle:?}"
            );
        }
    }
}

#[test]
fn bad_operands_are_errors() {
    let device = Device::Cpu;
    let randn = |shape: &[usize]| Tensor::randn(shape, DType::F32, &device).expect("randn");
    let (q, k, v) = (randn(&[2, 5, 8]), randn(&[2, 7, 8]), randn(&[2, 7, 3]));
    let sdpa = |q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>, causal: bool| {
        scaled_dot_product_attention(q, k, v, mask, 0.0, causal, None)
    };
    expect_error(sdpa(&q, &randn(&[2, 7, 6]), &v, None, false), "head size");
    expect_error(sdpa(&q, &k, &randn(&[2, 6, 3]), None, false), "same length");
    expect_error(sdpa(&q, &k, &v, Some(&randn(&[4, 7])), false), "broadcast");
    expect_error(sdpa(&q, &k, &v, Some(&randn(&[5, 7])), true), "is_causal");
    let mask_f16 = randn(&[5, 7]).to_dtype(DType::F16).expect("f16");
    expect_error(sdpa(&q, &k, &v, Some(&mask_f16), false), "attention_mask");
    let k_f16 = k.to_dtype(DType::F16).expect("f16");
    assert!(matches!(
        sdpa(&q, &k_f16, &v, None, false),
        Err(Error::DTypeMismatch { .. })
    ));
    expect_error(sdpa(&randn(&[5]), &k, &v, None, false), "at least 2 dims");
    expect_error(
        scaled_dot_product_attention(&q, &k, &v, None, 1.0, false, None),
        "dropout_p",
    );
}

/// Under autocast a float mask of another dtype joins the query's (f16 projections with a mask
/// built in f32 run, as in PyTorch's autocast); outside autocast the dtypes must agree.
#[test]
fn autocast_casts_a_float_mask() {
    let device = Device::Cpu;
    let half = |shape: &[usize]| {
        Tensor::randn(shape, DType::F32, &device)
            .and_then(|t| t.to_dtype(DType::F16))
            .expect("randn")
    };
    let (q, k, v) = (half(&[2, 5, 8]), half(&[2, 7, 8]), half(&[2, 7, 3]));
    let mask = Tensor::randn(&[5, 7], DType::F32, &device).expect("mask");
    let expected = scaled_dot_product_attention(
        &q,
        &k,
        &v,
        Some(&mask.to_dtype(DType::F16).expect("f16")),
        0.0,
        false,
        None,
    )
    .expect("f16 mask");
    let outside = scaled_dot_product_attention(&q, &k, &v, Some(&mask), 0.0, false, None);
    expect_error(outside, "attention_mask");
    let _guard = anygrad_core::autocast(DType::F16, &device).expect("autocast");
    let inside = scaled_dot_product_attention(&q, &k, &v, Some(&mask), 0.0, false, None)
        .expect("autocast casts the mask");
    assert_close(
        &values(&inside),
        &values(&expected),
        1e-3,
        1e-3,
        "autocast mask",
    );
}
