//! The command's smaller rough edges, as a user meets them: `profile` counts of zero, errors
//! that name the op, the operands and the limit (per-buffer binding or memory) with its
//! numbers and where it comes from, checks of `bench matmul --sizes` before any work, the
//! bytes really in use in an out-of-memory error, and a warning for every `ANYGRAD_*`
//! variable whose value anygrad would not understand.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anygrad::Device;
use anygrad_testing::gpu_or_skip;

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

/// The one `error:` line of a run that failed cleanly (non-zero exit, no panic).
fn error_line(args: &[&str], output: &Output) -> String {
    let stderr = stderr_of(output);
    assert!(
        output.status.code().is_some_and(|code| code != 0),
        "{args:?} should exit non-zero (not by a signal): {:?} {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    errors[0].to_string()
}

/// The command fails with exactly one `error:` line containing every `expected` text.
fn assert_clean_failure(args: &[&str], expected: &[&str]) -> String {
    let line = error_line(args, &run_with(args, &[]));
    for text in expected {
        assert!(line.contains(text), "{args:?}: `{text}` not in {line}");
    }
    line
}

/// The GPU's largest storage binding in bytes (as `anygrad devices` shows it).
fn binding_size(device: &Device) -> u64 {
    match device {
        Device::Gpu(gpu) => {
            let info = gpu.info();
            info.max_storage_binding_size.min(info.max_buffer_size)
        }
        Device::Cpu => unreachable!("gpu_or_skip returns a GPU"),
    }
}

#[test]
fn profile_refuses_counts_of_zero() {
    for option in [
        "--steps",
        "--batch",
        "--tokens",
        "--heads",
        "--head-dim",
        "--kernel-width",
    ] {
        for target in ["train", "attention"] {
            assert_clean_failure(
                &["profile", target, "--device", "cpu", option, "0"],
                &[&format!("{option} 0"), "at least 1"],
            );
        }
    }
    // `--kernels 0` stays allowed: it only leaves the per-kernel table out.
    let output = run_with(
        &[
            "profile",
            "train",
            "--device",
            "cpu",
            "--steps",
            "1",
            "--kernels",
            "0",
        ],
        &[],
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
}

/// With the binding limit lowered, digits training on the GPU cannot bind the training
/// split for one `index_select`: the error says which op, its operands, the limit and the
/// variable that set it (it used to name only the byte counts). Training that succeeds under
/// the limit is fine too.
#[test]
fn a_lowered_binding_limit_is_reported_with_the_op_and_the_variable() {
    if gpu_or_skip("a_lowered_binding_limit_is_reported_with_the_op_and_the_variable").is_none() {
        return;
    }
    let args = ["train", "--device", "gpu", "--epochs", "1"];
    let output = run_with(&args, &[("ANYGRAD_MAX_BINDING_BYTES", "65536")]);
    if output.status.success() {
        return;
    }
    let line = error_line(&args, &output);
    let op = line
        .trim_start_matches("error: ")
        .split_once(": ")
        .map(|(op, _)| op)
        .unwrap_or_default();
    assert!(
        !op.is_empty() && op.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
        "no op named: {line}"
    );
    for text in [
        "(operands [",
        "per-buffer binding limit of 65536 bytes",
        "ANYGRAD_MAX_BINDING_BYTES=65536",
    ] {
        assert!(line.contains(text), "`{text}` not in {line}");
    }
}

/// A size beyond the GPU's binding limit is refused before anything runs (it used to fill
/// memory for 89 s on lavapipe and then report the binding limit as if it were memory), and
/// the message names the limit with its numbers.
#[test]
fn bench_matmul_checks_sizes_against_the_binding_limit_first() {
    let Some(device) = gpu_or_skip("bench_matmul_checks_sizes_against_the_binding_limit_first")
    else {
        return;
    };
    let limit = binding_size(&device);
    // The smallest f32 size whose right-hand matrix is above one binding.
    let mut side = ((limit / 4) as f64).sqrt() as u64;
    while side * side * 4 <= limit {
        side += 1;
    }
    let sizes = format!("64,{side}");
    let args = [
        "bench",
        "matmul",
        "--device",
        "gpu",
        "--sizes",
        &sizes,
        "--seconds",
        "0.01",
    ];
    let started = Instant::now();
    let output = run_with(&args, &[]);
    let elapsed = started.elapsed();
    let line = error_line(&args, &output);
    for text in [
        format!("--sizes {side}"),
        format!("{} bytes in one buffer", side * side * 4),
        format!("per-buffer binding limit of {limit} bytes"),
        format!("largest size under it is {}", side - 1),
    ] {
        assert!(line.contains(&text), "`{text}` not in {line}");
    }
    assert!(
        String::from_utf8_lossy(&output.stdout).trim().is_empty(),
        "size 64 was benchmarked before the refusal"
    );
    assert!(
        elapsed < Duration::from_secs(60),
        "refused only after {elapsed:?}"
    );
}

/// On the CPU the three matrices are checked against the host's memory, by name.
#[test]
fn bench_matmul_checks_sizes_against_memory_first() {
    let line = assert_clean_failure(
        &["bench", "matmul", "--device", "cpu", "--sizes", "64,200000"],
        &[
            "--sizes 200000",
            "480000000000 bytes",
            "the host's RAM plus swap",
            "out of memory",
        ],
    );
    assert!(!line.contains("binding"), "{line}");
}

/// An out-of-memory error on the CPU reports what the process holds, not "0 bytes in use".
#[test]
fn cpu_out_of_memory_reports_the_bytes_in_use() {
    let line = assert_clean_failure(
        &[
            "profile",
            "attention",
            "--device",
            "cpu",
            "--batch",
            "65536",
            "--tokens",
            "65536",
        ],
        &["out of memory"],
    );
    let in_use: u64 = line
        .split_once("with ")
        .and_then(|(_, rest)| rest.split_once(" bytes in use"))
        .and_then(|(number, _)| number.parse().ok())
        .unwrap_or_else(|| panic!("no `with N bytes in use` in {line}"));
    // The process's own code and data are resident: far above a megabyte.
    assert!(in_use > 1 << 20, "{line}");
}

#[test]
fn every_fixed_vocabulary_variable_warns_about_unknown_values() {
    for (name, value) in [
        ("ANYGRAD_DETERMINISTIC", "yes"),
        ("ANYGRAD_PREFETCH", "maybe"),
        ("ANYGRAD_AUTOTUNE_FORCE", "matmul:"),
        ("ANYGRAD_AUTOTUNE_FORCE", "matmull:dot"),
        ("ANYGRAD_AUTOTUNE", "fast"),
        ("ANYGRAD_COOP_ATTENTION", "auto"),
        ("ANYGRAD_COOP_CONV", "yes"),
        ("ANYGRAD_EXECUTION_MODE", "fast"),
        ("ANYGRAD_OVERLAP_OPTIMIZER", "off"),
        ("ANYGRAD_FUSION", "OFF"),
        ("ANYGRAD_MAX_BINDING_BYTES", "lots"),
        ("ANYGRAD_SPIN_WAIT_US", "soon"),
        ("ANYGRAD_BUCKET_MB", "big"),
        ("ANYGRAD_BUCKET_TAIL_MB", "-1"),
    ] {
        let output = run_with(
            &["bench", "matmul", "--device", "cpu", "--sizes", "0"],
            &[(name, value)],
        );
        let stderr = stderr_of(&output);
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("warning: {name}={value} ")))
            .collect();
        assert_eq!(warnings.len(), 1, "{name}={value}: {stderr}");
    }
    // Documented values are accepted silently.
    let output = run_with(
        &["bench", "matmul", "--device", "cpu", "--sizes", "0"],
        &[
            ("ANYGRAD_DETERMINISTIC", "1"),
            ("ANYGRAD_PREFETCH", "off"),
            (
                "ANYGRAD_AUTOTUNE_FORCE",
                "matmul:dot,conv2d_backward_weight:wide-split*",
            ),
            ("ANYGRAD_AUTOTUNE", "refresh"),
            ("ANYGRAD_COOP_ATTENTION", "off"),
            ("ANYGRAD_COOP_CONV", "auto"),
            ("ANYGRAD_EXECUTION_MODE", "latency"),
            ("ANYGRAD_OVERLAP_OPTIMIZER", "0"),
            ("ANYGRAD_MAX_BINDING_BYTES", "65536"),
            ("ANYGRAD_SPIN_WAIT_US", "0"),
            ("ANYGRAD_BUCKET_MB", "0.5"),
            ("ANYGRAD_BUCKET_TAIL_MB", "0.25"),
        ],
    );
    let stderr = stderr_of(&output);
    assert!(!stderr.contains("warning:"), "{stderr}");
}
