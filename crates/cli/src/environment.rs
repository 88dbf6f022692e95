//! The `ANYGRAD_*` environment variables the libraries read, checked once when the command
//! starts: a value anygrad does not understand gets one `warning:` line naming the variable,
//! the values it takes and what is used instead. (The libraries fall back to their default
//! without a word, or warn only when the value is first read, which may be never.)
//! `ANYGRAD_LOG` is checked where the log filter is built (`main.rs`); `ANYGRAD_DEVICE` is
//! parsed where a device is chosen, and a bad one is an error there; variables read only by
//! tests (`ANYGRAD_REQUIRE_GPU`, `ANYGRAD_UPDATE_SNAPSHOTS`) are not the command's business.

use anygrad::autotune_force::check_autotune_force;

/// How the library that reads a variable compares its value with the known values.
#[derive(Clone, Copy)]
enum Matching {
    /// Byte for byte (`ANYGRAD_PREFETCH`: ` off` is not `off`).
    Exact,
    /// After trimming surrounding whitespace, case-sensitively.
    Trimmed,
    /// After trimming, in any case.
    TrimmedAnyCase,
}

/// A variable that chooses a behaviour from a fixed list of values.
struct ChoiceVariable {
    /// The variable.
    name: &'static str,
    /// Every value the library understands.
    values: &'static [&'static str],
    /// How the library compares a value with them.
    matching: Matching,
    /// What an unknown value falls back to.
    fallback: &'static str,
}

impl ChoiceVariable {
    /// Whether the library understands `value` (a blank value means the default to all).
    fn knows(&self, value: &str) -> bool {
        let compared = match self.matching {
            Matching::Exact => value.to_string(),
            Matching::Trimmed => value.trim().to_string(),
            Matching::TrimmedAnyCase => value.trim().to_ascii_lowercase(),
        };
        value.trim().is_empty() || self.values.contains(&compared.as_str())
    }
}

/// Every variable with a fixed vocabulary, as the code that reads it parses it.
const CHOICE_VARIABLES: [ChoiceVariable; 11] = [
    ChoiceVariable {
        name: "ANYGRAD_FUSION",
        values: &["1", "on", "true", "0", "off", "false"],
        matching: Matching::Trimmed,
        fallback: "fusion on",
    },
    ChoiceVariable {
        name: "ANYGRAD_FUSED_ATTENTION",
        values: &["auto", "1", "on", "true", "0", "off", "false"],
        matching: Matching::TrimmedAnyCase,
        fallback: "fused attention auto",
    },
    ChoiceVariable {
        name: "ANYGRAD_FALLBACK",
        values: &["error", "deny", "warn", "warning", "allow", "silent"],
        matching: Matching::TrimmedAnyCase,
        fallback: "warn",
    },
    ChoiceVariable {
        name: "ANYGRAD_COOP_MATMUL",
        values: &[
            "auto", "staged", "staged16", "staged32", "wide128", "wide256", "direct", "off", "0",
            "none",
        ],
        matching: Matching::Trimmed,
        fallback: "auto",
    },
    ChoiceVariable {
        name: "ANYGRAD_COOP_ATTENTION",
        values: &["on", "1", "off", "0", "none"],
        matching: Matching::Trimmed,
        fallback: "on",
    },
    ChoiceVariable {
        name: "ANYGRAD_COOP_CONV",
        values: &["auto", "on", "1", "off", "0", "none"],
        matching: Matching::Trimmed,
        fallback: "auto",
    },
    ChoiceVariable {
        name: "ANYGRAD_AUTOTUNE",
        values: &["on", "1", "off", "0", "refresh"],
        matching: Matching::Trimmed,
        fallback: "on (off on software adapters)",
    },
    ChoiceVariable {
        name: "ANYGRAD_EXECUTION_MODE",
        values: &["default", "throughput", "latency", "memory"],
        matching: Matching::Trimmed,
        fallback: "default",
    },
    ChoiceVariable {
        name: "ANYGRAD_DETERMINISTIC",
        values: &["1", "on", "true", "0", "off", "false"],
        matching: Matching::Trimmed,
        fallback: "deterministic algorithms off",
    },
    ChoiceVariable {
        name: "ANYGRAD_PREFETCH",
        values: &["on", "off"],
        matching: Matching::Exact,
        fallback: "prefetch on (only `off` turns it off)",
    },
    ChoiceVariable {
        name: "ANYGRAD_OVERLAP_OPTIMIZER",
        values: &["1", "0"],
        matching: Matching::Trimmed,
        fallback: "the optimizer overlapped with the exchange (only `0` turns it off)",
    },
];

/// A variable whose value is a number or a list with a syntax: the check says what is wrong.
struct FormattedVariable {
    /// The variable.
    name: &'static str,
    /// `Err` says what is wrong with the value (a phrase after `NAME=value`).
    check: fn(&str) -> Result<(), String>,
    /// What happens to a bad value.
    fallback: &'static str,
}

/// A whole number of `unit` (trimmed, as the libraries parse it), at least `minimum`.
fn whole_number(value: &str, minimum: u64, unit: &str) -> Result<(), String> {
    match value.trim().parse::<u64>() {
        Ok(number) if number >= minimum => Ok(()),
        _ if minimum == 0 => Err(format!("is not a whole number of {unit}")),
        _ => Err(format!(
            "is not a whole number of {unit} of at least {minimum}"
        )),
    }
}

/// A positive, finite number of `unit` (fractions allowed; trimmed).
fn positive_number(value: &str, unit: &str) -> Result<(), String> {
    match value.trim().parse::<f64>() {
        Ok(number) if number.is_finite() && number > 0.0 => Ok(()),
        _ => Err(format!("is not a positive number of {unit}")),
    }
}

/// Every variable with a number or a syntax, as the code that reads it parses it.
const FORMATTED_VARIABLES: [FormattedVariable; 5] = [
    FormattedVariable {
        name: "ANYGRAD_MAX_BINDING_BYTES",
        check: |value| whole_number(value, 4096, "bytes"),
        fallback: "using the adapter's limit",
    },
    FormattedVariable {
        name: "ANYGRAD_SPIN_WAIT_US",
        check: |value| whole_number(value, 0, "µs"),
        fallback: "using 20000",
    },
    FormattedVariable {
        name: "ANYGRAD_BUCKET_MB",
        check: |value| positive_number(value, "megabytes"),
        fallback: "using 4",
    },
    FormattedVariable {
        name: "ANYGRAD_BUCKET_TAIL_MB",
        check: |value| positive_number(value, "megabytes"),
        fallback: "using 0.25",
    },
    FormattedVariable {
        name: "ANYGRAD_AUTOTUNE_FORCE",
        check: |value| check_autotune_force(value).map_err(|e| format!("is malformed: {e}")),
        fallback: "that entry forces nothing",
    },
];

/// The warning for `name=value`, if anygrad does not understand the value.
fn warning_for(name: &str, value: &str) -> Option<String> {
    if let Some(choice) = CHOICE_VARIABLES.iter().find(|v| v.name == name) {
        return (!choice.knows(value)).then(|| {
            format!(
                "warning: {name}={value} is not one of {}; using {}",
                choice.values.join("|"),
                choice.fallback
            )
        });
    }
    let formatted = FORMATTED_VARIABLES.iter().find(|v| v.name == name)?;
    if value.trim().is_empty() {
        return None;
    }
    (formatted.check)(value)
        .err()
        .map(|problem| format!("warning: {name}={value} {problem}; {}", formatted.fallback))
}

/// One `warning:` line on stderr per checked variable whose value anygrad does not
/// understand.
pub fn warn_about_environment() {
    let names = CHOICE_VARIABLES
        .iter()
        .map(|v| v.name)
        .chain(FORMATTED_VARIABLES.iter().map(|v| v.name));
    for name in names {
        if let Ok(value) = std::env::var(name) {
            if let Some(warning) = warning_for(name, &value) {
                eprintln!("{warning}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{warning_for, CHOICE_VARIABLES};

    #[test]
    fn every_documented_value_is_accepted() {
        for variable in &CHOICE_VARIABLES {
            for value in variable.values {
                assert_eq!(warning_for(variable.name, value), None, "{}", variable.name);
            }
            assert_eq!(warning_for(variable.name, " "), None, "{}", variable.name);
        }
        for (name, value) in [
            ("ANYGRAD_MAX_BINDING_BYTES", "65536"),
            ("ANYGRAD_SPIN_WAIT_US", "0"),
            ("ANYGRAD_BUCKET_MB", "0.5"),
            ("ANYGRAD_BUCKET_TAIL_MB", " 1 "),
            ("ANYGRAD_AUTOTUNE_FORCE", "matmul:dot,wide-split*"),
            ("ANYGRAD_FUSED_ATTENTION", " OFF "),
        ] {
            assert_eq!(warning_for(name, value), None, "{name}={value}");
        }
    }

    #[test]
    fn values_the_library_would_misread_are_warned_about() {
        for (name, value, expected) in [
            ("ANYGRAD_FUSION", "OFF", "using fusion on"),
            ("ANYGRAD_PREFETCH", " off", "only `off`"),
            ("ANYGRAD_OVERLAP_OPTIMIZER", "off", "only `0`"),
            ("ANYGRAD_DETERMINISTIC", "yes", "1|on|true|0|off|false"),
            ("ANYGRAD_AUTOTUNE", "fast", "refresh"),
            ("ANYGRAD_MAX_BINDING_BYTES", "100", "at least 4096"),
            ("ANYGRAD_SPIN_WAIT_US", "-1", "whole number of µs"),
            ("ANYGRAD_BUCKET_MB", "0", "positive number of megabytes"),
            ("ANYGRAD_AUTOTUNE_FORCE", "matmul:", "entry `matmul:`"),
        ] {
            let warning = warning_for(name, value).unwrap_or_default();
            assert!(
                warning.starts_with(&format!("warning: {name}={value} "))
                    && warning.contains(expected),
                "{name}={value}: {warning:?}"
            );
        }
    }
}
