//! A GPU start-up that fails exits cleanly, every time: one `error:` line and exit code 1,
//! never a signal. On lavapipe the process used to print its error and then die of SIGSEGV
//! or a heap-corruption SIGABRT now and then: the driver's queue thread was still compiling
//! the first submitted kernels with LLVM while the exit handlers destroyed LLVM's globals.
//! `main` now closes the GPUs (`anygrad::gpu::shutdown`) before it returns. The race is
//! rare (here about 1 run in 100, pinned to one core; less often unpinned), so each start-up
//! is repeated many times, pinned to one core with `taskset` where it exists.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anygrad_testing::temp_dir;

/// Runs of each failing start-up.
const RUNS: usize = 40;

/// Whether the GPU variant runs: an adapter exists, or `ANYGRAD_REQUIRE_GPU=1` makes a
/// missing one a failure. Prints `SKIP` otherwise.
fn gpu_present(test: &str) -> bool {
    if anygrad::gpu::device_count() > 0 {
        return true;
    }
    anygrad_testing::skip_unless_required(
        anygrad_testing::Requirement::Gpu,
        test,
        "no GPU adapter",
    );
    false
}

/// Whether `taskset` can pin a child to one core here.
fn taskset_works() -> bool {
    Command::new("taskset")
        .args(["-c", "0", "true"])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// `anygrad ARGS` with `env`, pinned to core 0 when `pinned`.
fn run(args: &[&str], env: &[(&str, &str)], pinned: bool) -> Output {
    let binary = env!("CARGO_BIN_EXE_anygrad");
    let mut command = if pinned {
        let mut command = Command::new("taskset");
        command.args(["-c", "0", binary]);
        command
    } else {
        Command::new(binary)
    };
    command.args(args).env_remove("ANYGRAD_DEVICE");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run anygrad")
}

/// Runs the start-up [`RUNS`] times; every run exits with code 1 (not a signal) and prints
/// exactly one `error:` line containing `expected`.
fn assert_always_clean(args: &[&str], env: &[(&str, &str)], expected: &str) {
    let pinned = taskset_works();
    let mut failures = Vec::new();
    for attempt in 0..RUNS {
        let output = run(args, env, pinned);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
        let clean = output.status.code() == Some(1)
            && errors.len() == 1
            && errors[0].contains(expected)
            && !stderr.contains("panicked");
        if !clean {
            failures.push(format!("run {attempt}: {:?}\n{stderr}", output.status));
        }
    }
    assert!(
        failures.is_empty(),
        "{args:?}: {} of {RUNS} runs did not exit cleanly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A checkpoint of the digits MLP whose first weight has its dims swapped (same bytes).
fn mis_shaped_checkpoint(directory: &Path) -> PathBuf {
    let good = directory.join("good.safetensors");
    let saved = run(
        &[
            "train",
            "--device",
            "cpu",
            "--epochs",
            "1",
            "--save",
            good.to_str().unwrap(),
        ],
        &[],
        false,
    );
    assert!(saved.status.success(), "{saved:?}");
    let bytes = std::fs::read(&good).unwrap();
    let header_length = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value =
        serde_json::from_slice(&bytes[8..8 + header_length]).expect("a safetensors header");
    let shape = &mut header["0.weight"]["shape"];
    let swapped = serde_json::json!([shape[1].clone(), shape[0].clone()]);
    assert_ne!(*shape, swapped, "the first weight is not square");
    *shape = swapped;
    let mut text = serde_json::to_vec(&header).unwrap();
    text.resize(text.len().div_ceil(8) * 8, b' ');
    let mut rewritten = (text.len() as u64).to_le_bytes().to_vec();
    rewritten.extend_from_slice(&text);
    rewritten.extend_from_slice(&bytes[8 + header_length..]);
    let bad = directory.join("mis-shaped.safetensors");
    std::fs::write(&bad, rewritten).unwrap();
    bad
}

#[test]
fn resuming_a_mis_shaped_checkpoint_on_the_gpu_always_exits_cleanly() {
    if !gpu_present("resuming_a_mis_shaped_checkpoint_on_the_gpu_always_exits_cleanly") {
        return;
    }
    let directory = temp_dir("gpu-exit-resume");
    let bad = mis_shaped_checkpoint(&directory);
    assert_always_clean(
        &[
            "train",
            "--device",
            "gpu",
            "--epochs",
            "1",
            "--resume",
            bad.to_str().unwrap(),
        ],
        &[],
        "shape",
    );
    let _ = std::fs::remove_dir_all(directory);
}

#[test]
fn a_binding_limit_too_small_for_the_data_always_exits_cleanly() {
    if !gpu_present("a_binding_limit_too_small_for_the_data_always_exits_cleanly") {
        return;
    }
    assert_always_clean(
        &["train", "--device", "gpu", "--epochs", "1"],
        &[("ANYGRAD_MAX_BINDING_BYTES", "65536")],
        "65536",
    );
}
