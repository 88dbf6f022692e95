//! `anygrad chat` end to end on the real SmolLM2-135M-Instruct (Q4_1 GGUF, named by
//! `ANYGRAD_SMOLLM2_GGUF`; CI caches it): messages read from standard input, greedy replies
//! streamed, `/reset` and `/exit`; and the errors of a missing file or bad options before any
//! model loads. Without the file the model test skips visibly (fails with
//! `ANYGRAD_REQUIRE_DATA=1`).

use std::io::Write;
use std::process::{Command, Stdio};

use anygrad_testing::{skip_unless_required, Requirement};

/// Run `anygrad chat` with `args`, feeding `input`: (success, stdout, stderr).
fn chat(args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anygrad"))
        .arg("chat")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start anygrad");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("wait for anygrad");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn chat_answers_each_message_and_forgets_on_reset() {
    let Some(model) = std::env::var_os("ANYGRAD_SMOLLM2_GGUF") else {
        skip_unless_required(
            Requirement::Data,
            "chat_answers_each_message_and_forgets_on_reset",
            "ANYGRAD_SMOLLM2_GGUF does not name SmolLM2-135M-Instruct.Q4_1.gguf",
        );
        return;
    };
    let model = model.to_string_lossy().into_owned();
    let (ok, stdout, stderr) = chat(
        &["--model", &model, "--device", "cpu", "--max-tokens", "12"],
        "What is the capital of France?\n\n/reset\nSay hello.\n/exit\nnever read\n",
    );
    assert!(ok, "chat failed: {stderr}");
    let replies: Vec<&str> = stdout.lines().collect();
    assert_eq!(replies.len(), 2, "one reply per message: {stdout:?}");
    assert!(replies[0].contains("Paris"), "{stdout:?}");
    assert!(!replies[1].trim().is_empty(), "{stdout:?}");
    assert!(stderr.contains("the conversation is forgotten"), "{stderr}");
}

#[test]
fn chat_refuses_a_missing_file_and_bad_options() {
    let (ok, _, stderr) = chat(&["--model", "/nonexistent/model.gguf"], "hello\n");
    assert!(!ok);
    assert!(stderr.contains("/nonexistent/model.gguf"), "{stderr}");
    let (ok, _, stderr) = chat(
        &["--model", "/nonexistent/model.gguf", "--top-p", "1.5"],
        "hello\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("top_p") || stderr.contains("top-p"),
        "{stderr}"
    );
}
