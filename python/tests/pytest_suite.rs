//! Runs the Python package's pytest suite (`python/tests/test_*.py`) as part of `cargo test`, so
//! that the README's one test command covers Python too. The extension that cargo built beside this
//! test (`lib_native.so` in the target directory's profile folder or its `deps/`) is copied with
//! the package's Python sources into a temporary folder that pytest imports `anygrad` from; nothing
//! is installed.
//!
//! It needs `python3` (or the interpreter `ANYGRAD_PYTHON` names) with numpy and pytest. Where
//! they are missing the test skips visibly (`anygrad_testing::skip`), unless
//! `ANYGRAD_REQUIRE_PYTHON=1` makes that a failure (CI sets it). `ANYGRAD_REQUIRE_GPU=1`
//! reaches pytest too, where it makes a missing GPU a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter to run.
fn python() -> String {
    std::env::var("ANYGRAD_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The extension cargo built for this profile: `lib_native.so` in `<target>/<profile>/deps`
/// (where cargo leaves it when it builds the library for this test) or `<target>/<profile>`
/// (where `cargo build` puts it), the newer of the two.
fn built_extension() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe
        .parent()
        .expect("the test binary lies in <target>/<profile>/deps");
    let profile_dir = deps.parent().unwrap_or(deps);
    let name = if cfg!(target_os = "windows") {
        "_native.dll"
    } else if cfg!(target_os = "macos") {
        "lib_native.dylib"
    } else {
        "lib_native.so"
    };
    let modified = |path: &PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    [deps.join(name), profile_dir.join(name)]
        .into_iter()
        .filter(|path| path.is_file())
        .max_by_key(modified)
        .unwrap_or_else(|| profile_dir.join(name))
}

/// The file name Python imports the extension under.
fn module_file_name() -> &'static str {
    if cfg!(target_os = "windows") {
        "_native.pyd"
    } else {
        "_native.abi3.so"
    }
}

/// Copy the package's `.py` files (recursively) from `from` into `to`.
fn copy_package(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the package folder");
    for entry in std::fs::read_dir(from).expect("read the package folder") {
        let entry = entry.expect("a package entry");
        let path = entry.path();
        let file_type = entry.file_type().expect("the entry's type");
        if file_type.is_dir() {
            if path.file_name().is_some_and(|n| n == "__pycache__") {
                continue;
            }
            copy_package(&path, &to.join(entry.file_name()));
        } else if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy a Python file");
        }
    }
}

/// Skip for `reason`, or fail when `ANYGRAD_REQUIRE_PYTHON=1`.
fn skip_or_fail(reason: &str) {
    if std::env::var("ANYGRAD_REQUIRE_PYTHON").is_ok_and(|v| v == "1") {
        panic!("ANYGRAD_REQUIRE_PYTHON=1, but the pytest suite would skip: {reason}");
    }
    anygrad_testing::skip("pytest_suite", reason);
}

#[test]
fn pytest_suite() {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", "import numpy, pytest"])
        .output();
    match probe {
        Err(error) => return skip_or_fail(&format!("{python} cannot be run ({error})")),
        Ok(output) if !output.status.success() => {
            return skip_or_fail(&format!(
                "{python} lacks numpy or pytest (pip install numpy pytest): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
        Ok(_) => {}
    }
    let extension = built_extension();
    assert!(
        extension.is_file(),
        "the extension {} was not built (cargo builds it with this package)",
        extension.display()
    );
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::temp_dir().join(format!("anygrad-pytest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let package = scratch.join("anygrad");
    copy_package(&manifest.join("anygrad"), &package);
    std::fs::copy(&extension, package.join(module_file_name())).expect("copy the extension");
    // Run from the scratch folder: `python -m` puts the working directory first on the path,
    // and the source tree's `anygrad/` (without the extension) must not shadow the copy.
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(manifest.join("tests"))
        .current_dir(&scratch)
        .env("PYTHONPATH", &scratch)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .status()
        .expect("run pytest");
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(status.success(), "the pytest suite failed ({status})");
}
