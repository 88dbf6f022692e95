//! GPU features a test (or part of one) needs: whether the device has them, and where it does
//! not, a recorded skip that says why (the adapter lacks the feature, or
//! `ANYGRAD_DISABLE_FEATURES` turned it off), or a failure where the feature's
//! `ANYGRAD_REQUIRE_*` variable says it must be there.

use anygrad_core::gpu::GpuDevice;

use crate::skip::{skip_unless_required, Requirement};

/// Whether `gpu` has `requirement`'s feature; where it does not, skips `test` (see
/// [`missing_reason`]), or fails under the requirement's variable, and returns `false`.
/// `Requirement::Coop` asks for 16x16x16 f16 -> f32 cooperative matrices (tensor cores);
/// `Gpu` and `Data` are always there for an open device.
pub fn gpu_has_or_skip(gpu: &GpuDevice, requirement: Requirement, test: &str) -> bool {
    let info = gpu.info();
    let has = match requirement {
        Requirement::F16 => gpu.supports_f16(),
        Requirement::Coop => gpu.has_cooperative_f16_f32(),
        Requirement::FloatAtomics => info.float_atomics,
        Requirement::Timestamps => info.timestamp_query,
        Requirement::Gpu | Requirement::Data => true,
    };
    if !has {
        skip_unless_required(requirement, test, &missing_reason(gpu, requirement));
    }
    has
}

/// Why `gpu` lacks `requirement`'s feature, as skip lines say it: `<feature> turned off by
/// ANYGRAD_DISABLE_FEATURES` where that variable removed it, else `no <feature>: <what the
/// adapter lacks> (<adapter>)`. The allowlist of `.ci/run` matches these words.
pub fn missing_reason(gpu: &GpuDevice, requirement: Requirement) -> String {
    let (feature, lacking) = match requirement {
        Requirement::F16 => ("f16", "the adapter has no SHADER_F16"),
        Requirement::Coop => ("coop", "no 16x16x16 f16 -> f32 cooperative matrices"),
        Requirement::FloatAtomics => ("float-atomics", "the adapter adds no f32 atomically"),
        Requirement::Timestamps => ("timestamps", "the adapter has no timestamp queries"),
        Requirement::Gpu | Requirement::Data => return "nothing is missing".to_string(),
    };
    let info = gpu.info();
    if info.disabled_features.iter().any(|f| f == feature) {
        format!("{feature} turned off by ANYGRAD_DISABLE_FEATURES")
    } else {
        format!("no {feature}: {lacking} ({})", info.name)
    }
}
