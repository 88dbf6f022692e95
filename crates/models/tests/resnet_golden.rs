//! ResNet golden tests: anygrad's eval-mode ResNet-18 and ResNet-50 forwards equal
//! torchvision's on the same weights and inputs, on the CPU and on the GPU.
//!
//! No weight file is committed: every state-dict entry (parameters and buffers) is filled by
//! a deterministic formula that `scripts/golden/generate_resnet.py` computes identically (in
//! float64, rounded once to float32; see [`formula_values`]), and the expected logits of a
//! `[2, 3, 64, 64]` formula batch come from `tests/golden/resnet18.json` and
//! `tests/golden/resnet50.json`. A missing golden file fails its tests, naming the command
//! that makes it.
//!
//! Criterion: `max_i |y_i - expected_i| <= 1e-4 * max_i |expected_i|` over all 2×1000 logits
//! (relative to the largest logit). On failure the per-stage statistics (stem, maxpool,
//! layer1..4, features) are compared with torchvision's to show where the outputs diverge.
//!
//! Run: `cargo test -p anygrad-models --test resnet_golden` (the GPU variants print `SKIP`
//! without an adapter unless `ANYGRAD_REQUIRE_GPU=1`). Regenerate a golden file with
//! `/tmp/torchenv/bin/python scripts/golden/generate_resnet.py resnet18` (or `resnet50`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anygrad_core::files::read_regular_text;
use anygrad_core::{DType, Device, Tensor};
use anygrad_models::ResNet;
use anygrad_nn::{load_state_into, MaxPool2d, Module};

/// Formula parameters; must equal the script's (checked against the JSON).
const WEIGHT_FREQ: f64 = 0.37;
const NAME_PHASE: f64 = 0.11;
const HASH_SCALE: f64 = 43758.5453;
const INPUT_SHAPE: [usize; 4] = [2, 3, 64, 64];
/// Allowed max |error| relative to max |expected|.
const RELATIVE_TOLERANCE: f64 = 1e-4;
/// Larger than any golden file here (ResNet-18's is 33 kB).
const GOLDEN_MAX_BYTES: u64 = 4 << 20;

/// `(sum of the name's bytes) mod 1000`.
fn name_hash(name: &str) -> u32 {
    name.bytes().map(u32::from).sum::<u32>() % 1000
}

/// The values of state-dict entry `name` with `shape` (see `generate_resnet.py`): with
/// `t = 43758.5453 * sin(0.37 i + 0.11 h)` and `s = 2 (t - floor t) - 1`, rank ≥ 2 weights are
/// `s * sqrt(3 / fan_in)`, BN weights `1 + 0.1 s`, `fc.bias` `0.01 s`, BN biases `0.1 s`,
/// running means `0.05 s`, running variances `1 + 0.2 |s|`. Same float64 operations in the
/// same order as the Python, so the f32 results are bitwise identical.
fn formula_values(name: &str, shape: &[usize]) -> Vec<f32> {
    let n: usize = shape.iter().product();
    let phase = NAME_PHASE * f64::from(name_hash(name));
    let fan_in = if shape.len() >= 2 { n / shape[0] } else { 1 };
    let scale = (3.0 / fan_in as f64).sqrt();
    (0..n)
        .map(|i| {
            let t = HASH_SCALE * (WEIGHT_FREQ * i as f64 + phase).sin();
            let s = 2.0 * (t - t.floor()) - 1.0;
            let v = if shape.len() >= 2 {
                s * scale
            } else if name.ends_with("running_mean") {
                0.05 * s
            } else if name.ends_with("running_var") {
                1.0 + 0.2 * s.abs()
            } else if name == "fc.bias" {
                0.01 * s
            } else if name.ends_with("weight") {
                1.0 + 0.1 * s
            } else if name.ends_with("bias") {
                0.1 * s
            } else {
                panic!("no formula for {name}")
            };
            v as f32
        })
        .collect()
}

/// A CPU tensor for entry `name` shaped and typed like `like`.
fn formula_tensor(name: &str, like: &Tensor) -> Tensor {
    if name.ends_with("num_batches_tracked") {
        return Tensor::zeros(like.shape(), like.dtype(), &Device::Cpu).unwrap();
    }
    assert_eq!(like.dtype(), DType::F32, "{name}");
    Tensor::from_vec(
        formula_values(name, like.shape()),
        like.shape(),
        &Device::Cpu,
    )
    .unwrap()
}

/// Every state-dict entry of `model` by the formula.
fn formula_state(model: &dyn Module) -> BTreeMap<String, Tensor> {
    model
        .state_dict()
        .into_iter()
        .map(|(name, t)| {
            let value = formula_tensor(&name, &t);
            (name, value)
        })
        .collect()
}

/// `x[i] = 0.5 sin(0.01 i) + 0.25 cos(0.003 i)` over the flat index of the whole batch.
fn input_batch(device: &Device) -> Tensor {
    let n: usize = INPUT_SHAPE.iter().product();
    let values: Vec<f32> = (0..n)
        .map(|i| {
            let i = i as f64;
            (0.5 * (0.01 * i).sin() + 0.25 * (0.003 * i).cos()) as f32
        })
        .collect();
    Tensor::from_vec(values, &INPUT_SHAPE, device).unwrap()
}

/// A golden file of `scripts/golden/generate_resnet.py`: logits and stage statistics from
/// torchvision.
struct Golden {
    /// The model it is for (`resnet18`, `resnet50`).
    model: &'static str,
    /// The file's JSON text.
    text: String,
}

impl Golden {
    /// `tests/golden/<model>.json`; a missing or unreadable file fails the test with the
    /// command that makes it.
    fn load(model: &'static str) -> Golden {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(format!("{model}.json"));
        match read_regular_text(&path, GOLDEN_MAX_BYTES, "golden file") {
            Ok(text) => Golden { model, text },
            Err(error) => panic!(
                "{model} golden file {} cannot be read ({error}): make it where PyTorch and \
                 torchvision are installed with `python3 scripts/golden/generate_resnet.py \
                 {model}` (from the repository root) and commit it",
                path.display()
            ),
        }
    }

    /// Every number inside the JSON value of `"key":` (nested arrays flattened). The golden
    /// file is flat enough that each key used here occurs once.
    fn numbers(&self, key: &str) -> Vec<f64> {
        let model = self.model;
        let pattern = format!("\"{key}\":");
        let start = self
            .text
            .find(&pattern)
            .unwrap_or_else(|| panic!("{model} golden file has no `{key}`"))
            + pattern.len();
        let rest = &self.text[start..];
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '[' | '{' => depth += 1,
                ']' | '}' if depth == 0 => {
                    end = i;
                    break;
                }
                ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                ',' if depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        rest[..end]
            .split(['[', ']', ',', ' ', '\n'])
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<f64>()
                    .unwrap_or_else(|e| panic!("{model} `{key}`: bad number `{s}`: {e}"))
            })
            .collect()
    }
}

/// `[mean, population std, max |x|]` per image of a `[n, ...]` tensor.
fn stats(t: &Tensor) -> Vec<f64> {
    let values = t.to_vec_f32().unwrap();
    let per = values.len() / t.shape()[0];
    values
        .chunks(per)
        .flat_map(|row| {
            let n = row.len() as f64;
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / n;
            let max = row.iter().map(|&v| f64::from(v).abs()).fold(0.0, f64::max);
            [mean, var.sqrt(), max]
        })
        .collect()
}

/// Per-stage statistics of anygrad's forward next to torchvision's (for failure messages).
fn stage_report(golden: &Golden, model: &ResNet, x: &Tensor) -> String {
    let mut report = String::from("stage      image: [mean, std, max|x|] anygrad | torchvision\n");
    let mut show = |name: &str, t: &Tensor| {
        let ours = stats(t);
        let theirs = golden.numbers(name);
        for (image, (a, b)) in ours.chunks(3).zip(theirs.chunks(3)).enumerate() {
            let worst = a
                .iter()
                .zip(b)
                .map(|(a, b)| (a - b).abs() / b.abs().max(1e-6))
                .fold(0.0, f64::max);
            let flag = if worst > RELATIVE_TOLERANCE {
                "  <-- differs"
            } else {
                ""
            };
            report.push_str(&format!("{name:9} {image}: {a:.6?} | {b:.6?}{flag}\n"));
        }
    };
    let h = model
        .bn1
        .forward(&model.conv1.forward(x).unwrap())
        .unwrap()
        .relu()
        .unwrap();
    show("stem", &h);
    let mut h = MaxPool2d::with(3, 2, 1).forward(&h).unwrap();
    show("maxpool", &h);
    for (name, layer) in [
        ("layer1", &model.layer1),
        ("layer2", &model.layer2),
        ("layer3", &model.layer3),
        ("layer4", &model.layer4),
    ] {
        h = layer.forward(&h).unwrap();
        show(name, &h);
    }
    show("features", &model.features(x).unwrap());
    report
}

/// The formula tensors' `[sum, sum |w|]` equal the script's, so a formula drift (not a
/// forward bug) is reported as such.
fn check_weight_sums(golden: &Golden, state: &BTreeMap<String, Tensor>) {
    for (name, tensor) in state {
        let values = tensor.to_vec_f32().unwrap();
        let sum: f64 = values.iter().map(|&v| f64::from(v)).sum();
        let abs: f64 = values.iter().map(|&v| f64::from(v).abs()).sum();
        let expected = golden.numbers(name);
        assert_eq!(expected.len(), 2, "{name}: golden weight sums");
        let close = |a: f64, e: f64| (a - e).abs() <= 1e-9 * (1.0 + e.abs());
        assert!(
            close(sum, expected[0]) && close(abs, expected[1]),
            "formula tensor `{name}` differs from the script's: [sum, sum |w|] = [{sum}, {abs}], \
             golden {expected:?}"
        );
    }
}

/// The eval-mode forward of the model `name` (built by `build` with 1000 classes, `entries`
/// state-dict entries) on the formula weights and batch equals torchvision's logits in its
/// golden file.
fn matches_torchvision(
    name: &'static str,
    build: fn(usize, &Device) -> anygrad_core::Result<ResNet>,
    entries: usize,
    device: &Device,
) {
    let golden = Golden::load(name);
    assert!(
        golden.text.contains(&format!("\"model\":\"{name}\"")),
        "{name} golden file is for another model"
    );
    assert_eq!(
        golden.numbers("freq"),
        [WEIGHT_FREQ],
        "weight formula drifted"
    );
    assert_eq!(
        golden.numbers("name_phase"),
        [NAME_PHASE],
        "weight formula drifted"
    );
    assert_eq!(
        golden.numbers("hash_scale"),
        [HASH_SCALE],
        "weight formula drifted"
    );
    let shape: Vec<usize> = golden
        .numbers("shape")
        .iter()
        .map(|&v| v as usize)
        .collect();
    assert_eq!(shape, INPUT_SHAPE, "input shape drifted");

    let model = build(1000, device).unwrap();
    let state = formula_state(&model);
    assert_eq!(state.len(), entries);
    check_weight_sums(&golden, &state);
    let report = load_state_into(&model, &state, true, "formula weights").unwrap();
    assert!(report.missing.is_empty() && report.unexpected.is_empty());
    model.eval();
    let _no_grad = anygrad_core::no_grad();

    let x = input_batch(device);
    let y = model.forward(&x).unwrap();
    let output_shape: Vec<usize> = golden
        .numbers("output_shape")
        .iter()
        .map(|&v| v as usize)
        .collect();
    assert_eq!(y.shape(), output_shape.as_slice());
    let actual = y.to_vec_f32().unwrap();
    let expected = golden.numbers("output");
    assert_eq!(actual.len(), expected.len());
    let scale = expected.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let (worst, at) = actual
        .iter()
        .zip(&expected)
        .map(|(&a, &e)| (f64::from(a) - e).abs())
        .enumerate()
        .fold(
            (0.0, 0),
            |best, (i, d)| if d > best.0 { (d, i) } else { best },
        );
    let relative = worst / scale;
    println!(
        "{name} on {device}: max |error| {worst:.3e} at logit {at} = {relative:.3e} of max |y| {scale:.4}"
    );
    assert!(
        relative <= RELATIVE_TOLERANCE,
        "{name} on {device}: max |error| {worst:.3e} at logit {at} (got {}, expected {}) is \
         {relative:.3e} of max |y| {scale:.4} > {RELATIVE_TOLERANCE:e}\n{}",
        actual[at],
        expected[at],
        stage_report(&golden, &model, &x)
    );
}

#[test]
fn resnet18_matches_torchvision_on_cpu() {
    matches_torchvision("resnet18", ResNet::resnet18, 122, &Device::Cpu);
}

#[test]
fn resnet18_matches_torchvision_on_gpu() {
    if let Some(device) = anygrad_testing::gpu_or_skip("resnet18_matches_torchvision_on_gpu") {
        matches_torchvision("resnet18", ResNet::resnet18, 122, &device);
    }
}

#[test]
fn resnet50_matches_torchvision_on_cpu() {
    matches_torchvision("resnet50", ResNet::resnet50, 320, &Device::Cpu);
}

#[test]
fn resnet50_matches_torchvision_on_gpu() {
    if let Some(device) = anygrad_testing::gpu_or_skip("resnet50_matches_torchvision_on_gpu") {
        matches_torchvision("resnet50", ResNet::resnet50, 320, &device);
    }
}

/// A strict load with a missing, an unexpected and a mis-shaped entry fails, names each of
/// them, and changes nothing.
#[test]
fn bad_state_dict_lists_every_problem() {
    let model = ResNet::resnet18(10, &Device::Cpu).unwrap();
    let before = model.conv1.weight.tensor().to_vec_f32().unwrap();
    let mut state = formula_state(&model);
    state.remove("layer2.1.bn1.running_var").unwrap();
    state.insert(
        "layer5.0.conv1.weight".into(),
        Tensor::zeros(&[4, 4, 3, 3], DType::F32, &Device::Cpu).unwrap(),
    );
    state.insert(
        "fc.bias".into(),
        Tensor::zeros(&[1000], DType::F32, &Device::Cpu).unwrap(),
    );
    let error = load_state_into(&model, &state, true, "bad state")
        .expect_err("a bad state dict must not load")
        .to_string();
    for needle in [
        "missing",
        "layer2.1.bn1.running_var",
        "unexpected",
        "layer5.0.conv1.weight",
        "fc.bias",
        "[1000]",
        "[10]",
    ] {
        assert!(error.contains(needle), "`{needle}` not in: {error}");
    }
    assert_eq!(
        model.conv1.weight.tensor().to_vec_f32().unwrap(),
        before,
        "a failed load must change nothing"
    );
    // Non-strict: missing and unexpected are reported, the shape mismatch still fails.
    let error = load_state_into(&model, &state, false, "bad state").unwrap_err();
    assert!(error.to_string().contains("fc.bias"), "{error}");
    state.insert(
        "fc.bias".into(),
        Tensor::zeros(&[10], DType::F32, &Device::Cpu).unwrap(),
    );
    let report = load_state_into(&model, &state, false, "bad state").unwrap();
    assert_eq!(report.missing, ["layer2.1.bn1.running_var"]);
    assert_eq!(report.unexpected, ["layer5.0.conv1.weight"]);
}
