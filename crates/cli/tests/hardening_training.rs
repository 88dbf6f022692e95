//! `anygrad train` runs and checkpoints under hostile use: a data-parallel batch that would
//! give a batch-norm replica one sample, a diverged (NaN) run over a good checkpoint, damaged
//! optimizer state or metadata in a checkpoint, and `--save` / `ANYGRAD_PROFILE` paths that
//! cannot be written each give one `error:` line that says what to do, before training where
//! the problem is knowable then, and a good checkpoint is never replaced by a diverged one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anygrad::nn::{load_tensors, save_tensors};
use anygrad::{Device, Tensor};
use anygrad_testing::temp_dir;

fn run_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anygrad"));
    command.args(args).env("ANYGRAD_DEVICE", "cpu");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run anygrad")
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The command fails with exactly one `error:` line containing every `expected` text.
fn assert_clean_failure_with(args: &[&str], env: &[(&str, &str)], expected: &[&str]) -> String {
    let output = run_with(args, env);
    let stderr = stderr_of(&output);
    assert!(
        output.status.code().is_some_and(|code| code != 0),
        "{args:?} should exit non-zero (not by a signal): {:?} {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    for text in expected {
        assert!(
            errors[0].contains(text),
            "{args:?}: `{text}` not in {stderr}"
        );
    }
    stderr
}

fn assert_clean_failure(args: &[&str], expected: &[&str]) -> String {
    assert_clean_failure_with(args, &[], expected)
}

fn assert_success(args: &[&str]) -> String {
    let output = run_with(args, &[]);
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{args:?}: {stderr}");
    stderr
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Nothing was trained: no epoch line was printed.
fn assert_not_trained(stderr: &str) {
    assert!(
        !stderr.lines().any(|l| l.starts_with("epoch ")),
        "trained before failing: {stderr}"
    );
}

/// A folder of `count` 8×8 RGB images in two classes.
fn rgb_folder(test: &str, count: usize) -> PathBuf {
    let dir = temp_dir(test);
    for index in 0..count {
        let class = ["a", "b"][index % 2];
        std::fs::create_dir_all(dir.join(class)).unwrap();
        let pixels: Vec<u8> = (0..8 * 8 * 3)
            .map(|i| ((i * 7 + index * 13) % 256) as u8)
            .collect();
        anygrad::data::PixelImage::new(8, 8, 3, pixels)
            .unwrap()
            .save_png(dir.join(class).join(format!("{index}.png")))
            .unwrap();
    }
    dir
}

#[test]
fn data_parallel_batch_norm_batches_too_small_are_refused_up_front() {
    let dir = rgb_folder("cli-dp-batch-norm", 12);
    let checkpoint = dir.join("run.safetensors");
    let stderr = assert_clean_failure(
        &[
            "train",
            "--dataset",
            "folder",
            "--data-dir",
            text(&dir),
            "--model",
            "resnet18",
            "--image-size",
            "16",
            "--num-workers",
            "0",
            "--devices",
            "cpu,cpu",
            "--batch-size",
            "3",
            "--epochs",
            "1",
            "--save",
            text(&checkpoint),
        ],
        &[
            "--batch-size 3",
            "--devices",
            "batch norm",
            "--batch-size 4",
        ],
    );
    assert_not_trained(&stderr);
    // The MLP has no batch norm: the same split (2 + 1) trains.
    assert_success(&[
        "train",
        "--devices",
        "cpu,cpu",
        "--batch-size",
        "3",
        "--epochs",
        "1",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_diverged_run_keeps_the_last_good_checkpoint() {
    let dir = temp_dir("cli-diverged");
    let checkpoint = dir.join("run.safetensors");
    let save = text(&checkpoint);
    let sgd = ["--optimizer", "sgd"];
    assert_success(
        &[
            &["train", "--epochs", "1", "--lr", "0.01", "--save", save][..],
            &sgd,
        ]
        .concat(),
    );
    let good = std::fs::read(&checkpoint).unwrap();
    // An absurd rate given on resume applies, and epoch 2 goes NaN.
    let diverging = [
        &[
            "train", "--epochs", "3", "--lr", "1000", "--resume", save, "--save", save,
        ][..],
        &sgd,
    ]
    .concat();
    let stderr = assert_clean_failure(
        &diverging,
        &[
            "non-finite",
            "epoch 2",
            save,
            "not overwritten",
            "--resume",
            "--lr",
        ],
    );
    assert!(stderr.contains("note: resuming with --lr 1000"), "{stderr}");
    assert_eq!(
        std::fs::read(&checkpoint).unwrap(),
        good,
        "the good checkpoint was replaced by a diverged one"
    );
    // A diverged data-parallel run stops the same way.
    let parallel = [&diverging[..], &["--devices", "cpu,cpu"]].concat();
    assert_clean_failure(&parallel, &["non-finite", save]);
    assert_eq!(std::fs::read(&checkpoint).unwrap(), good);
    // Following the advice works.
    let stderr = assert_success(
        &[
            &[
                "train", "--epochs", "2", "--lr", "0.001", "--resume", save, "--save", save,
            ][..],
            &sgd,
        ]
        .concat(),
    );
    assert!(stderr.contains("epoch   2/2"), "{stderr}");
    // A run that diverges from its first epoch writes nothing.
    let fresh = dir.join("fresh.safetensors");
    assert_clean_failure(
        &[
            &[
                "train",
                "--epochs",
                "2",
                "--lr",
                "1000",
                "--save",
                text(&fresh),
            ][..],
            &sgd,
        ]
        .concat(),
        &["non-finite", "epoch 1", "--lr"],
    );
    assert!(!fresh.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Copy `source` to `target` after `edit` of its tensors and metadata.
fn rewritten(
    source: &Path,
    target: &Path,
    edit: impl FnOnce(&mut BTreeMap<String, Tensor>, &mut BTreeMap<String, String>),
) {
    let (mut tensors, mut metadata) = load_tensors(source, &Device::Cpu).unwrap();
    edit(&mut tensors, &mut metadata);
    let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
    save_tensors(&tensors, &metadata, target).unwrap();
}

/// `tensor` with its first value replaced by `value`.
fn with_first(tensor: &Tensor, value: f32) -> Tensor {
    let mut values = tensor.to_vec::<f32>().unwrap();
    values[0] = value;
    Tensor::from_vec(values, tensor.shape(), &Device::Cpu).unwrap()
}

#[test]
fn damaged_checkpoints_are_refused_with_the_entry_named() {
    let dir = temp_dir("cli-damaged-checkpoints");
    let good = dir.join("good.safetensors");
    assert_success(&["train", "--epochs", "1", "--save", text(&good)]);
    let bad = dir.join("bad.safetensors");
    let resume = |expected: &[&str]| {
        let stderr = assert_clean_failure(
            &["train", "--epochs", "2", "--resume", text(&bad)],
            expected,
        );
        assert_not_trained(&stderr);
    };
    // Adam's second moment must be >= 0, its first moment finite.
    rewritten(&good, &bad, |tensors, _| {
        let key = "optimizer.state.0.weight.exp_avg_sq";
        let negative = with_first(&tensors[key], -1.0);
        tensors.insert(key.into(), negative);
    });
    resume(&["state.0.weight.exp_avg_sq", "parameter `0.weight`", ">= 0"]);
    rewritten(&good, &bad, |tensors, _| {
        let key = "optimizer.state.2.bias.exp_avg";
        let nan = with_first(&tensors[key], f32::NAN);
        tensors.insert(key.into(), nan);
    });
    resume(&["state.2.bias.exp_avg", "parameter `2.bias`", "finite"]);
    // Unknown optimizer scalars are refused, named, like unknown tensors.
    rewritten(&good, &bad, |_, metadata| {
        metadata.insert("anygrad.optimizer.scalar.bogus".into(), "1.0".into());
    });
    resume(&["`bogus`", "unexpected"]);
    // Malformed epochs are malformed, not missing.
    for value in ["-1", "two"] {
        rewritten(&good, &bad, |_, metadata| {
            metadata.insert("epoch".into(), value.into());
        });
        let stderr = assert_clean_failure(
            &["train", "--epochs", "2", "--resume", text(&bad)],
            &["malformed", &format!("`{value}`")],
        );
        assert!(!stderr.contains("no `epoch`"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn save_and_profile_paths_are_checked_before_training() {
    let dir = temp_dir("cli-late-errors");
    let new_directory = format!("{}/newdir/", dir.display());
    for devices in [&[][..], &["--devices", "cpu,cpu"][..]] {
        let args = [
            &["train", "--epochs", "1", "--save", &new_directory][..],
            devices,
        ]
        .concat();
        let stderr = assert_clean_failure(&args, &["--save", "newdir/", "directory"]);
        assert_not_trained(&stderr);
        let unwritable = format!("{}/missing/trace.json", dir.display());
        for trace in [unwritable.as_str(), new_directory.as_str()] {
            let args = [&["train", "--epochs", "1"][..], devices].concat();
            let stderr = assert_clean_failure_with(
                &args,
                &[("ANYGRAD_PROFILE", trace)],
                &["ANYGRAD_PROFILE", trace],
            );
            assert_not_trained(&stderr);
        }
    }
    assert!(!dir.join("newdir").exists());
    // A writable trace path still profiles the run (and the probe file is gone).
    let trace = dir.join("trace.json");
    let output = run_with(
        &["train", "--epochs", "1"],
        &[("ANYGRAD_PROFILE", text(&trace))],
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(trace.is_file());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("probe"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
