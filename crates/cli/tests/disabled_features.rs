//! `ANYGRAD_DISABLE_FEATURES` as a user sees it: `anygrad devices` lists the turned-off
//! features and reports them absent, and an unknown word gives one warning line.

use std::process::Command;

/// Run `anygrad` with `ANYGRAD_DISABLE_FEATURES=disable`: (success, stdout, stderr).
fn anygrad(args: &[&str], disable: &str) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .args(args)
        .env("ANYGRAD_DISABLE_FEATURES", disable)
        .output()
        .expect("run anygrad");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The adapters `anygrad devices --json` printed, or `None` (after SKIP) when there are none
/// and none is required.
fn adapters(stdout: &str, test: &str) -> Option<Vec<serde_json::Value>> {
    let adapters: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    if adapters.is_empty() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Gpu,
            test,
            "no GPU adapter",
        );
        return None;
    }
    Some(adapters)
}

#[test]
fn devices_lists_disabled_features_as_absent() {
    let (ok, stdout, stderr) = anygrad(&["devices", "--json"], "all");
    assert!(ok, "{stderr}");
    let Some(adapters) = adapters(&stdout, "devices_lists_disabled_features_as_absent") else {
        return;
    };
    for adapter in adapters {
        assert_eq!(
            adapter["disabled_features"],
            serde_json::json!(["coop", "subgroups", "f16", "float-atomics", "timestamps"]),
            "{adapter}"
        );
        for fact in [
            "shader_f16",
            "subgroups",
            "timestamp_query",
            "float_atomics",
        ] {
            assert_eq!(adapter[fact], false, "{fact}: {adapter}");
        }
        assert_eq!(adapter["cooperative_matrix"], serde_json::json!([]));
    }
}

#[test]
fn unknown_word_warns_once_and_the_rest_apply() {
    let (ok, stdout, stderr) = anygrad(&["devices", "--json"], "f16, Tensor-Cores");
    assert!(ok, "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("tensor-cores"))
        .collect();
    let Some(adapters) = adapters(&stdout, "unknown_word_warns_once_and_the_rest_apply") else {
        return;
    };
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("ANYGRAD_DISABLE_FEATURES"), "{stderr}");
    for adapter in adapters {
        assert_eq!(
            adapter["disabled_features"],
            serde_json::json!(["f16"]),
            "{adapter}"
        );
        assert_eq!(adapter["shader_f16"], false, "{adapter}");
    }
}
