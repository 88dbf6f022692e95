//! The `anygrad` command as a user runs it: bad input gives one `error:` line and a non-zero
//! exit, never a panic trace; `devices` and `train --json` produce what they promise.

use std::process::Command;

fn anygrad(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .env("ANYGRAD_DEVICE", "cpu")
        .output()
        .expect("run anygrad");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_clean_failure(args: &[&str], expected: &str) {
    let (ok, _, stderr) = anygrad(args);
    assert!(!ok, "{args:?} should fail");
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(error_lines.len(), 1, "{args:?}: {stderr}");
    assert!(error_lines[0].contains(expected), "{args:?}: {stderr}");
}

#[test]
fn bad_input_is_one_line_and_nonzero() {
    assert_clean_failure(
        &[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            "/nonexistent/dir",
        ],
        "/nonexistent/dir",
    );
    assert_clean_failure(&["train", "--dataset", "mnist"], "--data-dir");
    assert_clean_failure(&["train", "--device", "tpu:7"], "unknown device");
    assert_clean_failure(&["train", "--epochs", "0"], "epochs");
    let dir = std::env::temp_dir().join(format!("anygrad-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corrupt = dir.join("bad.safetensors");
    std::fs::write(&corrupt, [0u8; 5]).unwrap();
    assert_clean_failure(
        &["train", "--resume", corrupt.to_str().unwrap()],
        "bad.safetensors",
    );
    std::fs::write(dir.join("train-images-idx3-ubyte"), [0u8; 40]).unwrap();
    std::fs::write(dir.join("train-labels-idx1-ubyte"), [0u8; 40]).unwrap();
    assert_clean_failure(
        &[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            dir.to_str().unwrap(),
        ],
        "train-",
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn image_folder_errors_are_one_line() {
    assert_clean_failure(
        &["train", "--dataset", "folder", "--model", "cnn"],
        "--data-dir",
    );
    let dir = std::env::temp_dir().join(format!("anygrad-cli-folder-{}", std::process::id()));
    for class in ["a", "b"] {
        std::fs::create_dir_all(dir.join(class)).unwrap();
        for index in 0..4 {
            let image = anygrad::data::PixelImage::new(8, 8, 1, vec![index * 40; 64]).unwrap();
            image
                .save_png(dir.join(class).join(format!("{index}.png")))
                .unwrap();
        }
    }
    let folder = dir.to_str().unwrap();
    assert_clean_failure(
        &["train", "--dataset", "folder", "--data-dir", folder],
        "--model cnn",
    );
    std::fs::write(dir.join("b/broken.png"), b"\x89PNG not really").unwrap();
    assert_clean_failure(
        &[
            "train",
            "--dataset",
            "folder",
            "--data-dir",
            folder,
            "--model",
            "cnn",
            "--epochs",
            "1",
        ],
        "broken.png",
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn train_json_summary() {
    let (ok, stdout, stderr) = anygrad(&["train", "--epochs", "2", "--json"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("device: cpu"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(summary["epochs"].as_array().unwrap().len(), 2);
    assert!(summary["final_test_accuracy"].as_f64().unwrap() > 0.8);
}

#[test]
fn bench_reports_a_batch_it_cannot_hold_as_a_result() {
    // A batch no GPU can hold (a 60 GB input): the case is reported, the run does not fail.
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args([
            "bench",
            "resnet18",
            "--device",
            "gpu",
            "--batch",
            "100000",
            "--no-cpu-baseline",
            "--json",
        ])
        .output()
        .expect("run anygrad");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("no GPU adapter") {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Gpu,
            "bench_reports_a_batch_it_cannot_hold_as_a_result",
            &format!("no GPU adapter: {stderr}"),
        );
        return;
    }
    assert!(output.status.success(), "{stderr}");
    let line: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim())
            .expect("one JSON result");
    assert_eq!(line["size"], "100000");
    // 100,000 images need 60 GB for the input alone: tensors above one buffer are stored in
    // pieces, so what stops this batch is memory, reported as such with the failed request.
    let note = line["note"].as_str().unwrap();
    assert!(note.starts_with("OOM at batch 100000 (a "), "{line}");
}

#[test]
fn doctor_passes_and_names_the_f16_matmul_path() {
    let (ok, stdout, stderr) = anygrad(&["doctor", "--json"]);
    let checks: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON check per line"))
        .collect();
    let no_adapter = checks
        .iter()
        .any(|c| c["name"] == "gpu adapters" && c["passed"] == false);
    if no_adapter {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Gpu,
            "doctor_passes_and_names_the_f16_matmul_path",
            &format!("no GPU adapter: {stdout}"),
        );
        return;
    }
    let failed: Vec<&serde_json::Value> = checks.iter().filter(|c| c["passed"] == false).collect();
    assert!(ok && failed.is_empty(), "{failed:?}\n{stderr}");
    // Which adapters compute in f16, as `anygrad devices` reports them.
    let (ok, devices, stderr) = anygrad(&["devices", "--json"]);
    assert!(ok, "{stderr}");
    let f16_adapters: Vec<u64> = devices
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("one JSON adapter"))
        .filter(|adapter| adapter["shader_f16"] == true)
        .map(|adapter| adapter["index"].as_u64().expect("adapter index"))
        .collect();
    // Every f16-capable adapter runs the three f16 matmuls, the f16 convolution and the two
    // f16 attentions, and each reports which kernel it took (the tensor-core kernel on an
    // adapter with cooperative matrices, the regular one elsewhere); an adapter without f16
    // runs none of them. No such check where f16 is offered is a failure, not a pass.
    let tensor_core_checks = |index: u64| -> Vec<&serde_json::Value> {
        checks
            .iter()
            .filter(|c| c["adapter"].as_u64() == Some(index))
            .filter(|c| {
                c["name"]
                    .as_str()
                    .is_some_and(|name| name.contains("(tensor cores where available)"))
            })
            .collect()
    };
    let adapters: Vec<u64> = checks
        .iter()
        .filter_map(|c| c["adapter"].as_u64())
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .collect();
    assert!(!adapters.is_empty(), "no adapter was checked: {stdout}");
    for index in adapters {
        let found = tensor_core_checks(index);
        if !f16_adapters.contains(&index) {
            assert!(found.is_empty(), "gpu:{index} has no f16, yet: {found:?}");
            continue;
        }
        let matmuls = found
            .iter()
            .filter(|c| c["name"].as_str().unwrap().starts_with("matmul f16"))
            .count();
        assert_eq!(matmuls, 3, "gpu:{index}: f16 matmul checks in {found:?}");
        assert_eq!(found.len(), 6, "gpu:{index}: f16 checks {found:?}");
        for check in &found {
            assert!(
                check["detail"].as_str().unwrap().contains("kernel"),
                "{check}"
            );
        }
        println!("gpu:{index}: {} f16 checks", found.len());
    }
    if f16_adapters.is_empty() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::F16,
            "doctor_passes_and_names_the_f16_matmul_path (f16)",
            "no adapter computes in f16",
        );
    }
}

/// The JSON records of a successful `anygrad bench ... --json` run.
fn bench_records(args: &[&str]) -> Vec<serde_json::Value> {
    let (ok, stdout, stderr) = anygrad(args);
    assert!(ok, "{args:?}: {stderr}");
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON result per line"))
        .collect()
}

#[test]
fn bench_minilm_reports_sequences_per_second() {
    // The tiny sentence-transformers directory of the model tests stands in for MiniLM.
    let tiny = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../models/tests/golden/tiny-bert"
    );
    let shape = [
        "--device",
        "cpu",
        "--batch",
        "2",
        "--sequence-length",
        "8",
        "--seconds",
        "0.01",
        "--json",
    ];
    let inference = bench_records(&[&["bench", "minilm", "--model", tiny], &shape[..]].concat());
    assert_eq!(inference.len(), 1, "{inference:?}");
    let record = &inference[0];
    assert_eq!(record["bench"], "minilm");
    assert_eq!(record["dtype"], "float32");
    assert_eq!(record["size"], "B2xT8");
    assert_eq!(record["unit"], "sequences/s");
    assert!(record["value"].as_f64().unwrap() > 0.0, "{record}");
    assert!(record["iterations"].as_u64().unwrap() >= 3, "{record}");
    let note = record["note"].as_str().unwrap();
    assert!(
        note.contains("tokens/s") && note.contains("L2 normalization"),
        "{note}"
    );

    let training =
        bench_records(&[&["bench", "minilm-train", "--model", tiny], &shape[..]].concat());
    let sizes: Vec<&str> = training
        .iter()
        .map(|r| r["size"].as_str().unwrap())
        .collect();
    assert_eq!(sizes, ["B2xT8", "B2xT8-checkpoint"], "{training:?}");
    for record in &training {
        assert_eq!(record["bench"], "minilm-train");
        assert!(record["value"].as_f64().unwrap() > 0.0, "{record}");
    }
    assert!(training[1]["note"]
        .as_str()
        .unwrap()
        .contains("encoder layers checkpointed"));

    // Without --model: the all-MiniLM-L6-v2 architecture with random weights.
    let random = bench_records(&[
        "bench",
        "minilm",
        "--device",
        "cpu",
        "--batch",
        "1",
        "--sequence-length",
        "4",
        "--seconds",
        "0.01",
        "--json",
    ]);
    assert!(random[0]["note"]
        .as_str()
        .unwrap()
        .contains("all-MiniLM-L6-v2 config, random weights"));
    assert_clean_failure(
        &[
            "bench",
            "minilm",
            "--device",
            "cpu",
            "--model",
            tiny,
            "--sequence-length",
            "17",
        ],
        "max_position_embeddings",
    );
    assert_clean_failure(
        &["bench", "minilm", "--sequence-length", "0"],
        "--sequence-length",
    );
}

/// `profile attention` runs forward and backward of the shape it is given, head size
/// included: the CPU's composite multiplies `[B·H, T, d]` by its transpose.
#[test]
fn profile_attention_takes_the_head_size() {
    let (ok, stdout, stderr) = anygrad(&[
        "profile",
        "attention",
        "--device",
        "cpu",
        "--batch",
        "1",
        "--heads",
        "2",
        "--tokens",
        "16",
        "--head-dim",
        "24",
        "--steps",
        "1",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("[2, 16, 24] [2, 24, 16]"), "{stdout}");
}
