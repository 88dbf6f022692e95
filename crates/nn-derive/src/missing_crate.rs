//! The error for a `#[derive(Module)]` whose generated code could not name `anygrad_nn`.
//!
//! Without `#[module(crate = "...")]` the generated code names `::anygrad_nn`. A crate that
//! depends on the `anygrad` facade alone has no such crate, and rustc's own error ("could not
//! find `anygrad_nn`") does not say that one attribute fixes it. So, when the struct has no
//! crate attribute, the derive reads the compiled crate's `Cargo.toml` (as `proc-macro-crate`
//! does): if no dependency is `anygrad-nn` but one is the `anygrad` facade, the derive emits
//! one error that says exactly what to write (`#[module(crate = "anygrad::nn")]`, under the
//! name the manifest gives the facade). Inside anygrad-nn's own library the attribute is
//! `#[module(crate = "crate")]`. Where the manifest cannot be read or names neither crate, the
//! derive changes nothing.

/// What the derive knows about the crate being compiled (from cargo's environment).
pub(crate) struct CompiledCrate {
    /// `CARGO_PKG_NAME`: the package (`anygrad-nn` for its library, tests and examples).
    pub(crate) package: String,
    /// The text of `$CARGO_MANIFEST_DIR/Cargo.toml` (`None` when unreadable).
    pub(crate) manifest: Option<String>,
}

impl CompiledCrate {
    /// Read the environment cargo gives the compiler (and so this macro).
    pub(crate) fn from_environment() -> CompiledCrate {
        let variable = |name: &str| std::env::var(name).unwrap_or_default();
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(|dir| std::path::PathBuf::from(dir).join("Cargo.toml"))
            .and_then(|path| std::fs::read_to_string(path).ok());
        CompiledCrate {
            package: variable("CARGO_PKG_NAME"),
            manifest,
        }
    }
}

/// The error message for a struct without `#[module(crate = ...)]` whose crate cannot name
/// `::anygrad_nn`, or `None` where the default path works (or nothing is known).
pub(crate) fn missing_crate_message(compiled: &CompiledCrate, struct_name: &str) -> Option<String> {
    // anygrad-nn's own crates: its tests, examples and doctests name `::anygrad_nn` as an
    // external crate, and doctests are compiled with the library's crate name, so nothing
    // here can tell the library from them: rustc's own error stands for the library.
    if compiled.package == "anygrad-nn" {
        return None;
    }
    let dependencies = dependencies(compiled.manifest.as_deref()?);
    let names_package = |package: &str| dependencies.iter().any(|(_, p)| p == package);
    if names_package("anygrad-nn") {
        return None;
    }
    let (facade, _) = dependencies.iter().find(|(_, p)| p == "anygrad")?;
    let path = format!("{}::nn", facade.replace('-', "_"));
    Some(format!(
        "#[derive(Module)] on `{struct_name}`: this crate depends on the `anygrad` facade, not \
         on `anygrad-nn`, so the derive must be told where anygrad-nn is: add \
         `#[module(crate = \"{path}\")]` to the struct (below the derive)"
    ))
}

/// Every dependency of a manifest (normal, dev, build, per-target) as `(key, package)`: the
/// name the crate uses and the package it is (different where `package = "..."` renames it).
/// A light reading of TOML that is enough for dependency keys: `[dependencies]` tables with
/// `key = ...` or `key.workspace = true` lines, and `[dependencies.key]` tables.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    // In a `[...dependencies]` table; or in a `[...dependencies.key]` table (its index).
    let mut in_table = false;
    let mut in_named: Option<usize> = None;
    for line in manifest.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            let header = header.trim_start_matches('[').trim_end_matches(']');
            in_table = is_dependency_table(header);
            in_named = None;
            if let Some((table, key)) = header.rsplit_once('.') {
                if is_dependency_table(table) {
                    let key = unquote(key);
                    found.push((key.clone(), key));
                    in_named = Some(found.len() - 1);
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if let Some(index) = in_named {
            if key == "package" {
                found[index].1 = unquote(value);
            }
            continue;
        }
        if !in_table {
            continue;
        }
        // `key = "1"`, `key = { ..., package = "p" }` or `key.workspace = true`.
        let key = unquote(key.split('.').next().unwrap_or(key));
        let package = package_in_inline_table(value).unwrap_or_else(|| key.clone());
        found.push((key, package));
    }
    found
}

/// True for `dependencies`, `dev-dependencies`, `build-dependencies` and their
/// `target.'cfg'.` forms.
fn is_dependency_table(header: &str) -> bool {
    let last = header.rsplit('.').next().unwrap_or(header).trim();
    matches!(
        last,
        "dependencies" | "dev-dependencies" | "build-dependencies"
    )
}

/// The `package = "..."` of an inline table `{ ... }`.
fn package_in_inline_table(value: &str) -> Option<String> {
    let inner = value.strip_prefix('{')?.trim_end().strip_suffix('}')?;
    inner.split(',').find_map(|entry| {
        let (key, value) = entry.split_once('=')?;
        (key.trim() == "package").then(|| unquote(value.trim()))
    })
}

/// A TOML key or string without its quotes.
fn unquote(text: &str) -> String {
    text.trim().trim_matches('"').trim_matches('\'').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(package: &str, _crate_name: &str, manifest: &str) -> CompiledCrate {
        CompiledCrate {
            package: package.into(),
            manifest: Some(manifest.into()),
        }
    }

    #[test]
    fn a_facade_user_is_told_the_attribute() {
        let manifest = "[package]\nname = \"app\"\n\n[dependencies]\nanygrad = \"0.1\"\n\
                        serde = { version = \"1\", features = [\"derive\"] }\n";
        let message = missing_crate_message(&compiled("app", "app", manifest), "Net").unwrap();
        assert!(
            message.contains("#[module(crate = \"anygrad::nn\")]"),
            "{message}"
        );
        assert!(message.contains("`Net`"), "{message}");
        assert!(message.contains("`anygrad` facade"), "{message}");
    }

    #[test]
    fn the_attribute_follows_a_renamed_facade() {
        for manifest in [
            "[dependencies]\nag = { path = \"../anygrad\", package = \"anygrad\" }\n",
            "[dependencies.ag]\npath = \"../anygrad\"\npackage = \"anygrad\"\n",
        ] {
            let message =
                missing_crate_message(&compiled("app", "app", manifest), "Net").expect(manifest);
            assert!(
                message.contains("#[module(crate = \"ag::nn\")]"),
                "{message}"
            );
        }
        // A facade inherited from the workspace, as a dev-dependency, is found too.
        let manifest = "[dev-dependencies]\nanygrad.workspace = true\n";
        let message = missing_crate_message(&compiled("app", "app", manifest), "Net").unwrap();
        assert!(message.contains("crate = \"anygrad::nn\""), "{message}");
    }

    #[test]
    fn crates_that_can_name_anygrad_nn_get_no_error() {
        for manifest in [
            "[dependencies]\nanygrad-nn = \"0.1\"\nanygrad = \"0.1\"\n",
            "[dependencies]\nanygrad-nn.workspace = true\n",
            "[target.'cfg(unix)'.dependencies]\nanygrad-nn = { path = \"../nn\" }\n",
            // Neither crate named: nothing is known, rustc reports what it finds.
            "[dependencies]\nserde = \"1\"\n",
            // A facade key outside any dependency table is not a dependency.
            "[features]\nanygrad = []\n[dependencies]\nanygrad-nn = \"0.1\"\n",
        ] {
            assert_eq!(
                missing_crate_message(&compiled("app", "app", manifest), "Net"),
                None,
                "{manifest}"
            );
        }
        // anygrad-nn's own tests and examples name it as an external crate.
        assert_eq!(
            missing_crate_message(&compiled("anygrad-nn", "derive", ""), "Block"),
            None
        );
        let unreadable = CompiledCrate {
            package: "app".into(),
            manifest: None,
        };
        assert_eq!(missing_crate_message(&unreadable, "Net"), None);
    }

    /// Doctests of anygrad-nn are compiled with the library's crate name and use
    /// `::anygrad_nn` as an external crate: no error.
    #[test]
    fn anygrad_nn_doctests_get_no_error() {
        assert_eq!(
            missing_crate_message(&compiled("anygrad-nn", "anygrad_nn", ""), "Encoder"),
            None
        );
    }
}
