//! The crate's layers, checked on its source (ARCHITECTURE.md, "Layers"): every `crate::` path
//! outside tests names a module of the file's own layer or of a layer below, and the modules'
//! imports form no circle except the one between tensors and autograd (a tensor records its
//! gradient function; the gradient rules are written in tensor ops). The GPU backend's inner
//! rules are `backend/gpu/layering.rs` and `backend/gpu/runtime/layering.rs`; the one place
//! that matches on the backend is `tensor/layering.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer, lowest first. A module missing here fails the test.
const LAYERS: &[(usize, &[&str])] = &[
    (
        0,
        &[
            "dtype",
            "op",
            "error",
            "random",
            "profile_flag",
            "update",
            "mutation",
            "determinism",
            "flop_count",
            "files",
            "autotune_force",
            "grad_mode",
            "quantization",
        ],
    ),
    (1, &["shape", "layout", "geometry"]),
    (2, &["backend"]),
    (3, &["storage", "device", "profiler", "fallback", "amp"]),
    (4, &["tensor", "autograd"]),
    (5, &["custom_op", "gpu", "transfer", "lib"]),
];

/// The circles allowed between modules (each a set of modules that import one another).
const ALLOWED_CIRCLES: &[&[&str]] = &[&["autograd", "tensor"]];

/// Every `.rs` file under `path`, test files left out (`tests.rs`, `tests/` folders, the
/// layering tests).
fn sources(path: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(path).expect("reading src").flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "tests" {
                sources(&path, files);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && name != "layering.rs" {
            files.push(path);
        }
    }
}

/// The module a file belongs to: its top-level module, and for `backend/` its submodule
/// (`backend::cpu`), so that the backends' own circles show.
fn module_of(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match parts.as_slice() {
        [backend, inner, ..] if backend == "backend" && inner != "mod" => {
            format!("backend::{inner}")
        }
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// The code of `text` without its test module, comments and string literals.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.starts_with("mod ") || next.starts_with("pub(crate) mod "))
        {
            break;
        }
        let line = line.split("//").next().unwrap_or("");
        // Drop string literals (their text may spell paths).
        let mut inside = false;
        let mut escaped = false;
        for character in line.chars() {
            if inside {
                match (escaped, character) {
                    (false, '\\') => escaped = true,
                    (false, '"') => inside = false,
                    _ => escaped = false,
                }
            } else if character == '"' {
                inside = true;
            } else {
                code.push(character);
            }
        }
        code.push('\n');
    }
    code
}

/// The modules a file's code names through `crate::` paths.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let word = |text: &str| -> String {
            text.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let first = word(rest);
        if first == "backend" {
            let inner = rest.strip_prefix("backend::").map(word).unwrap_or_default();
            named.insert(format!("backend::{inner}"));
        } else if !first.is_empty() {
            named.insert(first);
        }
    }
    named
}

/// The layer of a module (`backend::*` is the backend's).
fn layer_of(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap_or(module);
    LAYERS
        .iter()
        .find(|(_, modules)| modules.contains(&top))
        .map(|(layer, _)| *layer)
}

/// The crate's import graph: module -> modules it names (re-exports through the crate root,
/// `crate::Tensor`, count as `lib`).
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap_or(&file).to_path_buf();
        let module = module_of(&relative);
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for named in named_modules(&code_of(&text)) {
            let named = if layer_of(&named).is_some() {
                named
            } else {
                "lib".to_string()
            };
            if named != module {
                graph.entry(module.clone()).or_default().insert(named);
            }
        }
        graph.entry(module).or_default();
    }
    graph
}

#[test]
fn imports_point_down_the_layers() {
    let graph = import_graph();
    let mut problems = Vec::new();
    for (module, named) in &graph {
        let Some(layer) = layer_of(module) else {
            problems.push(format!("{module} has no layer in LAYERS"));
            continue;
        };
        for target in named {
            match layer_of(target) {
                Some(target_layer) if target_layer > layer => problems.push(format!(
                    "{module} (layer {layer}) imports {target} (layer {target_layer})"
                )),
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_circles_but_tensors_and_autograd() {
    let graph = import_graph();
    // Modules that reach themselves: for each module, everything it reaches.
    let reach = |start: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = graph.get(start).into_iter().flatten().cloned().collect();
        while let Some(next) = stack.pop() {
            if seen.insert(next.clone()) {
                stack.extend(graph.get(&next).into_iter().flatten().cloned());
            }
        }
        seen
    };
    let mut problems = Vec::new();
    for module in graph.keys() {
        let reached = reach(module);
        if !reached.contains(module) {
            continue;
        }
        // Its circle: the modules it reaches that reach it back.
        let circle: BTreeSet<String> = reached
            .iter()
            .filter(|other| *other == module || reach(other).contains(module))
            .cloned()
            .collect();
        let allowed = ALLOWED_CIRCLES.iter().any(|allowed| {
            circle
                .iter()
                .all(|member| allowed.contains(&member.as_str()))
        });
        if !allowed {
            problems.push(format!("{module} is in the circle {circle:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_scan_sees_paths_and_skips_tests_comments_and_strings() {
    let code = code_of(
        "use crate::tensor::Tensor;\n\
         let x = crate::backend::cpu::CpuStorage::F32(v); // crate::autograd\n\
         let s = \"crate::storage\";\n\
         #[cfg(test)]\n\
         mod tests {\n\
         use crate::profiler;\n\
         }\n",
    );
    let named: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(named, ["backend::cpu", "tensor"]);
    assert_eq!(
        module_of(Path::new("backend/gpu/conv/mod.rs")),
        "backend::gpu"
    );
    assert_eq!(module_of(Path::new("tensor/rows.rs")), "tensor");
    assert_eq!(module_of(Path::new("amp.rs")), "amp");
}
