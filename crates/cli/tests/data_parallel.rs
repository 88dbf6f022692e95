//! `anygrad train --devices cpu,cpu` trains like `--device cpu` with the same global batch,
//! and a bad device list is one clean error line.

use std::process::Command;

fn anygrad(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .output()
        .expect("run anygrad");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The training loss of each epoch of a JSON summary, after checking that the summary lists
/// epochs 1 to `epochs`, in order.
fn losses(json: &str, epochs: u64, what: &str) -> Vec<f64> {
    let summary: serde_json::Value = serde_json::from_str(json).expect("a JSON summary");
    let records = summary["epochs"].as_array().expect("epochs");
    let numbers: Vec<u64> = records
        .iter()
        .map(|e| e["epoch"].as_u64().expect("epoch"))
        .collect();
    assert_eq!(
        numbers,
        (1..=epochs).collect::<Vec<u64>>(),
        "{what}: epochs of the summary"
    );
    records
        .iter()
        .map(|e| e["train_loss"].as_f64().expect("train_loss"))
        .collect()
}

#[test]
fn devices_cpu_cpu_matches_one_cpu() {
    let common = ["train", "--epochs", "2", "--batch-size", "30", "--json"];
    let (ok, single, stderr) = anygrad(&[&common[..], &["--device", "cpu"]].concat());
    assert!(ok, "{stderr}");
    let (ok, parallel, stderr) = anygrad(&[&common[..], &["--devices", "cpu,cpu"]].concat());
    assert!(ok, "{stderr}");
    assert!(stderr.contains("devices: cpu, cpu"), "{stderr}");
    let (single, parallel) = (
        losses(&single, 2, "--device cpu"),
        losses(&parallel, 2, "--devices cpu,cpu"),
    );
    for (p, s) in parallel.iter().zip(&single) {
        assert!(
            (p - s).abs() <= 1e-4 * s.abs(),
            "{parallel:?} vs {single:?}"
        );
    }
}

#[test]
fn bad_device_lists_fail_cleanly() {
    for (args, expected) in [
        (&["train", "--devices", "cpu,tpu:3"][..], "unknown device"),
        (&["train", "--devices", ","][..], "names no device"),
    ] {
        let (ok, _, stderr) = anygrad(args);
        assert!(!ok, "{args:?} should fail");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("error:") && l.contains(expected)),
            "{args:?}: {stderr}"
        );
    }
}
