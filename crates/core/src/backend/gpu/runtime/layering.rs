//! The runtime's one rule, checked on its source: no file under `backend/gpu/runtime/`
//! names a module of `backend/gpu/` outside this folder (a kernel family, the catalogue,
//! the contract), by an absolute path or by `super::` steps that leave the folder. The
//! helpers also serve the families' rule (`backend/gpu/layering.rs`).

use std::path::{Path, PathBuf};

/// Every `.rs` file under `directory`.
pub(crate) fn rust_files(directory: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(directory).unwrap_or_else(|error| {
        panic!("reading {}: {error}", directory.display());
    });
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// How many `super::` steps from the top of `file` leave the folder `root`: one per
/// directory between the file and `root`, one for the file's own module unless it is a
/// `mod.rs`, and one more.
pub(crate) fn steps_out(root: &Path, file: &Path) -> usize {
    let relative = file.strip_prefix(root).unwrap_or(file);
    let directories = relative.components().count() - 1;
    let module_file = file.file_name().is_some_and(|name| name == "mod.rs");
    directories + usize::from(!module_file) + 1
}

/// Whether `path` (what follows `backend::gpu::`) starts with one of the `allowed` modules.
fn names_allowed(path: &str, allowed: &[&str]) -> bool {
    let module: String = path
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    allowed.contains(&module.as_str())
}

/// The places in `text` (a file whose top level leaves its folder after `steps` `super::`
/// steps, into `backend/gpu/`) that name a module of `backend/gpu/` other than the
/// `allowed` ones, by an absolute path or by `super::` steps.
pub(crate) fn escapes(text: &str, steps: usize, allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    // Inside an inline module (`mod tests { ... }` at the end of a file) one more step.
    let mut inline = 0;
    for (number, line) in text.lines().enumerate() {
        if line.starts_with("mod ") || line.starts_with("pub(crate) mod ") {
            inline = usize::from(line.trim_end().ends_with('{'));
        }
        let code = line.split("//").next().unwrap_or("");
        let mut escaped = false;
        let mut rest = code;
        while let Some(at) = rest.find("crate::backend::gpu::") {
            let after = &rest[at + "crate::backend::gpu::".len()..];
            escaped |= !names_allowed(after, allowed);
            rest = after;
        }
        // Runs of `super::` exactly long enough to reach `backend/gpu/`, then a module.
        let mut rest = code;
        while let Some(at) = rest.find("super::") {
            let preceded = rest[..at].ends_with("super::");
            let mut run = 0;
            let mut after = &rest[at..];
            while let Some(next) = after.strip_prefix("super::") {
                run += 1;
                after = next;
            }
            if !preceded && run == steps + inline && !names_allowed(after, allowed) {
                escaped = true;
            }
            rest = after;
        }
        if escaped {
            found.push(format!("{}: {}", number + 1, line.trim()));
        }
    }
    found
}

#[test]
fn the_runtime_imports_no_kernel_family() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/backend/gpu/runtime");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 10, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in files {
        if file.ends_with("layering.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for place in escapes(&text, steps_out(&root, &file), &["runtime"]) {
            problems.push(format!("{}:{place}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "runtime files name modules outside the runtime:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_of_a_family() {
    let runtime = ["runtime"];
    assert_eq!(
        escapes("use crate::backend::gpu::fusion::PLANNER;", 2, &runtime).len(),
        1
    );
    assert_eq!(
        escapes("use super::super::fusion::PLANNER;", 2, &runtime).len(),
        1
    );
    assert!(escapes(
        "use crate::backend::gpu::runtime::buffers::BufferSlot;",
        2,
        &runtime
    )
    .is_empty());
    assert!(escapes("use super::super::storage::GpuStorage;", 3, &runtime).is_empty());
    let tests = "mod tests {\n    use super::super::buffers::BufferSlot;\n}";
    assert!(escapes(tests, 2, &runtime).is_empty());
    // A family may name itself and the runtime, not another family or the layer above.
    let conv = ["conv", "runtime"];
    assert!(escapes("use super::super::runtime::params::word;", 2, &conv).is_empty());
    assert!(escapes("use crate::backend::gpu::conv::gemm::Tile;", 2, &conv).is_empty());
    assert_eq!(
        escapes("use crate::backend::gpu::copy::transpose::fits;", 2, &conv).len(),
        1
    );
    assert_eq!(
        escapes("use super::super::matmul::coop::Coop;", 2, &conv).len(),
        1
    );
    assert_eq!(
        escapes(
            "use crate::backend::gpu::kernel_catalog::naga_check;",
            2,
            &conv
        )
        .len(),
        1
    );
    // `crate::backend::gpu::conversion` is not `conv`.
    assert_eq!(
        escapes("use crate::backend::gpu::conversion::X;", 2, &conv).len(),
        1
    );
}
