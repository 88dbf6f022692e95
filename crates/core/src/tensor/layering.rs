//! The tensor layer's rule, checked on its source: no file of `tensor/`, `autograd/` or
//! `amp.rs` names a backend (a path into `backend::`, or a `Storage::Cpu` / `Storage::Gpu`
//! variant): tensors reach their data only through `Storage`'s methods. And the storage's
//! rule: no file outside `storage.rs` (and its `storage/` parts) names `Storage`'s variants,
//! so that it stays the one place that matches on the backend.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `path` (or `path` itself).
fn rust_files(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_file() {
        files.push(path.to_path_buf());
        return;
    }
    let entries = std::fs::read_dir(path).unwrap_or_else(|error| {
        panic!("reading {}: {error}", path.display());
    });
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() || path.extension().is_some_and(|extension| extension == "rs") {
            rust_files(&path, files);
        }
    }
}

/// The lines of `text` (outside comments) that name a backend.
fn backend_names(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or("");
            ["backend::", "Storage::Cpu", "Storage::Gpu"]
                .iter()
                .any(|name| code.contains(name))
        })
        .map(|(number, line)| format!("{}: {}", number + 1, line.trim()))
        .collect()
}

#[test]
fn the_tensor_layer_names_no_backend() {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for part in ["tensor", "autograd", "amp.rs"] {
        rust_files(&source.join(part), &mut files);
    }
    assert!(files.len() > 10, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in files {
        if file.ends_with("tensor/layering.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for place in backend_names(&text) {
            problems.push(format!("{}:{place}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "tensor-layer files name a backend (go through `Storage`'s methods):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_sees_a_backend() {
    assert_eq!(
        backend_names("use crate::backend::cpu::CpuStorage;").len(),
        1
    );
    assert_eq!(
        backend_names("    Storage::Gpu(gpu) => gpu.len(),").len(),
        1
    );
    assert!(backend_names("let storage = Storage::from_vec(values, device)?;").is_empty());
    assert!(backend_names("// `Storage::Gpu` in a comment").is_empty());
}

#[test]
fn only_the_storage_matches_on_the_backend() {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&source).unwrap_or(&file);
        if relative.starts_with("storage.rs")
            || relative.starts_with("storage")
            || relative.ends_with("tensor/layering.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("Storage::Cpu(") || code.contains("Storage::Gpu(") {
                problems.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "files other than storage.rs match on the backend variant:\n{}",
        problems.join("\n")
    );
}
