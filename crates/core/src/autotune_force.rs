//! The syntax of `ANYGRAD_AUTOTUNE_FORCE` (the autotuner's forced candidates, read by
//! `backend/gpu/runtime/autotune.rs`), checked on its own so that a tool can say what is wrong with a
//! value instead of it silently forcing nothing: a comma-separated list whose entries are
//! `NAME` (exact), `NAME*` (a prefix) or `OP:NAME[*]` (only for the tuned primitive `OP`).
//! Blank entries are skipped, as the parser skips them.

/// The tuned primitives an entry's `OP:` may name (the first word of the autotuner's keys).
pub const TUNED_PRIMITIVES: [&str; 4] = [
    "matmul",
    "conv2d",
    "conv2d_backward_input",
    "conv2d_backward_weight",
];

/// Whether `text` can be a candidate's name: letters, digits, `-` and `_`, at least one.
fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Why `entry` (trimmed, non-empty) is not `NAME`, `NAME*` or `OP:NAME[*]`, if it is not.
fn entry_problem(entry: &str) -> Option<String> {
    let (op, pattern) = match entry.split_once(':') {
        Some((op, pattern)) => (Some(op), pattern),
        None => (None, entry),
    };
    if let Some(op) = op {
        if !TUNED_PRIMITIVES.contains(&op) {
            return Some(format!(
                "`{op}` is not a tuned primitive ({})",
                TUNED_PRIMITIVES.join(", ")
            ));
        }
    }
    let name = pattern.strip_suffix('*').unwrap_or(pattern);
    if !is_name(name) {
        return Some(format!(
            "`{pattern}` is not a candidate name (letters, digits, `-` or `_`, with an \
             optional `*` at the end for a prefix)"
        ));
    }
    None
}

/// Check a value of `ANYGRAD_AUTOTUNE_FORCE`: `Err` names the first malformed entry and why
/// (such an entry would never match a candidate, so it would force nothing).
///
/// ```
/// use anygrad_core::autotune_force::check_autotune_force;
/// assert!(check_autotune_force("matmul:dot, conv2d_backward_weight:wide-split*").is_ok());
/// assert!(check_autotune_force("matmul:").is_err());
/// ```
pub fn check_autotune_force(value: &str) -> Result<(), String> {
    for entry in value.split(',').map(str::trim) {
        if entry.is_empty() {
            continue;
        }
        if let Some(problem) = entry_problem(entry) {
            return Err(format!(
                "entry `{entry}`: {problem}; entries are NAME, NAME* or OP:NAME[*]"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_autotune_force;

    #[test]
    fn documented_forms_are_accepted() {
        for value in [
            "",
            " , ",
            "fast",
            "tile128-aligned",
            "split-k*",
            "matmul:dot",
            " matmul:fast , conv2d:sl* ,fa*",
            "conv2d_backward_weight:wide-split*,conv2d_backward_weight:split*",
            "conv2d_backward_input:winograd4",
        ] {
            assert!(check_autotune_force(value).is_ok(), "{value:?}");
        }
    }

    #[test]
    fn malformed_entries_are_named() {
        for (value, entry) in [
            ("matmul:", "matmul:"),
            ("dot,*", "*"),
            ("wi*de", "wi*de"),
            ("matmul fast", "matmul fast"),
            (":dot", ":dot"),
            ("matmull:dot", "matmull:dot"),
            ("matmul:a:b", "matmul:a:b"),
            ("tile64;tile128", "tile64;tile128"),
        ] {
            let error = check_autotune_force(value).unwrap_err();
            assert!(error.contains(&format!("`{entry}`")), "{value:?}: {error}");
        }
    }
}
