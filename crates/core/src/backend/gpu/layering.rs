//! The families' rule, checked on their source: no file of a kernel family
//! (`backend/gpu/<family>/`) names another family, nor a module of the layer above (the
//! catalogue, the snapshots, the re-exports of `mod.rs`), by an
//! absolute path or by `super::` steps that leave its folder: a family imports only from
//! itself and `runtime/`. What families share lives in the runtime or is reached through its
//! hooks (`runtime/hooks.rs`). The runtime's own rule is `runtime/layering.rs`.

use std::path::PathBuf;

use super::runtime::layering::{escapes, rust_files, steps_out};

#[test]
fn no_family_imports_another() {
    let gpu = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/backend/gpu");
    let mut families = Vec::new();
    for entry in std::fs::read_dir(&gpu)
        .expect("reading backend/gpu")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_family = entry.path().join("mod.rs").is_file() && name != "runtime";
        if is_family {
            families.push(name);
        }
    }
    assert!(families.len() >= 15, "found only {families:?}");
    let mut problems = Vec::new();
    for family in &families {
        let root = gpu.join(family);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let allowed = [family.as_str(), "runtime"];
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for place in escapes(&text, steps_out(&root, &file), &allowed) {
                problems.push(format!("{}:{place}", file.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "family files name modules outside their family and the runtime:\n{}",
        problems.join("\n")
    );
}
