//! `skip` and `skip_unless_required` themselves: a skip prints `SKIP <test>: <reason>` and
//! appends that line to the file `ANYGRAD_SKIP_LOG` names (after what the file already
//! holds); a requirement's variable set to `1` turns the skip into a failure that names the
//! variable and logs nothing; a log that cannot be written fails the test. Each case runs this
//! binary again as a child process (one `child_*` test, with its own environment), since the
//! variables are process-wide; the `child_*` tests do nothing unless
//! `ANYGRAD_SKIP_TEST_CHILD=1`, so the suite's own skip log never sees their lines.

use std::path::Path;
use std::process::{Command, Output};

use anygrad_testing::{current_test, skip, skip_unless_required, temp_dir, Requirement};

/// Set in the child processes only.
const CHILD: &str = "ANYGRAD_SKIP_TEST_CHILD";

fn in_child() -> bool {
    std::env::var(CHILD).is_ok_and(|value| value == "1")
}

/// Run the test `name` of this binary alone in a child process, with `variables` set,
/// `ANYGRAD_SKIP_LOG` set to `log` (removed where `None`) and every `ANYGRAD_REQUIRE_*`
/// variable of the parent removed.
fn run_child(name: &str, log: Option<&Path>, variables: &[(&str, &str)]) -> Output {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command.args([name, "--exact", "--nocapture", "--test-threads=1"]);
    for requirement in [
        Requirement::Gpu,
        Requirement::F16,
        Requirement::Coop,
        Requirement::FloatAtomics,
        Requirement::Timestamps,
        Requirement::Data,
    ] {
        command.env_remove(requirement.variable());
    }
    match log {
        Some(log) => command.env("ANYGRAD_SKIP_LOG", log),
        None => command.env_remove("ANYGRAD_SKIP_LOG"),
    };
    command.env(CHILD, "1").envs(variables.iter().copied());
    command.output().expect("run the test binary")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn child_skips_twice() {
    if in_child() {
        skip("first test", "reason one");
        skip("second test", "reason two: with a colon");
    }
}

#[test]
fn child_skips_for_f16() {
    if in_child() {
        skip_unless_required(Requirement::F16, "an f16 test", "no f16 here");
    }
}

#[test]
fn skip_prints_and_appends_each_line() {
    let dir = temp_dir("skip-log-append");
    let log = dir.join("skips.log");
    std::fs::write(&log, "SKIP earlier binary: kept\n").unwrap();
    let output = run_child("child_skips_twice", Some(&log), &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("SKIP first test: reason one\n"), "{stdout}");
    assert!(
        stdout.contains("SKIP second test: reason two: with a colon\n"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "SKIP earlier binary: kept\n\
         SKIP first test: reason one\n\
         SKIP second test: reason two: with a colon\n"
    );
    // Without the variable the lines are still printed.
    let output = run_child("child_skips_twice", None, &[]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("SKIP first test: reason one\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn required_capability_fails_instead_of_skipping() {
    let dir = temp_dir("skip-log-required");
    let log = dir.join("skips.log");
    let output = run_child(
        "child_skips_for_f16",
        Some(&log),
        &[("ANYGRAD_REQUIRE_F16", "1")],
    );
    assert!(!output.status.success(), "the required skip passed");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("ANYGRAD_REQUIRE_F16=1, but an f16 test would skip: no f16 here"),
        "{stderr}"
    );
    assert!(!text(&output.stdout).contains("SKIP an f16 test"));
    assert!(!log.exists(), "a failure was logged as a skip");
    // Another requirement's variable, or the variable at another value, changes nothing.
    for variables in [
        [("ANYGRAD_REQUIRE_COOP", "1")],
        [("ANYGRAD_REQUIRE_F16", "0")],
    ] {
        let output = run_child("child_skips_for_f16", Some(&log), &variables);
        assert!(
            output.status.success(),
            "{variables:?}: {}",
            text(&output.stderr)
        );
    }
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "SKIP an f16 test: no f16 here\n".repeat(2)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unwritable_log_fails_the_test() {
    let dir = temp_dir("skip-log-unwritable");
    // A directory cannot be opened for appending.
    let output = run_child("child_skips_twice", Some(&dir), &[]);
    assert!(
        !output.status.success(),
        "a skip that could not be logged passed"
    );
    let stderr = text(&output.stderr);
    assert!(stderr.contains("ANYGRAD_SKIP_LOG="), "{stderr}");
    assert!(stderr.contains("cannot append the skip line"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_requirement_has_its_own_variable() {
    let all = [
        Requirement::Gpu,
        Requirement::F16,
        Requirement::Coop,
        Requirement::FloatAtomics,
        Requirement::Timestamps,
        Requirement::Data,
    ];
    let mut names: Vec<&str> = all.iter().map(|r| r.variable()).collect();
    assert!(names
        .iter()
        .all(|name| name.starts_with("ANYGRAD_REQUIRE_")));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len(), "{names:?}");
}

#[test]
fn current_test_is_the_running_tests_name() {
    assert_eq!(current_test(), "current_test_is_the_running_tests_name");
}
