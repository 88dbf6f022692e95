//! `ANYGRAD_DISABLE_FEATURES`: adapter features that anygrad treats as absent, so that it
//! neither requests them when it opens a device nor picks a kernel that needs them. A GPU that
//! has everything can then take the path of one that lacks some (a DX12 adapter has no
//! cooperative matrices or f32 atomics; older cards have no f16 or subgroups), and CI runs the
//! suite that way on lavapipe.
//!
//! The value is a comma-separated list of `coop` (cooperative matrices), `subgroups`, `f16`,
//! `float-atomics`, `timestamps`, or `all`; words are trimmed and compared in any case. An
//! unknown word is ignored with one warning.

/// The environment variable.
pub(crate) const VARIABLE: &str = "ANYGRAD_DISABLE_FEATURES";

/// The word that turns off every feature below.
const ALL: &str = "all";

/// Each word of the variable and the wgpu features it stands for, in display order.
fn switches() -> [(&'static str, wgpu::Features); 5] {
    [
        ("coop", wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
        (
            "subgroups",
            wgpu::Features::SUBGROUP | wgpu::Features::SUBGROUP_BARRIER,
        ),
        ("f16", wgpu::Features::SHADER_F16),
        ("float-atomics", wgpu::Features::SHADER_FLOAT32_ATOMIC),
        ("timestamps", wgpu::Features::TIMESTAMP_QUERY),
    ]
}

/// The features `ANYGRAD_DISABLE_FEATURES` turns off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DisabledFeatures {
    /// The words of the features turned off, in display order (`coop`, `subgroups`, `f16`,
    /// `float-atomics`, `timestamps`), each once.
    pub(crate) names: Vec<&'static str>,
    /// The wgpu features they stand for.
    pub(crate) features: wgpu::Features,
}

impl DisabledFeatures {
    /// The features named by `text` (the variable's value), and the words it does not know.
    pub(crate) fn parse(text: &str) -> (DisabledFeatures, Vec<String>) {
        let mut chosen = [false; 5];
        let mut unknown = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let word = word.to_ascii_lowercase();
            if word == ALL {
                chosen = [true; 5];
            } else if let Some(index) = switches().iter().position(|(name, _)| *name == word) {
                chosen[index] = true;
            } else {
                unknown.push(word);
            }
        }
        let mut disabled = DisabledFeatures::default();
        for ((name, features), chosen) in switches().into_iter().zip(chosen) {
            if chosen {
                disabled.names.push(name);
                disabled.features |= features;
            }
        }
        (disabled, unknown)
    }

    /// The features the variable turns off (none when it is unset), with one warning for each
    /// word it does not know.
    pub(crate) fn from_env() -> DisabledFeatures {
        let Ok(text) = std::env::var(VARIABLE) else {
            return DisabledFeatures::default();
        };
        let (disabled, unknown) = DisabledFeatures::parse(&text);
        for word in unknown {
            tracing::warn!(
                "{VARIABLE}: `{word}` is not a feature anygrad can disable \
                 (coop|subgroups|f16|float-atomics|timestamps|all); ignored"
            );
        }
        disabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_turns_off_every_feature() {
        let (disabled, unknown) = DisabledFeatures::parse("all");
        assert!(unknown.is_empty());
        assert_eq!(
            disabled.names,
            ["coop", "subgroups", "f16", "float-atomics", "timestamps"]
        );
        for feature in [
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            wgpu::Features::SUBGROUP,
            wgpu::Features::SUBGROUP_BARRIER,
            wgpu::Features::SHADER_F16,
            wgpu::Features::SHADER_FLOAT32_ATOMIC,
            wgpu::Features::TIMESTAMP_QUERY,
        ] {
            assert!(disabled.features.contains(feature), "{feature:?}");
        }
    }

    #[test]
    fn words_are_trimmed_case_blind_and_listed_once_in_order() {
        let (disabled, unknown) = DisabledFeatures::parse(" F16 ,coop,, f16,Float-Atomics ");
        assert!(unknown.is_empty());
        assert_eq!(disabled.names, ["coop", "f16", "float-atomics"]);
        assert_eq!(
            disabled.features,
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
                | wgpu::Features::SHADER_F16
                | wgpu::Features::SHADER_FLOAT32_ATOMIC
        );
    }

    #[test]
    fn unknown_words_are_returned_and_the_rest_still_apply() {
        let (disabled, unknown) = DisabledFeatures::parse("subgroup,timestamps,tensor-cores");
        assert_eq!(unknown, ["subgroup", "tensor-cores"]);
        assert_eq!(disabled.names, ["timestamps"]);
        assert_eq!(disabled.features, wgpu::Features::TIMESTAMP_QUERY);
    }

    #[test]
    fn empty_value_disables_nothing() {
        let (disabled, unknown) = DisabledFeatures::parse(" , ");
        assert!(unknown.is_empty());
        assert_eq!(disabled, DisabledFeatures::default());
        assert!(disabled.features.is_empty());
    }
}
