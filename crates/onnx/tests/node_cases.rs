//! ONNX's own node test cases (onnx 1.23.2, written out by `scripts/onnx/write_node_cases.py`)
//! that are known to pass, on each device: `tests/data/node_cases_cpu.txt` on the CPU,
//! `tests/data/node_cases_gpu.txt` on the GPU (lavapipe's run; the GPU refuses float64, so its
//! list is shorter). `ANYGRAD_ONNX_NODE_CASES` names the written `node/` folder; CI writes it
//! (`.ci/run`). Without it the test skips visibly, and `ANYGRAD_REQUIRE_DATA=1` makes that a
//! failure. A case that stops passing fails the test with its reason.

use std::path::PathBuf;

use anygrad_core::Device;
use anygrad_onnx::{run_case, CaseOutcome};
use anygrad_testing::{skip_unless_required, Requirement};

fn known_passing_node_cases_still_pass(device: &Device) {
    let Ok(root) = std::env::var("ANYGRAD_ONNX_NODE_CASES") else {
        skip_unless_required(
            Requirement::Data,
            "known_passing_node_cases_still_pass",
            "ANYGRAD_ONNX_NODE_CASES is not set (scripts/onnx/write_node_cases.py writes the cases)",
        );
        return;
    };
    let list = match device {
        Device::Cpu => include_str!("data/node_cases_cpu.txt"),
        _ => include_str!("data/node_cases_gpu.txt"),
    };
    let _inference = anygrad_core::no_grad();
    let mut failures = Vec::new();
    let mut ran = 0;
    for name in list
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#') && !line.is_empty())
    {
        let dir = PathBuf::from(&root).join(name);
        if !dir.is_dir() {
            failures.push(format!("{name}: missing from {root}"));
            continue;
        }
        ran += 1;
        match run_case(&dir, device) {
            CaseOutcome::Pass => {}
            other => failures.push(format!("{name}: {other:?}")),
        }
    }
    assert!(ran > 1000, "only {ran} cases found under {root}");
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed on {device:?}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

anygrad_testing::device_tests!(known_passing_node_cases_still_pass);
