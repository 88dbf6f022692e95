//! `mpirun -n 2 anygrad train --distributed --device cpu` (feature `mpi`) ends with the losses
//! and accuracy of one process with the same global batch, and a failing job exits with an
//! error instead of hanging. Needs OpenMPI's `mpirun` (CI installs it).
#![cfg(feature = "mpi")]

use std::process::Command;

fn summary(output: &std::process::Output, what: &str) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} failed: {stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{what}: no JSON summary on stdout ({e}): {stderr}"))
}

fn mpirun(ranks: usize, args: &[&str]) -> std::process::Output {
    Command::new("mpirun")
        .args(["-n", &ranks.to_string(), "--oversubscribe"])
        .arg(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("run mpirun (install openmpi-bin)")
}

#[test]
fn two_ranks_match_one_process_on_digits() {
    let args = ["train", "--device", "cpu", "--epochs", "2", "--json"];
    let single = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .output()
        .expect("run anygrad");
    let single = summary(&single, "one process");
    let distributed = mpirun(2, &[&args[..], &["--distributed"]].concat());
    // Only rank 0 prints: exactly one summary.
    let distributed = summary(&distributed, "mpirun -n 2");
    let epochs = |s: &serde_json::Value| s["epochs"].as_array().expect("epochs").clone();
    let (a, b) = (epochs(&single), epochs(&distributed));
    assert_eq!(a.len(), 2);
    assert_eq!(b.len(), 2);
    for (s, d) in a.iter().zip(&b) {
        for key in ["train_loss", "test_loss"] {
            let (s, d) = (s[key].as_f64().unwrap(), d[key].as_f64().unwrap());
            assert!(
                (s - d).abs() <= 1e-4 * s.abs(),
                "{key}: one process {s}, two ranks {d}"
            );
        }
        let (s, d) = (
            s["test_accuracy"].as_f64().unwrap(),
            d["test_accuracy"].as_f64().unwrap(),
        );
        assert!((s - d).abs() <= 1.5 / 360.0, "test accuracy {s} vs {d}");
    }
}

#[test]
fn a_failing_job_exits_with_an_error() {
    let output = mpirun(
        2,
        &[
            "train",
            "--distributed",
            "--device",
            "cpu",
            "--resume",
            "/nonexistent/checkpoint.safetensors",
        ],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error (rank"), "{stderr}");
}
