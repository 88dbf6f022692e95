//! RoPE scaling: the inverse frequencies of every `rope_scaling` type against the published
//! formulas (computed here in f64, and fixed numbers from `scripts/llm/rope_scaling_reference.py`),
//! YaRN's attention factor on cos and sin, partial rotation, and the scaling read from
//! `config.json` snippets and GGUF metadata, with errors for unknown types and bad factors.

mod gguf_support;

use std::sync::atomic::{AtomicUsize, Ordering};

use anygrad_core::{Device, Tensor};
use anygrad_models::gguf::GgufFile;
use anygrad_models::llama::{apply_rotary, LlamaConfig, RopeScaling, RotaryEmbedding};
use gguf_support::{f32_tensor, random_weights, tiny_config, write_gguf, StoredTensor, Value};

const DIM: usize = 16;
const THETA: f64 = 10000.0;

// From `python3 scripts/llm/rope_scaling_reference.py` (numpy, f64).
const LINEAR_4: [f64; 8] = [
    2.500000000e-01,
    7.905694150e-02,
    2.500000000e-02,
    7.905694150e-03,
    2.500000000e-03,
    7.905694150e-04,
    2.500000000e-04,
    7.905694150e-05,
];
const DYNAMIC_2_32_AT_48: [f64; 8] = [
    1.000000000e+00,
    2.864149710e-01,
    8.203353560e-02,
    2.349563272e-02,
    6.729500963e-03,
    1.927429823e-03,
    5.520447568e-04,
    1.581138830e-04,
];
const LLAMA3_8_1_4_64: [f64; 8] = [
    1.000000000e+00,
    2.443845994e-01,
    1.304225604e-02,
    3.952847075e-03,
    1.250000000e-03,
    3.952847075e-04,
    1.250000000e-04,
    3.952847075e-05,
];
const YARN_4_64: [f64; 8] = [
    1.000000000e+00,
    2.371708245e-01,
    5.000000000e-02,
    7.905694150e-03,
    2.500000000e-03,
    7.905694150e-04,
    2.500000000e-04,
    7.905694150e-05,
];
const YARN_4_64_ATTENTION: f64 = 1.138629436111989;
const YARN_4_64_UNTRUNCATED: [f64; 8] = [
    1.000000000e+00,
    1.985835202e-01,
    2.559524589e-02,
    7.905694150e-03,
    2.500000000e-03,
    7.905694150e-04,
    2.500000000e-04,
    7.905694150e-05,
];
const YARN_4_64_MSCALE_ATTENTION: f64 = 1.0648216253695715;

/// `1 / θ^(2i/d)` in f64.
fn plain(theta: f64) -> Vec<f64> {
    (0..DIM / 2)
        .map(|i| theta.powf(-(2.0 * i as f64) / DIM as f64))
        .collect()
}

/// Llama 3.1's rule, written from the paper's description: wavelengths above
/// `original / low` scaled fully, below `original / high` kept, a linear blend between.
fn llama3_expected(factor: f64, low: f64, high: f64, original: f64) -> Vec<f64> {
    plain(THETA)
        .into_iter()
        .map(|f| {
            let wavelength = 2.0 * std::f64::consts::PI / f;
            if wavelength < original / high {
                f
            } else if wavelength > original / low {
                f / factor
            } else {
                let s = (original / wavelength - low) / (high - low);
                (1.0 - s) * f / factor + s * f
            }
        })
        .collect()
}

/// YaRN's blend: pairs below the correction dim of `beta_fast` keep `f`, above that of
/// `beta_slow` take `f / factor`, linear in between.
fn yarn_expected(factor: f64, original: f64, truncate: bool) -> Vec<f64> {
    let dim = DIM as f64;
    let correction =
        |r: f64| dim * (original / (r * 2.0 * std::f64::consts::PI)).ln() / (2.0 * THETA.ln());
    let (mut low, mut high) = (correction(32.0), correction(1.0));
    if truncate {
        (low, high) = (low.floor(), high.ceil());
    }
    let (low, high) = (low.max(0.0), high.min(dim - 1.0));
    plain(THETA)
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let ramp = ((i as f64 - low) / (high - low)).clamp(0.0, 1.0);
            f / factor * ramp + f * (1.0 - ramp)
        })
        .collect()
}

fn assert_relative(actual: &[f32], expected: &[f64], tolerance: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let error = (a as f64 - e).abs() / e.abs().max(1e-30);
        assert!(
            error <= tolerance,
            "{what}[{i}]: {a} against {e} (relative error {error:e})"
        );
    }
}

fn frequencies(scaling: RopeScaling, length: usize) -> Vec<f32> {
    RotaryEmbedding::new(DIM, THETA, scaling).inverse_frequencies(length)
}

#[test]
fn linear_divides_every_frequency() {
    let actual = frequencies(RopeScaling::Linear { factor: 4.0 }, 10);
    let expected: Vec<f64> = plain(THETA).iter().map(|f| f / 4.0).collect();
    assert_relative(&actual, &expected, 1e-6, "linear");
    assert_relative(&actual, &LINEAR_4, 1e-6, "linear (numpy)");
}

#[test]
fn dynamic_rescales_the_base_only_beyond_the_original_context() {
    let scaling = RopeScaling::Dynamic {
        factor: 2.0,
        original_max_position_embeddings: 32,
    };
    // Up to the original context the frequencies are the plain ones.
    assert_relative(
        &frequencies(scaling.clone(), 32),
        &plain(THETA),
        1e-6,
        "dynamic within the context",
    );
    // At 48 positions: base θ · (2 · 48 / 32 − 1)^(16 / 14) = θ · 2^(8/7).
    let base = THETA * 2f64.powf(16.0 / 14.0);
    let actual = frequencies(scaling, 48);
    assert_relative(&actual, &plain(base), 1e-6, "dynamic at 48");
    assert_relative(&actual, &DYNAMIC_2_32_AT_48, 1e-6, "dynamic at 48 (numpy)");
}

#[test]
fn llama3_keeps_high_frequencies_divides_low_ones_and_blends_between() {
    let scaling = RopeScaling::Llama3 {
        factor: 8.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 64,
    };
    let actual = frequencies(scaling, 10);
    let expected = llama3_expected(8.0, 1.0, 4.0, 64.0);
    assert_relative(&actual, &expected, 1e-6, "llama3");
    assert_relative(&actual, &LLAMA3_8_1_4_64, 1e-6, "llama3 (numpy)");
    // Pair 0 (wavelength 2π) is kept, pairs 3.. (wavelength ≥ 199 > 64) are divided by 8,
    // pairs 1 and 2 lie strictly between.
    let unscaled = plain(THETA);
    assert_eq!(actual[0], 1.0);
    assert_relative(
        &actual[3..],
        &unscaled[3..].iter().map(|f| f / 8.0).collect::<Vec<_>>(),
        1e-6,
        "low",
    );
    for i in 1..3 {
        assert!(
            (actual[i] as f64) < unscaled[i] && (actual[i] as f64) > unscaled[i] / 8.0,
            "pair {i} blended: {}",
            actual[i]
        );
    }
}

#[test]
fn yarn_ramps_between_the_correction_dims_and_scales_cos_and_sin() {
    let yarn = |truncate: bool, attention_factor: f64| RopeScaling::Yarn {
        factor: 4.0,
        original_max_position_embeddings: 64,
        beta_fast: 32.0,
        beta_slow: 1.0,
        attention_factor,
        truncate,
    };
    let actual = frequencies(yarn(true, 1.0), 10);
    assert_relative(&actual, &yarn_expected(4.0, 64.0, true), 1e-6, "yarn");
    assert_relative(&actual, &YARN_4_64, 1e-6, "yarn (numpy)");
    let untruncated = frequencies(yarn(false, 1.0), 10);
    assert_relative(
        &untruncated,
        &yarn_expected(4.0, 64.0, false),
        1e-6,
        "yarn untruncated",
    );
    assert_relative(
        &untruncated,
        &YARN_4_64_UNTRUNCATED,
        1e-6,
        "yarn untruncated (numpy)",
    );

    // cos and sin carry the attention factor: the plain tables of the same frequencies times it.
    let device = Device::Cpu;
    let embedding = RotaryEmbedding::new(DIM, THETA, yarn(true, 1.5));
    let (cos, sin) = embedding.cos_sin(3, 2, &device).expect("tables");
    assert_eq!(cos.shape(), &[2, DIM]);
    let (cos, sin) = (
        cos.to_vec_f32().expect("cos"),
        sin.to_vec_f32().expect("sin"),
    );
    for (row, position) in [3.0f64, 4.0].into_iter().enumerate() {
        for j in 0..DIM {
            let angle = position * actual[j % (DIM / 2)] as f64;
            let (c, s) = (cos[row * DIM + j] as f64, sin[row * DIM + j] as f64);
            assert!((c - 1.5 * angle.cos()).abs() < 1e-5, "cos[{row}, {j}] {c}");
            assert!((s - 1.5 * angle.sin()).abs() < 1e-5, "sin[{row}, {j}] {s}");
        }
    }
}

#[test]
fn frequency_divisors_divide_each_frequency() {
    let divisors: Vec<f32> = (0..DIM / 2).map(|i| 1.0 + i as f32).collect();
    let actual = frequencies(RopeScaling::FrequencyDivisors(divisors.clone()), 10);
    let expected: Vec<f64> = plain(THETA)
        .iter()
        .zip(&divisors)
        .map(|(f, d)| f / *d as f64)
        .collect();
    assert_relative(&actual, &expected, 1e-6, "divisors");
}

#[test]
fn partial_rotation_rotates_the_leading_values_and_passes_the_rest() {
    let device = Device::Cpu;
    let (head_dim, rotary_dim, count) = (6usize, 4usize, 3usize);
    let embedding = RotaryEmbedding::new(rotary_dim, 500.0, RopeScaling::None);
    let (cos, sin) = embedding.cos_sin(0, count, &device).expect("tables");
    let x: Vec<f32> = (0..count * head_dim)
        .map(|i| (i as f32 * 0.61).cos())
        .collect();
    let input = Tensor::from_vec(x.clone(), &[1, count, head_dim], &device).expect("x");
    let rotated = apply_rotary(&input, &cos, &sin)
        .and_then(|t| t.to_vec_f32())
        .expect("rotate");
    for t in 0..count {
        let row = &x[t * head_dim..(t + 1) * head_dim];
        let out = &rotated[t * head_dim..(t + 1) * head_dim];
        for i in 0..rotary_dim / 2 {
            let angle = t as f64 * 500f64.powf(-(2.0 * i as f64) / rotary_dim as f64);
            let (a, b) = (row[i] as f64, row[i + 2] as f64);
            assert!((out[i] as f64 - (a * angle.cos() - b * angle.sin())).abs() < 1e-5);
            assert!((out[i + 2] as f64 - (b * angle.cos() + a * angle.sin())).abs() < 1e-5);
        }
        assert_eq!(
            &out[4..],
            &row[4..],
            "position {t}: the last values pass through"
        );
    }
    // A rotated size above the head size is an error, not a panic.
    let wide = RotaryEmbedding::new(8, 500.0, RopeScaling::None);
    let (cos, sin) = wide.cos_sin(0, count, &device).expect("tables");
    let error = apply_rotary(&input, &cos, &sin).expect_err("too wide");
    assert!(error.to_string().contains("apply_rotary"), "{error}");
}

fn config_json(extra: serde_json::Value) -> Result<LlamaConfig, anygrad_core::Error> {
    let mut json = serde_json::json!({
        "vocab_size": 40, "hidden_size": 32, "intermediate_size": 24,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "max_position_embeddings": 128, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
    });
    for (key, value) in extra.as_object().expect("object") {
        json[key] = value.clone();
    }
    // A directory per call: the tests run in parallel.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = anygrad_testing::temp_dir(&format!("llama_rope_scaling_config_{call}"));
    let path = dir.join("config.json");
    std::fs::write(&path, serde_json::to_vec(&json).expect("json")).expect("write");
    LlamaConfig::from_json_file(&path)
}

#[test]
fn config_json_reads_every_scaling_type() {
    let none = config_json(serde_json::json!({})).expect("plain");
    assert_eq!(
        (none.rope_scaling, none.rotary_dim),
        (RopeScaling::None, 16)
    );
    let default = config_json(serde_json::json!({"rope_scaling": {"rope_type": "default"}}));
    assert_eq!(default.expect("default").rope_scaling, RopeScaling::None);
    let linear =
        config_json(serde_json::json!({"rope_scaling": {"type": "linear", "factor": 2.0}}));
    assert_eq!(
        linear.expect("linear").rope_scaling,
        RopeScaling::Linear { factor: 2.0 }
    );
    let dynamic =
        config_json(serde_json::json!({"rope_scaling": {"type": "dynamic", "factor": 2}}));
    assert_eq!(
        dynamic.expect("dynamic").rope_scaling,
        RopeScaling::Dynamic {
            factor: 2.0,
            original_max_position_embeddings: 128
        }
    );
    // Llama 3.1's block.
    let llama3 = config_json(serde_json::json!({"rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}}))
    .expect("llama3");
    assert_eq!(
        llama3.rope_scaling,
        RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 64
        }
    );
    // YaRN: defaults for the betas; the attention factor from mscale / mscale_all_dim.
    let yarn = config_json(serde_json::json!({"rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
        "mscale": 1.0, "mscale_all_dim": 0.5}}))
    .expect("yarn");
    let RopeScaling::Yarn {
        factor,
        original_max_position_embeddings,
        beta_fast,
        beta_slow,
        attention_factor,
        truncate,
    } = yarn.rope_scaling
    else {
        panic!("not yarn: {:?}", yarn.rope_scaling);
    };
    assert_eq!(
        (
            factor,
            original_max_position_embeddings,
            beta_fast,
            beta_slow,
            truncate
        ),
        (4.0, 32, 32.0, 1.0, true)
    );
    assert!(
        (attention_factor - YARN_4_64_MSCALE_ATTENTION).abs() < 1e-12,
        "{attention_factor}"
    );
    let plain_yarn =
        config_json(serde_json::json!({"rope_scaling": {"type": "yarn", "factor": 4.0}}))
            .expect("yarn");
    assert!((plain_yarn.rope_scaling.attention_factor() - YARN_4_64_ATTENTION).abs() < 1e-12);
    let given = config_json(serde_json::json!({"rope_scaling": {
        "type": "yarn", "factor": 4.0, "attention_factor": 0.8, "beta_fast": 16, "truncate": false}}))
    .expect("yarn");
    assert!(
        matches!(given.rope_scaling, RopeScaling::Yarn { attention_factor, beta_fast, truncate: false, .. } if attention_factor == 0.8 && beta_fast == 16.0)
    );
    // transformers 5's `rope_parameters` carries the base too; a partial rotary factor halves
    // the rotated size.
    let v5 = config_json(serde_json::json!({
        "rope_theta": null,
        "rope_parameters": {"rope_type": "linear", "factor": 3.0, "rope_theta": 1000.0},
        "partial_rotary_factor": 0.5}))
    .expect("rope_parameters");
    assert_eq!(
        (v5.rope_theta, v5.rope_scaling, v5.rotary_dim),
        (1000.0, RopeScaling::Linear { factor: 3.0 }, 8)
    );
}

#[test]
fn config_json_refuses_unknown_types_and_bad_factors() {
    let cases = [
        (
            serde_json::json!({"rope_scaling": {"type": "longrope", "factor": 2.0}}),
            "longrope",
        ),
        (
            serde_json::json!({"rope_scaling": {"type": "linear"}}),
            "needs `factor`",
        ),
        (
            serde_json::json!({"rope_scaling": {"type": "linear", "factor": 0.5}}),
            "factor is 0.5",
        ),
        (
            serde_json::json!({"rope_scaling": {"type": "linear", "factor": "2"}}),
            "not a number",
        ),
        (
            serde_json::json!({"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
            "low_freq_factor": 4.0, "high_freq_factor": 1.0}}),
            "high_freq_factor",
        ),
        (
            serde_json::json!({"rope_scaling": {"type": "yarn", "factor": 2.0, "beta_fast": 1,
            "beta_slow": 4}}),
            "beta_fast",
        ),
        (
            serde_json::json!({"rope_scaling": {"type": "dynamic", "factor": 2.0,
            "original_max_position_embeddings": 0}}),
            "original_max_position_embeddings",
        ),
        (serde_json::json!({"rope_scaling": 3}), "not an object"),
        (
            serde_json::json!({"partial_rotary_factor": 0.2}),
            "rotary_dim 3",
        ),
        (
            serde_json::json!({"partial_rotary_factor": 1.5}),
            "partial_rotary_factor",
        ),
    ];
    for (extra, expected) in cases {
        let error = config_json(extra.clone()).expect_err(&format!("accepted {extra}"));
        let message = error.to_string();
        assert!(message.contains(expected), "{extra}: {message}");
        assert!(
            message.contains("config.json"),
            "{extra}: names the file: {message}"
        );
    }
}

/// Metadata entries of a test GGUF file.
type Metadata = Vec<(&'static str, Value)>;

/// GGUF metadata of a tiny Llama (head size 8) with `extra` keys and `tensors`.
fn gguf_config(
    extra: Vec<(&str, Value)>,
    tensors: &[StoredTensor],
) -> Result<LlamaConfig, anygrad_core::Error> {
    let mut metadata = vec![
        ("general.architecture", Value::Str("llama".into())),
        ("llama.context_length", Value::U32(256)),
        ("llama.embedding_length", Value::U32(16)),
        ("llama.block_count", Value::U32(1)),
        ("llama.feed_forward_length", Value::U32(24)),
        ("llama.attention.head_count", Value::U32(2)),
        ("llama.rope.freq_base", Value::F32(10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(1e-5)),
        ("llama.vocab_size", Value::U32(40)),
    ];
    metadata.extend(extra);
    let file = GgufFile::parse(write_gguf(&metadata, tensors, 32), "scaled.gguf")?;
    LlamaConfig::from_gguf(&file)
}

#[test]
fn gguf_metadata_reads_linear_yarn_and_frequency_divisors() {
    let plain = gguf_config(
        vec![("llama.rope.scaling.type", Value::Str("none".into()))],
        &[],
    )
    .expect("none");
    assert_eq!(
        (plain.rope_scaling, plain.rotary_dim),
        (RopeScaling::None, 8)
    );
    let linear = gguf_config(
        vec![
            ("llama.rope.scaling.type", Value::Str("linear".into())),
            ("llama.rope.scaling.factor", Value::F32(4.0)),
        ],
        &[],
    )
    .expect("linear");
    assert_eq!(linear.rope_scaling, RopeScaling::Linear { factor: 4.0 });
    // YaRN: llama.cpp's attention factor is attn_factor · (0.1 ln factor + 1).
    let yarn = gguf_config(
        vec![
            ("llama.rope.scaling.type", Value::Str("yarn".into())),
            ("llama.rope.scaling.factor", Value::F32(4.0)),
            ("llama.rope.scaling.original_context_length", Value::U32(64)),
            ("llama.rope.scaling.attn_factor", Value::F32(0.5)),
        ],
        &[],
    )
    .expect("yarn");
    let RopeScaling::Yarn {
        factor,
        original_max_position_embeddings,
        attention_factor,
        ..
    } = yarn.rope_scaling
    else {
        panic!("not yarn: {:?}", yarn.rope_scaling);
    };
    assert_eq!((factor, original_max_position_embeddings), (4.0, 64));
    assert!(
        (attention_factor - 0.5 * YARN_4_64_ATTENTION).abs() < 1e-6,
        "{attention_factor}"
    );
    // Llama 3.1 files carry the per-frequency divisors as a tensor.
    let divisors = [1.0f32, 1.5, 4.0, 8.0];
    let with_tensor = gguf_config(vec![], &[f32_tensor("rope_freqs.weight", &[4], &divisors)])
        .expect("rope_freqs");
    assert_eq!(
        with_tensor.rope_scaling,
        RopeScaling::FrequencyDivisors(divisors.to_vec())
    );
}

#[test]
fn gguf_metadata_refuses_unknown_types_and_bad_values() {
    let cases: Vec<(Metadata, Vec<StoredTensor>, &str)> = vec![
        (
            vec![("llama.rope.scaling.type", Value::Str("longrope".into()))],
            vec![],
            "`longrope`",
        ),
        (
            vec![("llama.rope.scaling.type", Value::Str("linear".into()))],
            vec![],
            "llama.rope.scaling.factor",
        ),
        (
            vec![
                ("llama.rope.scaling.type", Value::Str("yarn".into())),
                ("llama.rope.scaling.factor", Value::F32(f32::NAN)),
            ],
            vec![],
            "factor is NaN",
        ),
        (
            vec![],
            vec![f32_tensor("rope_freqs.weight", &[3], &[1.0, 2.0, 3.0])],
            "rope_freqs.weight",
        ),
        (
            vec![],
            vec![f32_tensor("rope_freqs.weight", &[4], &[1.0, 0.0, 3.0, 4.0])],
            "divisor 0",
        ),
        (
            vec![
                ("llama.rope.scaling.type", Value::Str("linear".into())),
                ("llama.rope.scaling.factor", Value::F32(2.0)),
            ],
            vec![f32_tensor("rope_freqs.weight", &[4], &[1.0; 4])],
            "together",
        ),
    ];
    for (extra, tensors, expected) in cases {
        let error = gguf_config(extra, &tensors).expect_err(expected);
        let message = error.to_string();
        assert!(
            message.contains(expected) && message.contains("scaled.gguf"),
            "{expected}: {message}"
        );
    }
}

/// A model whose scaling is a no-op (factor 1, linear) gives the unscaled model's logits, and a
/// real factor changes them: the scaling reaches the attention of every layer.
#[test]
fn the_model_uses_its_scaling() {
    let device = Device::Cpu;
    let config = tiny_config();
    let weights = random_weights(&config, 3);
    let logits = |config: &LlamaConfig| {
        let model = gguf_support::model_from(config, &weights, &device).expect("model");
        let ids = Tensor::from_vec(vec![3i32, 7, 1, 9, 4], &[1, 5], &device).expect("ids");
        let mut cache = model.new_cache();
        model
            .hidden_states(&ids, &mut cache)
            .and_then(|t| t.to_vec_f32())
            .expect("forward")
    };
    let unscaled = logits(&config);
    let identity = logits(&LlamaConfig {
        rope_scaling: RopeScaling::Linear { factor: 1.0 },
        ..config.clone()
    });
    assert_eq!(unscaled, identity);
    let scaled = logits(&LlamaConfig {
        rope_scaling: RopeScaling::Linear { factor: 4.0 },
        ..config.clone()
    });
    assert!(
        unscaled
            .iter()
            .zip(&scaled)
            .any(|(a, b)| (a - b).abs() > 1e-4),
        "scaling had no effect"
    );
}

/// `dynamic` scaling extends the context to `factor` times the original one: within the
/// original context the model is the unscaled one; beyond it, where the unscaled model stops,
/// the scaled one runs with its rescaled base.
#[test]
fn dynamic_scaling_extends_the_context() {
    let device = Device::Cpu;
    let config = tiny_config();
    let dynamic = LlamaConfig {
        rope_scaling: RopeScaling::Dynamic {
            factor: 2.0,
            original_max_position_embeddings: config.max_position_embeddings,
        },
        ..config.clone()
    };
    assert_eq!(
        (config.context_length(), dynamic.context_length()),
        (64, 128)
    );
    let weights = random_weights(&config, 4);
    let hidden = |config: &LlamaConfig, tokens: usize| {
        let model = gguf_support::model_from(config, &weights, &device).expect("model");
        let ids: Vec<i32> = (0..tokens).map(|i| (i * 7 % 40) as i32).collect();
        let ids = Tensor::from_vec(ids, &[1, tokens], &device).expect("ids");
        let mut cache = model.new_cache();
        model
            .hidden_states(&ids, &mut cache)
            .and_then(|t| t.to_vec_f32())
    };
    assert_eq!(
        hidden(&config, 64).expect("plain"),
        hidden(&dynamic, 64).expect("dynamic")
    );
    let error = hidden(&config, 100).expect_err("past the context");
    assert!(error.to_string().contains("context of 64"), "{error}");
    let long = hidden(&dynamic, 100).expect("dynamic past the original context");
    assert!(long.iter().all(|v| v.is_finite()));
    assert!(hidden(&dynamic, 129).is_err());
}
