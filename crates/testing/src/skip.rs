//! Visible, recorded skips. A test that cannot run here calls [`skip`] (or
//! [`skip_unless_required`] when what it lacks is a capability a machine may be expected to
//! have): one line `SKIP <test>: <reason>` goes to stdout and, when `ANYGRAD_SKIP_LOG=<file>`
//! is set, is appended to that file, so that CI sees every skip although cargo captures the
//! output of passing tests (`.ci/run` fails on a skip its allowlist does not name). Each
//! [`Requirement`] has a variable (`ANYGRAD_REQUIRE_GPU`, `ANYGRAD_REQUIRE_F16`, ...) that turns
//! its skips into failures where that capability must be present.
//!
//! This file uses only `std`: anygrad-core's own unit tests, which cannot use anygrad-testing
//! (it depends on anygrad-core, so its `Device` would be another crate's type there), include
//! it with `#[path]` (`crates/core/src/backend/tests/mod.rs`), so both honour the same
//! variables and print the same lines.

use std::io::Write;

/// The variable naming the file that every skip line is appended to.
pub const SKIP_LOG_VARIABLE: &str = "ANYGRAD_SKIP_LOG";

/// A capability, or an input, that a test needs and a machine may lack. Each has a variable
/// which, set to `1`, makes the test fail instead of skipping where it is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// A GPU adapter (`ANYGRAD_REQUIRE_GPU`).
    Gpu,
    /// f16 arithmetic on the GPU, wgpu's `SHADER_F16` (`ANYGRAD_REQUIRE_F16`).
    F16,
    /// Usable 16x16x16 f16 -> f32 cooperative matrices, the tensor-core kernels
    /// (`ANYGRAD_REQUIRE_COOP`).
    Coop,
    /// Atomic f32 additions in storage buffers (`ANYGRAD_REQUIRE_FLOAT_ATOMICS`).
    FloatAtomics,
    /// GPU timestamp queries (`ANYGRAD_REQUIRE_TIMESTAMPS`).
    Timestamps,
    /// Data sets and model files read from outside the repository: MNIST, Fashion-MNIST, the
    /// real MiniLM (`ANYGRAD_REQUIRE_DATA`).
    Data,
}

impl Requirement {
    /// The environment variable that makes a missing capability a failure.
    pub fn variable(self) -> &'static str {
        match self {
            Requirement::Gpu => "ANYGRAD_REQUIRE_GPU",
            Requirement::F16 => "ANYGRAD_REQUIRE_F16",
            Requirement::Coop => "ANYGRAD_REQUIRE_COOP",
            Requirement::FloatAtomics => "ANYGRAD_REQUIRE_FLOAT_ATOMICS",
            Requirement::Timestamps => "ANYGRAD_REQUIRE_TIMESTAMPS",
            Requirement::Data => "ANYGRAD_REQUIRE_DATA",
        }
    }

    /// Whether its variable is set to `1`.
    pub fn is_required(self) -> bool {
        std::env::var(self.variable()).is_ok_and(|value| value == "1")
    }
}

/// Skip `test` for `reason`: print `SKIP <test>: <reason>` and, when `ANYGRAD_SKIP_LOG` names
/// a file, append the same line to it (opened for appending, one write per line, so the lines
/// of tests running in parallel or in several binaries do not mix). A log that cannot be
/// written fails the test: a skip CI cannot see is what the log exists to prevent.
pub fn skip(test: &str, reason: &str) {
    let line = format!("SKIP {test}: {reason}");
    println!("{line}");
    let Some(path) = std::env::var_os(SKIP_LOG_VARIABLE) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    if let Err(error) = written {
        panic!(
            "{SKIP_LOG_VARIABLE}={}: cannot append the skip line ({error}): {line}",
            std::path::Path::new(&path).display()
        );
    }
}

/// Skip `test` for lack of `requirement`, or fail it (panic) when the requirement's variable
/// is set to `1`.
pub fn skip_unless_required(requirement: Requirement, test: &str, reason: &str) {
    if requirement.is_required() {
        panic!(
            "{}=1, but {test} would skip: {reason}",
            requirement.variable()
        );
    }
    skip(test, reason);
}

/// The name of the running test: libtest runs each test on a thread named after it (with its
/// module path, e.g. `on_gpu::golden_f16`). For helpers that skip part of a test without
/// being told its name.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_string()
}
