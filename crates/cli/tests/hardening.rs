//! The command as a hostile but fair user runs it: absurd sizes, empty data, special files
//! and bad paths give one `error:` line that says what to do (never an abort, a hang or a
//! Rust debug dump), and the device choice is explained on the first line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
fn assert_clean_failure(args: &[&str], expected: &[&str]) -> String {
    let output = run_with(args, &[]);
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

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn cpu_out_of_memory_is_an_error_not_an_abort() {
    assert_clean_failure(
        &["bench", "matmul", "--device", "cpu", "--sizes", "200000"],
        &["out of memory"],
    );
}

#[test]
fn bench_refuses_meaningless_numbers() {
    for (args, expected) in [
        (
            &["bench", "resnet18", "--device", "cpu", "--batch", "0"][..],
            "auto",
        ),
        (
            &["bench", "matmul", "--device", "cpu", "--seconds", "NaN"][..],
            "--seconds",
        ),
        (
            &["bench", "matmul", "--device", "cpu", "--seconds", "-1"][..],
            "--seconds",
        ),
        (
            &["bench", "matmul", "--device", "cpu", "--sizes", "0"][..],
            "--sizes",
        ),
    ] {
        assert_clean_failure(args, &[expected]);
    }
}

/// Write a tiny MNIST-shaped directory: `train` and `test` images of 28×28 zeros.
fn mnist_dir(test: &str, train: u32, test_images: u32) -> PathBuf {
    let dir = temp_dir(test);
    let write = |stem: &str, count: u32| {
        let mut images = 0x0803u32.to_be_bytes().to_vec();
        for dim in [count, 28, 28] {
            images.extend_from_slice(&dim.to_be_bytes());
        }
        images.extend((0..count as usize * 784).map(|i| (i % 200) as u8));
        std::fs::write(dir.join(format!("{stem}-images-idx3-ubyte")), images).unwrap();
        let mut labels = 0x0801u32.to_be_bytes().to_vec();
        labels.extend_from_slice(&count.to_be_bytes());
        labels.extend((0..count).map(|i| (i % 10) as u8));
        std::fs::write(dir.join(format!("{stem}-labels-idx1-ubyte")), labels).unwrap();
    };
    write("train", train);
    write("t10k", test_images);
    dir
}

#[test]
fn empty_data_is_an_error_that_says_what_to_do() {
    let dir = mnist_dir("empty", 20, 10);
    let data = ["train", "--dataset", "mnist", "--data-dir", text(&dir)];
    let mut limited = data.to_vec();
    limited.extend(["--limit-train", "0", "--epochs", "1"]);
    assert_clean_failure(&limited, &["training set is empty", "--limit-train"]);
    let no_test = mnist_dir("empty-test", 20, 0);
    assert_clean_failure(
        &[
            "train",
            "--dataset",
            "mnist",
            "--data-dir",
            text(&no_test),
            "--epochs",
            "1",
        ],
        &["test set is empty"],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&no_test);
}

#[test]
fn resuming_past_the_last_epoch_is_an_error() {
    let dir = temp_dir("resume-past");
    let checkpoint = dir.join("run.safetensors");
    let output = run_with(
        &[
            "train",
            "--epochs",
            "2",
            "--lr",
            "0.01",
            "--save",
            text(&checkpoint),
        ],
        &[],
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_clean_failure(
        &["train", "--epochs", "2", "--resume", text(&checkpoint)],
        &["already holds 2 epoch", "--epochs greater than 2"],
    );
    // Resuming with another learning rate says which one is used, in one line.
    let output = run_with(
        &["train", "--epochs", "3", "--resume", text(&checkpoint)],
        &[],
    );
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("learning rate"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].starts_with("note: resuming with the checkpoint's learning rate 0.01"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn make_fifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

#[test]
fn save_refuses_special_files_and_bad_paths_before_training() {
    let dir = temp_dir("save-targets");
    let fifo = dir.join("pipe");
    make_fifo(&fifo);
    let subdirectory = dir.join("a-directory");
    std::fs::create_dir(&subdirectory).unwrap();
    let missing = dir.join("missing").join("run.safetensors");
    let cases: [(&Path, &[&str]); 3] = [
        (&fifo, &["not a regular file"]),
        (&subdirectory, &["not a regular file"]),
        (&missing, &["missing"]),
    ];
    for (target, expected) in cases {
        let stderr = assert_clean_failure(
            &["train", "--epochs", "1", "--save", text(target)],
            expected,
        );
        assert!(
            !stderr.contains("epoch "),
            "trained before failing: {stderr}"
        );
    }
    let meta = std::fs::metadata(&fifo).unwrap();
    assert!(!meta.is_file(), "the FIFO was replaced by a regular file");
    // --plot: a bad place or a name that is not a PNG, found before training.
    let bad_plots = [
        (dir.join("missing").join("c.png"), "missing"),
        (dir.join("chart.txt"), ".png"),
        (subdirectory.clone(), ".png"),
    ];
    for (plot, expected) in bad_plots {
        let stderr = assert_clean_failure(
            &["train", "--epochs", "1", "--plot", text(&plot)],
            &["--plot", expected],
        );
        assert!(
            !stderr.contains("epoch "),
            "trained before failing: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resume_refuses_a_fifo_instead_of_blocking() {
    let dir = temp_dir("resume-fifo");
    let fifo = dir.join("checkpoint.safetensors");
    make_fifo(&fifo);
    let mut child = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(["train", "--epochs", "1", "--resume", text(&fifo)])
        .env("ANYGRAD_DEVICE", "cpu")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            // Unblock and reap the child, then fail.
            let _ = std::fs::write(&fifo, b"");
            let _ = child.wait();
            panic!("anygrad train --resume FIFO blocked");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let output = child.wait_with_output().unwrap();
    let stderr = stderr_of(&output);
    assert!(!status.success());
    assert!(stderr.contains("not a regular file"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn data_options_are_refused_for_digits_and_unreadable_directories_say_why() {
    assert_clean_failure(
        &["train", "--data-dir", "/tmp", "--epochs", "1"],
        &["--data-dir", "digits"],
    );
    assert_clean_failure(
        &["train", "--limit-train", "10", "--epochs", "1"],
        &["--limit-train", "digits"],
    );
    // A data directory that is a file: the real reason, not "no MNIST file".
    let dir = temp_dir("not-a-dir");
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let stderr = assert_clean_failure(
        &["train", "--dataset", "mnist", "--data-dir", text(&file)],
        &["ot a directory"],
    );
    assert!(!stderr.contains("no MNIST file"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_environment_values_are_reported() {
    for (name, value) in [
        ("ANYGRAD_FUSION", "maybe"),
        ("ANYGRAD_FUSED_ATTENTION", "never"),
        ("ANYGRAD_FALLBACK", "sometimes"),
        ("ANYGRAD_COOP_MATMUL", "fast"),
        ("ANYGRAD_LOG", "verbose"),
    ] {
        let output = run_with(
            &["bench", "matmul", "--device", "cpu", "--sizes", "0"],
            &[(name, value)],
        );
        let stderr = stderr_of(&output);
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("warning: {name}={value}")))
            .collect();
        assert_eq!(warnings.len(), 1, "{name}={value}: {stderr}");
    }
    // Known values are accepted silently.
    let output = run_with(
        &["bench", "matmul", "--device", "cpu", "--sizes", "0"],
        &[
            ("ANYGRAD_FUSION", "0"),
            ("ANYGRAD_LOG", "anygrad_core=debug"),
        ],
    );
    assert!(
        !stderr_of(&output).contains("warning:"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn the_first_line_names_the_device_and_why() {
    let devices = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(["devices", "--json"])
        .output()
        .unwrap();
    let adapters: Vec<serde_json::Value> = String::from_utf8_lossy(&devices.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(["train", "--epochs", "1"])
        .env_remove("ANYGRAD_DEVICE")
        .output()
        .unwrap();
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    match adapters.first() {
        None => assert!(first.starts_with("device: cpu (no usable GPU"), "{stderr}"),
        Some(adapter) if adapter["device_type"] == "Cpu" => {
            // Only software rasterizers (llvmpipe, lavapipe): the CPU backend is faster.
            assert!(
                first.starts_with("device: cpu (")
                    && first.contains("software rasterizer")
                    && first.contains("--device gpu:0"),
                "{stderr}"
            );
            // Asked for explicitly, the software adapter is still used (the device line comes
            // before the check of --epochs, so no training is needed to see it).
            let explicit = run_with(&["train", "--epochs", "0", "--device", "gpu:0"], &[]);
            let explicit_stderr = stderr_of(&explicit);
            assert!(
                explicit_stderr
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .starts_with("device: gpu:0"),
                "{explicit_stderr}"
            );
        }
        Some(_) => assert!(first.starts_with("device: gpu:0 ("), "{stderr}"),
    }
}
